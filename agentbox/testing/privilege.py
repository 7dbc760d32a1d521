"""Who a layer's processes ran as, observed rather than assumed, for each evidence record's run_info.

The sandbox layers are asked from inside: one `agent-box sandbox run` per test process reads
/proc/self/status (CapEff) and /proc/self/uid_map (an identity map of the whole uid range means the
initial user namespace). The harness layer runs on the host as the test run itself, so its own
status is the observation.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from functools import lru_cache

from agentbox.prove.evidence import Privilege

__all__ = ["observed", "read_status"]

_INIT_USERNS = "0 0 4294967295"


def read_status(status: str, uid_map: str) -> tuple[str | None, bool]:
    """(CapEff, own user namespace) from the text of /proc/self/status and /proc/self/uid_map."""
    caps = next((line.split(":", 1)[1].strip() for line in status.splitlines() if line.startswith("CapEff:")), None)
    return caps, " ".join(uid_map.split()) != _INIT_USERNS


@lru_cache(maxsize=None)
def _inside_sandbox() -> tuple[str | None, bool | None]:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as root:
        profile = os.path.join(root, "profile.yaml")
        with open(profile, "w") as f:
            f.write("name: privilege-probe\nharness: codex\npermission_intent: {}\n")
        env = {**os.environ, "AGENTBOX_HOME": os.path.join(root, "home")}
        done = subprocess.run(
            [
                sys.executable,
                "-P",  # not the working folder first on the import path: it may be a run's workspace
                "-m",
                "agentbox.cli",
                "sandbox",
                "run",
                profile,
                "--cwd",
                root,
                "--",
                "sh",
                "-c",
                "cat /proc/self/status; echo @@; cat /proc/self/uid_map",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    if done.returncode != 0 or "@@" not in done.stdout:
        return None, None  # recorded as unobserved, never guessed
    status, uid_map = done.stdout.split("@@", 1)
    return read_status(status, uid_map)


def observed(layer: str) -> Privilege:
    """The privilege the processes of `layer` had in this test run."""
    userns: bool | None  # None: the sandbox layers' observation failed
    if layer == "harness":
        with open("/proc/self/status") as f, open("/proc/self/uid_map") as m:
            caps, userns = read_status(f.read(), m.read())
        return Privilege(uid=os.geteuid(), user_namespace=userns, capabilities=caps)
    caps, userns = _inside_sandbox()
    return Privilege(uid=os.geteuid(), user_namespace=userns, capabilities=caps)
