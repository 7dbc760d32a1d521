"""The egress proxy's lifecycle: listen on a unix socket (and, for tests and benchmarks, a loopback TCP
port), serve on an asyncio loop, stop cleanly with every open connection's decision logged.

Besides the proxy socket, a run's proxy serves fixed routes: a unix socket whose every connection is
carried to one endpoint the policy allows (an allowed loopback port of the host), and the model route
(a unix socket, or under a shared network a loopback TCP port): HTTP to the profile's model endpoint,
where the run's model credential is swapped in (`swap.py`). Every byte that leaves the sandbox passes
the policy and the decision log; the real credentials live only in this process's memory.

Sockets and the log are opened in the caller's thread before anything runs, so a proxy that cannot
start raises ProxyStartError from `start()` itself and the run it guards never begins (fail closed).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading

from ..errors import SandboxError
from .decisions import DecisionLog
from .handler import Handler, Limits
from .policy import EgressPolicy, Endpoint
from .streams import READ_LIMIT
from .swap import SwapTable

__all__ = ["EgressProxy", "ProxyServer", "ProxyStartError", "bind_unix", "bind_tcp", "open_log"]

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
        hint = ("; a unix socket path has at most 107 bytes: point TMPDIR at a shorter folder (the run folder "
                "lives there)" if len(os.fsencode(path)) > 107 else "")
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


def open_log(path: str) -> DecisionLog:
    try:
        return DecisionLog(path)
    except OSError as exc:
        raise ProxyStartError(f"egress proxy cannot write its decision log {path}: {exc.strerror or exc}") from None


class ProxyServer:
    """Serves pre-bound listening sockets on the running loop until `close()`."""

    def __init__(self, policy: EgressPolicy, log: DecisionLog, limits: Limits | None = None,
                 swaps: SwapTable | None = None, upstream_ca: str | None = None, authority=None):
        self.handler = Handler(policy, log, limits or Limits(), swaps, upstream_ca, authority)
        self.log = log
        self._servers: list[asyncio.base_events.Server] = []
        self._unix_paths: list[str] = []

    async def start(self, listeners: list[socket.socket], routes: dict[socket.socket, Endpoint] | None = None,
                    model: list[socket.socket] | tuple = ()) -> None:
        """Serve the proxy on `listeners`, each fixed route's unix socket to its endpoint, and the model route on
        the `model` sockets (to the policy's model endpoint)."""
        served = [(sock, self.handler) for sock in listeners]
        served += [(sock, self.handler.route(endpoint)) for sock, endpoint in (routes or {}).items()]
        policy = self.handler.policy
        if model:
            if policy.model_endpoint is None:
                raise ProxyStartError("a model route needs a model endpoint in the policy")
            served += [(sock, self.handler.model_route(policy.model_endpoint, policy.model_tls)) for sock in model]
        for sock, callback in served:
            if sock.family == socket.AF_UNIX:
                self._unix_paths.append(sock.getsockname())
                server = await asyncio.start_unix_server(callback, sock=sock, limit=READ_LIMIT)
            else:
                server = await asyncio.start_server(callback, sock=sock, limit=READ_LIMIT)
            self._servers.append(server)

    async def close(self, grace: float = 5.0) -> None:
        for server in self._servers:
            server.close()
        self.handler.abort_all()
        pending = list(self.handler.live)
        if pending:
            await asyncio.wait(pending, timeout=grace)
        self.log.close()
        for path in self._unix_paths:
            try:
                os.unlink(path)
            except OSError:
                pass


class EgressProxy:
    """The proxy in this process, on its own event loop in a daemon thread.

    `routes` maps unix socket paths to fixed endpoints (see above). `python -m agentbox.egress serve`
    runs the same server as a separate process (see process.py).
    """

    def __init__(self, policy: EgressPolicy, log_path: str, socket_path: str | None = None,
                 tcp_port: int | None = None, limits: Limits | None = None, routes: dict[str, Endpoint] | None = None,
                 model_socket: str | None = None, model_tcp: bool = False, swaps: SwapTable | None = None,
                 upstream_ca: str | None = None, authority=None):
        if socket_path is None and tcp_port is None and not routes and not model_socket and not model_tcp:
            raise ValueError("an egress proxy needs a socket path, a TCP port or a route")
        self.policy, self.log_path, self.socket_path, self.limits = policy, log_path, socket_path, limits
        self.routes = dict(routes or {})
        self.model_socket, self.model_tcp = model_socket, model_tcp
        self.swaps, self.upstream_ca, self.authority = swaps, upstream_ca, authority
        self._tcp_port = tcp_port
        self.tcp_address: tuple[str, int] | None = None
        self.model_address: tuple[str, int] | None = None  # the model route's loopback TCP port, with model_tcp
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: ProxyServer | None = None
        self._stopping = False

    @property
    def proxy_url(self) -> str:
        if self.tcp_address is None:
            raise RuntimeError("this proxy has no TCP port")
        return f"http://{self.tcp_address[0]}:{self.tcp_address[1]}"

    def start(self) -> "EgressProxy":
        listeners: list[socket.socket] = []
        routes: dict[socket.socket, Endpoint] = {}
        model: list[socket.socket] = []
        try:
            if self.socket_path is not None:
                listeners.append(bind_unix(self.socket_path))
            for path, endpoint in self.routes.items():
                routes[bind_unix(path)] = endpoint
            if self.model_socket is not None:
                model.append(bind_unix(self.model_socket))
            if self.model_tcp:
                model.append(bind_tcp(0))
                self.model_address = model[-1].getsockname()
            if self._tcp_port is not None:
                listeners.append(bind_tcp(self._tcp_port))
                self.tcp_address = listeners[-1].getsockname()
            log = open_log(self.log_path)
        except ProxyStartError:
            for sock in (*listeners, *routes, *model):
                if sock.family == socket.AF_UNIX:
                    os.unlink(sock.getsockname())
                sock.close()
            raise
        self._server = ProxyServer(self.policy, log, self.limits, self.swaps, self.upstream_ca, self.authority)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="agentbox-egress", daemon=True)
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._server.start(listeners, routes, model), self._loop).result(timeout=10)
        except Exception as exc:
            self.stop()
            raise ProxyStartError(f"egress proxy did not start serving: {exc!r}") from exc
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def watch(self, on_death) -> threading.Thread:
        """Call `on_death(None)` from a daemon thread if the proxy's loop ends before `stop()` (as ProxyProcess.watch)."""
        def wait() -> None:
            self._thread.join()
            if not self._stopping:
                on_death(None)
        thread = threading.Thread(target=wait, name="agentbox-egress-watch", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stopping = True
        if self._loop is None:
            return
        try:
            if self._thread.is_alive():
                asyncio.run_coroutine_threadsafe(self._server.close(), self._loop).result(timeout=10)
        finally:
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop = None

    def __enter__(self) -> "EgressProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
