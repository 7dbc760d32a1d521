"""The suite that ships with the package: compile goldens, launch and ACP smokes, and the escape vectors.

`pytest --agentbox-suite` (and `--agentbox-canary`, and `agent-box prove`) collect it in any folder, with no
test files of the user's own: the plugin adds this folder to what pytest collects. The package's own unit
tests are not here: they live in the repository's `tests/` and never ship.
"""

from agentbox.prove.hermetic import SUITE_DIR

__all__ = ["SUITE_DIR"]
