"""The egress proxy's lifecycle: listen on a unix socket (and, for tests and benchmarks, a loopback TCP
port), serve on an asyncio loop, stop cleanly with every open connection's decision logged.

Besides the proxy socket, a run's proxy serves fixed routes: a unix socket whose every connection is
carried to one endpoint the policy allows (an allowed loopback port of the host), and the model route
(a unix socket, or under a shared network a loopback TCP port): HTTP to the profile's model endpoint,
where the run's model credential is swapped in (`swap.py`). Every byte that leaves the sandbox passes
the policy and the decision log; the real credentials live only in this process's memory.

Sockets and the log are opened in the caller's thread before anything runs, so a proxy that cannot
start raises ProxyStartError from `start()` itself and the run it guards never begins (fail closed). A run
may bind the sockets earlier still (`listen.Bound`) and hand them to `start()`: see listen.py.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading

from agentbox.egress.decisions import DecisionLog
from agentbox.egress.handler import Handler, Limits
from agentbox.egress.listen import Bound, ProxyStartError, bind_tcp, bind_unix
from agentbox.egress.policy import EgressPolicy, Endpoint
from agentbox.egress.streams import READ_LIMIT
from agentbox.egress.swap import SwapTable

__all__ = ["EgressProxy", "ProxyServer", "ProxyStartError", "bind_unix", "bind_tcp", "open_log"]


def open_log(path: str) -> DecisionLog:
    try:
        return DecisionLog(path)
    except OSError as exc:
        raise ProxyStartError(f"egress proxy cannot write its decision log {path}: {exc.strerror or exc}") from None


class ProxyServer:
    """Serves pre-bound listening sockets on the running loop until `close()`."""

    def __init__(
        self,
        policy: EgressPolicy,
        log: DecisionLog,
        limits: Limits | None = None,
        swaps: SwapTable | None = None,
        upstream_ca: str | None = None,
        authority=None,
    ):
        self.handler = Handler(policy, log, limits or Limits(), swaps, upstream_ca, authority)
        self.log = log
        self._servers: list[asyncio.base_events.Server] = []
        self._unix_paths: list[str] = []

    async def start(
        self,
        listeners: list[socket.socket],
        routes: dict[socket.socket, Endpoint] | None = None,
        model: list[socket.socket] | tuple = (),
    ) -> None:
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

    def __init__(
        self,
        policy: EgressPolicy,
        log_path: str,
        socket_path: str | None = None,
        tcp_port: int | None = None,
        limits: Limits | None = None,
        routes: dict[str, Endpoint] | None = None,
        model_socket: str | None = None,
        model_tcp: bool = False,
        swaps: SwapTable | None = None,
        upstream_ca: str | None = None,
        authority=None,
    ):
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

    def start(self, bound: Bound | None = None) -> "EgressProxy":
        """Listen (on the sockets `bound` holds where it has them, binding the rest), open the log, serve. Sockets
        of `bound` this proxy does not serve are closed: whatever dialled them is refused."""
        listeners: list[socket.socket] = []
        routes: dict[socket.socket, Endpoint] = {}
        model: list[socket.socket] = []
        ahead = bound or Bound()

        def unix(path: str) -> socket.socket:
            return ahead.take_unix(path) or bind_unix(path)

        def tcp(which: str, port: int) -> socket.socket:
            return ahead.take_tcp(which, port) or bind_tcp(port)

        try:
            if self.socket_path is not None:
                listeners.append(unix(self.socket_path))
            for path, endpoint in self.routes.items():
                routes[unix(path)] = endpoint
            if self.model_socket is not None:
                model.append(unix(self.model_socket))
            if self.model_tcp:
                model.append(tcp("model", 0))
                self.model_address = model[-1].getsockname()
            if self._tcp_port is not None:
                listeners.append(tcp("proxy", self._tcp_port))
                self.tcp_address = listeners[-1].getsockname()
            log = open_log(self.log_path)
        except ProxyStartError:
            for sock in (*listeners, *routes, *model):
                if sock.family == socket.AF_UNIX:
                    os.unlink(sock.getsockname())
                sock.close()
            raise
        finally:
            ahead.close()
        self._server = ProxyServer(self.policy, log, self.limits, self.swaps, self.upstream_ca, self.authority)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="agentbox-egress", daemon=True)
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._server.start(listeners, routes, model), self._loop).result(
                timeout=10
            )
        except Exception as exc:
            self.stop()
            raise ProxyStartError(f"egress proxy did not start serving: {exc!r}") from exc
        return self

    def _run(self) -> None:
        # this thread's own loop: stop() may have dropped (or a new start() replaced) self._loop by the time it ends
        loop = self._loop
        assert loop is not None  # set by start() before the thread
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def watch(self, on_death) -> threading.Thread:
        """Call `on_death(None)` from a daemon thread if the proxy's loop ends before `stop()` (as ProxyProcess.watch)."""

        def wait() -> None:
            assert self._thread is not None  # watch() follows start()
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
        assert self._thread is not None and self._server is not None  # set with _loop by start()
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
