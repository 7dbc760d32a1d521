"""`python -m agentbox.cli` is `agent-box`: how the suite and its helpers start the command line they test."""

import sys

from agentbox.cli import main

sys.exit(main())
