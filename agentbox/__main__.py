"""`python -m agentbox` is `agent-box`, for environments where the console script is not on PATH."""

import sys

from .cli import main

sys.exit(main())
