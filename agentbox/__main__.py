"""`python -m agentbox` is `agent-box`, for environments where the console script is not on PATH."""

import sys

from agentbox.hot import leave_working_folder_off_path

leave_working_folder_off_path()  # before anything else is imported: the working folder may be a run's workspace

from agentbox.cli import main  # noqa: E402

sys.exit(main())
