"""Agent-Box: one permission intent, compiled into every coding-agent harness and proven by tests."""

import os
import sys

__version__ = "0.1.0"
__all__ = ["__version__"]


def _run_as_module() -> bool:
    """Whether this process is `python -m agentbox...` and Python is still finding that module (argv[0] reads
    "-m" only then), not `python -m another` that imports this package."""
    if sys.argv[:1] != ["-m"]:
        return False
    argv = sys.orig_argv
    at = argv.index("-m") if "-m" in argv else -1
    name = argv[at + 1] if 0 <= at < len(argv) - 1 else ""
    return name == "agentbox" or name.startswith("agentbox.")


if _run_as_module():
    # the working folder is first on the import path, and it may be a run's workspace, where a `_sha256.py` or
    # `json.py` the run left would be what this process imports next, on the host. It goes before anything else is
    # imported; this package's own modules are found through the package, not the path.
    try:
        _here = os.getcwd()
    except OSError:  # a working folder removed since: nothing of it can be imported either
        _here = ""
    if sys.path and sys.path[0] in ("", _here):
        del sys.path[0]
