"""The egress proxy's listening sockets, bound before (and apart from) the proxy that serves them.

Standard library only: a run binds every socket its sandbox will dial before the sandbox starts, so no path in
the relay folder is ever free for the sandbox to take and no connection is ever refused for being early; the
proxy (`proxy.EgressProxy`, whose policy model costs the pydantic import) may then start serving them while the
sandboxed command starts. A connection made before it serves waits in the listen backlog, then meets the policy
like any other. `agent-box acp` does that (the editor waits for the agent's `initialize` answer); the other
commands bind and serve in one step.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from agentbox.errors import SandboxError

__all__ = ["ProxyStartError", "Bound", "bind_unix", "bind_tcp"]

_BACKLOG = 512


class ProxyStartError(SandboxError):
    """The egress proxy cannot listen or cannot log: the run must not start."""


def bind_unix(path: str) -> socket.socket:
    if os.path.lexists(path):  # a live proxy, or anything else: never take over a path that is in use
        raise ProxyStartError(f"egress proxy socket {path} already exists; refusing to replace it")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o600)
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        hint = (
            "; a unix socket path has at most 107 bytes: point AGENTBOX_RUN_ROOT at a shorter folder under /tmp (the run folder "
            "lives there)"
            if len(os.fsencode(path)) > 107
            else ""
        )
        raise ProxyStartError(f"egress proxy cannot listen on {path}: {exc.strerror or exc}{hint}") from None
    return sock


def bind_tcp(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        raise ProxyStartError(f"egress proxy cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    return sock


@dataclass
class Bound:
    """Listening sockets made ahead of the proxy: unix ones by path, the model route's and the proxy's TCP ones.
    The proxy takes the ones it serves (`take_*`); `close` closes (and unlinks) whatever nobody took."""

    unix: dict[str, socket.socket] = field(default_factory=dict)
    model_tcp: socket.socket | None = None
    proxy_tcp: socket.socket | None = None

    @classmethod
    def bind(cls, unix_paths=(), model_tcp: bool = False, proxy_tcp: bool = False) -> "Bound":
        out = cls()
        try:
            for path in unix_paths:
                out.unix[path] = bind_unix(path)
            out.model_tcp = bind_tcp(0) if model_tcp else None
            out.proxy_tcp = bind_tcp(0) if proxy_tcp else None
        except BaseException:
            out.close()
            raise
        return out

    def port(self, which: str) -> int | None:
        sock = self.model_tcp if which == "model" else self.proxy_tcp
        return sock.getsockname()[1] if sock is not None else None

    def take_unix(self, path: str) -> socket.socket | None:
        return self.unix.pop(path, None)

    def take_tcp(self, which: str, port: int) -> socket.socket | None:
        """The pre-bound socket for the model route (`model`) or the proxy (`proxy`), when it fits `port` (0: any)."""
        attr = "model_tcp" if which == "model" else "proxy_tcp"
        sock = getattr(self, attr)
        if sock is None or port not in (0, sock.getsockname()[1]):
            return None
        setattr(self, attr, None)
        return sock

    def close(self) -> None:
        for path, sock in self.unix.items():
            sock.close()
            try:
                os.unlink(path)
            except OSError:
                pass
        self.unix.clear()
        for attr in ("model_tcp", "proxy_tcp"):
            sock = getattr(self, attr)
            if sock is not None:
                sock.close()
                setattr(self, attr, None)
