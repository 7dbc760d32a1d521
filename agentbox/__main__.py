"""`python -m agentbox` is `agent-box`, for environments where the console script is not on PATH."""

import sys

from agentbox.cli import main  # the working folder is off the import path by now (agentbox/__init__.py)

sys.exit(main())
