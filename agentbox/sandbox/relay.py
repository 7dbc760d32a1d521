"""Host side of the model relay: a unix socket whose connections are carried to host loopback.

With `--unshare-net` the harness cannot reach the host's loopback; the scripted model (or any
loopback model endpoint) is reached only through this socket, so "network none" stays true for
everything else in the sandbox.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading

from .inner_relay import pump  # the same byte pump runs on both sides of the socket

__all__ = ["HostRelay", "inner_relay_argv"]

_INNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inner_relay.py")


class HostRelay:
    """Listens on `socket_path`; every connection is joined to TCP `host:port`."""

    def __init__(self, socket_path: str, host: str, port: int):
        self.socket_path, self.target = socket_path, (host, port)
        self._listener: socket.socket | None = None
        self.connections = 0

    def start(self) -> "HostRelay":
        os.makedirs(os.path.dirname(self.socket_path), exist_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.socket_path)
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def _serve(self) -> None:
        assert self._listener is not None
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                conn.close()
                continue
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=pump, args=(a, b), daemon=True).start()

    def stop(self) -> None:
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None

    def __enter__(self) -> "HostRelay":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def inner_relay_argv(run_dir: str, port: int, python: str) -> list[str]:
    """Copy the inner relay into the run folder and return the argv prefix that starts it in the sandbox."""
    dest = os.path.join(run_dir, "relay")
    os.makedirs(dest, exist_ok=True)
    shutil.copy(_INNER, os.path.join(dest, "inner_relay.py"))
    return [python, "-I", "/tmp/agentbox/relay/inner_relay.py", str(port), "/tmp/agentbox/relay/model.sock", "--"]
