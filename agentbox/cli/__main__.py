"""`python -m agentbox.cli` is `agent-box`: how the suite and its helpers start the command line they test."""

import sys

from agentbox.cli import main  # the working folder is off the import path by now (agentbox/__init__.py)

sys.exit(main())
