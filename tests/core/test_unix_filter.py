"""The unix-socket filter refuses new unix sockets and nothing a runtime needs to start its children."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys

import pytest

from agentbox.sandbox import unix_filter

pytestmark = pytest.mark.skipif(not unix_filter.supported(), reason="no unix-socket filter for this architecture")

PROBE = r"""
import socket, subprocess, sys
{setup}
a, b = socket.socketpair()
socket.socket(socket.AF_INET).close()
try:
    socket.socket(socket.AF_UNIX)
    print("unix allowed")
except PermissionError:
    print("unix refused")
child = subprocess.run([sys.executable, "-c", "import socket; socket.socket(socket.AF_UNIX)"], capture_output=True)
print("child refused" if child.returncode else "child allowed")
"""


def test_a_filtered_process_and_its_children_cannot_open_a_unix_socket_but_keep_socketpair_and_inet(tmp_path):
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "host.sock"))
    listener.listen(1)
    setup = (
        f"sys.path.insert(0, {str(unix_filter.__file__.rsplit('/agentbox/', 1)[0])!r})\n"
        "from agentbox.sandbox import unix_filter; unix_filter.apply()"
    )
    done = subprocess.run([sys.executable, "-c", PROBE.format(setup=setup)], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["unix", "refused", "child", "refused"], done.stderr
    listener.setblocking(False)
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing connected


def test_without_the_filter_the_same_probe_opens_a_unix_socket():
    done = subprocess.run([sys.executable, "-c", PROBE.format(setup="")], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["unix", "allowed", "child", "allowed"], done.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")
def test_bwrap_installs_the_filter_from_a_descriptor():
    fd = unix_filter.program_fd()
    try:
        done = subprocess.run(
            [
                "bwrap",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--unshare-net",
                "--seccomp",
                str(fd),
                "--",
                sys.executable,
                "-c",
                PROBE.format(setup=""),
            ],
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        import os

        os.close(fd)
    assert done.stdout.split() == ["unix", "refused", "child", "refused"], done.stderr
