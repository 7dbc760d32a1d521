"""The controls' weakened sandboxes (agentbox.testing.weakened) start on any machine, a fresh one included: a control
that cannot start is an error in the escape suite, never the side effect it exists to show."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

needs_root_and_bwrap = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None or shutil.which("unshare") is None,
    reason="needs root (a mount namespace of its own) and bubblewrap",
)


@needs_root_and_bwrap
def test_the_host_tmp_control_starts_where_the_host_has_no_tmp_agentbox_yet():
    """Seen on a fresh machine: with the private /tmp removed, bubblewrap could not make /tmp/agentbox on the
    read-only host root ("Can't mkdir /tmp/agentbox: Read-only file system") until some other run had made it.
    Here the host's /tmp is a fresh, empty tmpfs, in a mount namespace of the test's own."""
    root = Path(f"/var/tmp/agentbox-weakened-test-{os.getpid()}")  # not under /tmp, which the test replaces
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    try:
        profile = root / "p.yaml"
        profile.write_text("name: p\nharness: codex\npermission_intent:\n  command_network: {access: unrestricted}\n")
        env = {**os.environ, "AGENTBOX_HOME": str(root / "abhome"), "HOME": str(root)}
        control = [
            sys.executable,
            "-m",
            "agentbox.testing.weakened",
            "--weaken",
            "host_tmp",
            str(profile),
            "--cwd",
            str(ws),
            "--",
            "sh",
            "-c",
            "echo seen > /tmp/agentbox-host-tmp-probe",
        ]
        script = 'mount -t tmpfs tmpfs /tmp && "$@" && cat /tmp/agentbox-host-tmp-probe'
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *control],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "seen"  # the control wrote the host's own /tmp, as it exists to
    finally:
        shutil.rmtree(root, ignore_errors=True)
