"""`python -m agentbox` is `agent-box`, for environments where the console script is not on PATH."""

import sys

from agentbox.cli import main

sys.exit(main())
