"""The packaged suite run apart from the project it is started in.

The suite's evidence says what a harness build does; nothing of the folder pytest was started in may take part
in it. In process, a project's `conftest.py`, its ini's `addopts` (`-p module`), `PYTEST_ADDOPTS`, `PYTHONPATH`
or a module beside it shadowing one the suite imports (`python -m pytest` puts the folder first on `sys.path`)
could change what a vector does or how it is recorded, and the records would still say "observed". So
`--agentbox-suite` and `--agentbox-canary` re-run pytest in a child that loads only:

- the suite's folder (`--rootdir` and `--confcutdir` there, an empty ini): no conftest or ini of the project;
- `python -I`, with `PYTHONSAFEPATH` for xdist's workers: no folder prepended to `sys.path`, no `PYTHON*`
  variables (`PYTHONPATH` and the pytest ones are dropped from the environment too);
- no autoloaded plugin (`PYTEST_DISABLE_PLUGIN_AUTOLOAD`): this plugin, xdist, and the reporters asked for.

`agent-box prove` runs the same child. The child knows itself by `CHILD` and does not re-run again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path
from typing import Sequence


# The suite that ships with the package: what the hermetic session collects, by path (it is never imported here:
# what users run does not load the suite's code)
SUITE_DIR = Path(__file__).resolve().parents[1] / "suite"

__all__ = ["CHILD", "argv", "environment", "run", "in_child"]

CHILD = "AGENTBOX_SUITE_CHILD"
_DROPPED = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONINSPECT",
)
# reporters loaded only when their option is given: (option prefix, modules)
_REPORTERS = (("--html", ("pytest_metadata.plugin", "pytest_html.plugin")), ("--alluredir", ("allure_pytest.plugin",)))


def in_child() -> bool:
    return os.environ.get(CHILD) == "1"


def _plugins(options: Sequence[str]) -> list[str]:
    out = ["-p", "agentbox.plugin"]
    if find_spec("xdist") is not None:
        out += ["-p", "xdist.plugin", "-p", "xdist.looponfail"]
    for prefix, modules in _REPORTERS:
        if any(o.startswith(prefix) for o in options) and all(find_spec(m.split(".")[0]) for m in modules):
            out += [w for m in modules for w in ("-p", m)]
    return out


def argv(options: Sequence[str], paths: Sequence[str], ini: Path) -> list[str]:
    """The child's command line: `paths` (inside the suite; the whole suite when empty) and the caller's
    `options`, with the isolation's own settings last, so that they win."""
    return [
        sys.executable,
        "-I",
        "-m",
        "pytest",
        *(paths or [str(SUITE_DIR)]),
        *options,
        *_plugins(options),
        "-c",
        str(ini),
        f"--rootdir={SUITE_DIR}",
        f"--confcutdir={SUITE_DIR}",
        "-p",
        "no:cacheprovider",
    ]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env.update({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONSAFEPATH": "1", CHILD: "1"})
    return env


def run(options: Sequence[str], paths: Sequence[str] = (), cwd: str | None = None, stdout=None) -> int:
    """Runs the suite in the child and returns pytest's exit status. `cwd`: where relative paths among the options
    are read from (the folder the user started in); nothing there is loaded."""
    with tempfile.TemporaryDirectory(prefix="agentbox-suite-") as tmp:
        ini = Path(tmp, "pytest.ini")
        ini.write_text("[pytest]\n")
        done = subprocess.run(argv(options, paths, ini), cwd=cwd or tmp, env=environment(), stdout=stdout)
    return done.returncode
