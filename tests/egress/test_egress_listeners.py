"""Who answers a loopback connection: the proxy sends to a host service of its own PID namespace, and refuses a
listener of another one (a sandbox's, on a shared network), whatever address or family it listens on."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys

import pytest

from agentbox.egress.listeners import _address, foreign_listener

LISTEN = """
import socket, sys
family, host, port = sys.argv[1:]
s = socket.socket(socket.AF_INET6 if family == "6" else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((host, int(port)))
s.listen(8)
print("listening", flush=True)
sys.stdin.read()
"""


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]


def _in_another_pid_namespace(family: str, host: str, port: int) -> subprocess.Popen:
    """A listener as a run on a shared network makes one: bubblewrap's own PID namespace, the host's network."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    argv = [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-pid",
        "--unshare-user",
        "--die-with-parent",
        sys.executable,
        "-c",
        LISTEN,
        family,
        host,
        str(port),
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "listening"
    return proc


def _dial(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def test_a_listener_of_this_pid_namespace_is_the_hosts():
    with socket.create_server(("127.0.0.1", 0)) as server:
        with _dial(server.getsockname()[1]) as client:
            assert foreign_listener(client) is None


@pytest.mark.parametrize("family,host", [("4", "127.0.0.1"), ("6", "::")], ids=["loopback", "ipv6-wildcard"])
def test_a_listener_of_another_pid_namespace_is_refused(family, host):
    port = _free_port()
    proc = _in_another_pid_namespace(family, host, port)
    try:
        with _dial(port) as client:
            reason = foreign_listener(client)
        assert reason is not None and f"127.0.0.1:{port}" in reason
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def test_a_port_shared_with_reuseport_is_refused_if_any_holder_is_a_sandboxs():
    port = _free_port()
    ours = socket.socket()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    ours.bind(("127.0.0.1", port))
    ours.listen(8)
    theirs = subprocess.Popen(
        [
            "bwrap",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-pid",
            "--unshare-user",
            "--die-with-parent",
            sys.executable,
            "-c",
            LISTEN.replace("s.bind(", "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\ns.bind("),
            "4",
            "127.0.0.1",
            str(port),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert theirs.stdout.readline().strip() == "listening"
        with _dial(port) as client:
            assert foreign_listener(client) is not None
    finally:
        ours.close()
        theirs.stdin.close()
        theirs.wait(timeout=10)


def test_proc_net_addresses_read_in_host_byte_order():
    assert _address("0100007F:270F") == ("127.0.0.1", 9999)
    assert _address("00000000000000000000000001000000:0050") == ("::1", 80)
    assert _address("0000000000000000FFFF00000100007F:0050") == ("127.0.0.1", 80)
