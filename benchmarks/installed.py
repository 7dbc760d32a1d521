"""Agent-Box as a user installs it, for the start-up benchmarks: a regular (not editable) install of this checkout
in a virtual environment of its own, with the bytecode pip compiles at install time.

An editable install times its import hook (about 24 ms here) and a checkout run under PYTHONDONTWRITEBYTECODE
compiles every module at every start: neither is what a user's `agent-box` costs.
"""

from __future__ import annotations

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_VENV = "/var/tmp/agentbox-bench-venv"


def regular_install(venv: str = DEFAULT_VENV) -> str:
    """The `agent-box` console script of a regular install of this checkout in `venv`. The venv and the package's
    dependencies are installed once; the package itself again at every call, so the code timed is the code
    checked out."""
    pip = os.path.join(venv, "bin", "pip")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # pip compiles the bytecode
    if not os.path.exists(pip) or not _current_pip(venv):
        subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
        # the pip a venv is made with (23.2 for Python 3.11) writes console scripts that import re (with enum,
        # ~7 ms a start); the pip a user installs with today (24.1 on, as uv and pipx's) does not
        subprocess.run([pip, "install", "-q", "--upgrade", "pip>=25"], check=True, env=env)
        subprocess.run([pip, "install", "-q", REPO], check=True, env=env)
    else:
        subprocess.run([pip, "install", "-q", "--no-deps", "--force-reinstall", REPO], check=True, env=env)
    return os.path.join(venv, "bin", "agent-box")


def _current_pip(venv: str) -> bool:
    script = os.path.join(venv, "bin", "agent-box")
    try:
        with open(script) as f:
            return "import re\n" not in f.read()
    except OSError:
        return False
