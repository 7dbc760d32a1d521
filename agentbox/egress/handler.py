"""One client connection of the proxy (read its request head, decide, then tunnel or forward), or of a
fixed route (decide its one endpoint, then splice).

Order of refusals: a head that does not parse (400, 408, 431), a target the policy refuses or a
Host that disagrees with it (403), then a name that does not resolve or an upstream that does not
answer (502). A CONNECT gets its 200 once the policy allows the target and dials only after the
tunnel's first message passed its checks, so a late refusal there just closes the tunnel. Every
connection that sent a request ends in exactly one decision-log line.

While the run has a secret, what comes back from an upstream passes a Scrubber (scrub.py) whenever the
proxy can read it: a real value on its way back into the sandbox closes the connection, and its line
says `secret_in_response` and names the variable (or, for a compressed body from where a secret is
bound, `unreadable_response`).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections import deque

from pydantic import BaseModel, ConfigDict, Field

from agentbox.egress import hostnames
from agentbox.egress.bodies import copy_body
from agentbox.egress.decisions import DecisionLog, Exchange
from agentbox.egress.dial import Refused, connect, resolve
from agentbox.egress.listeners import foreign_listener
from agentbox.egress.http1 import (
    BadRequest,
    forward_head,
    framing,
    host_matches,
    parse_absolute,
    parse_request,
    render_request,
    response,
    split_authority,
)
from agentbox.egress.policy import EgressPolicy, Endpoint
from agentbox.egress.scrub import Forms, Refusal, Scrubber, scrubbed_pump
from agentbox.egress.streams import READ_LIMIT, Buffered, HeadTooLarge, Idle, half_close, pump
from agentbox.egress.swap import Replay, SwapTable
from agentbox.egress.tunnel import check_request, client_to_upstream, forward_requests, swapped_head

__all__ = ["Limits", "Handler"]


class Limits(BaseModel):
    """Bounds on what one client can make the proxy hold or wait for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    head_bytes: int = Field(default=32768, ge=1024)  # a request head (and each chunk-size or trailer line)
    max_headers: int = Field(default=100, ge=1)
    head_timeout: float = Field(default=30.0, gt=0)  # from connect to a complete request head
    connect_timeout: float = Field(default=10.0, gt=0)  # resolving and dialling the upstream, all addresses
    idle_timeout: float = Field(default=300.0, gt=0)  # no byte either way: both sides are closed
    max_connections: int = Field(default=1024, ge=1)


class Handler:
    def __init__(
        self,
        policy: EgressPolicy,
        log: DecisionLog,
        limits: Limits,
        swaps: SwapTable | None = None,
        upstream_ca: str | None = None,
        authority=None,
    ):
        self.policy, self.log, self.limits = policy, log, limits
        self.swaps = swaps or SwapTable()
        self.forms = Forms(self.swaps.secrets())  # what must never come back (made once: it costs a few ms)
        self.authority = authority  # the run's CA (run_ca.Authority): TLS to a bound host is terminated here
        self.upstream_ca = upstream_ca  # a CA bundle for upstream TLS instead of the host's (a testing aid)
        self._client_tls: ssl.SSLContext | None = None
        self.live: dict[asyncio.Task, list[asyncio.StreamWriter]] = {}

    def client_tls(self) -> ssl.SSLContext:
        """How the proxy itself speaks TLS to an upstream: verified against the host's trust store."""
        if self._client_tls is None:
            self._client_tls = ssl.create_default_context(cafile=self.upstream_ca)
        return self._client_tls

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A client of the proxy itself: HTTP requests and CONNECT."""
        await self._serve(reader, writer, self._exchange)

    def route(self, endpoint: Endpoint):
        """A connection callback that carries every byte of a connection to `endpoint` (a fixed route, e.g. the
        model socket), once the policy allows it; decided and logged like any other exchange. It stays a splice
        (the endpoint is fixed, so no byte of it can name another host) and swaps nothing in; its way back is
        still searched for the run's secrets, as a stream that is not HTTP."""

        async def body(rd: Buffered, writer, exchange: Exchange, writers: list) -> bool:
            # Decided once the client has spoken (HTTP speaks first): a refusal then answers a request that
            # was read, instead of resetting a connection whose bytes are still unread.
            if not await rd.fill():
                return False
            exchange.method = "ROUTE"
            decision = self._decide(exchange, endpoint.host, endpoint.port)
            up_reader, upstream = await self._dial(exchange, writers, decision, endpoint.port)
            await self._splice(rd, writer, up_reader, upstream, exchange, writers)
            return True

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(reader, writer, body)

        return serve

    def model_route(self, endpoint: Endpoint, tls: bool = False):
        """A connection callback for the model route: every request is read, its Host set to the model endpoint,
        the run's model credential swapped in (a placeholder of another credential is refused), logged one line
        per request, and forwarded over one upstream connection (TLS when the endpoint is https), so the
        connection's keep-alive is the upstream's. Responses are carried back as they come (streams)."""
        authority = _authority(endpoint, 443 if tls else 80)

        async def body(rd: Buffered, writer, exchange: Exchange, writers: list) -> bool:
            if not await rd.fill():
                return False
            exchange.method = "ROUTE"
            decision = self._decide(exchange, endpoint.host, endpoint.port)
            idle = Idle(self.limits.idle_timeout, lambda: _abort(writers))
            down: list[asyncio.Task] = []
            methods: deque[str] = deque()  # of the requests forwarded, for the scrub of the responses

            async def dial() -> asyncio.StreamWriter:
                up_reader, upstream = await self._dial(
                    exchange, writers, decision, endpoint.port, endpoint.host if tls else None
                )
                down.append(
                    asyncio.create_task(
                        self._down(up_reader, writer, idle, exchange, writers, methods=methods, bound=True)
                    )
                )
                return upstream

            def edit(head, raw: bytes) -> bytes:
                line = {
                    "client": exchange.client,
                    "route": "model",
                    "method": head.method,
                    "host": endpoint.host,
                    "port": endpoint.port,
                    "target": head.target[:200],
                }
                try:
                    if not head.target.startswith("/"):
                        raise BadRequest(f"the model route takes origin-form targets, not {head.target[:80]!r}")
                    new, swapped = self.swaps.apply(head, None, None, model_route=True)
                except (Replay, BadRequest) as exc:
                    reason = "credential_replay" if isinstance(exc, Replay) else "bad_request"
                    self.log.write_request({**line, "allowed": False, "reason": reason, "detail": str(exc)})
                    raise Refused(403 if reason == "credential_replay" else 400, reason, str(exc)) from None
                exchange.credentials += swapped
                # which headers carried it: names only, so the log says how the harness sends its key
                carried = sorted({k.lower() for k, v in set(new.headers) - set(head.headers)} - {"accept-encoding"})
                self.log.write_request(
                    {
                        **line,
                        "allowed": True,
                        "reason": "model_route",
                        "credentials": list(swapped),
                        **({"headers": carried} if carried else {}),
                    }
                )
                return render_request(
                    new, [("Host", authority), *((k, v) for k, v in new.headers if k.lower() != "host")]
                )

            try:
                upstream = await forward_requests(rd, dial, edit, idle, exchange.up, self.limits.head_bytes, methods)
                if upstream is not None:
                    half_close(upstream)
                if down:
                    await down[0]
            finally:
                idle.cancel()
                for task in down:
                    task.cancel()
            return True

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(reader, writer, body)

        return serve

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body) -> None:
        task = asyncio.current_task()
        assert task is not None  # a connection callback runs in a task of its own
        writers = self.live[task] = [writer]
        exchange = Exchange(_client(writer))
        logged: Exchange | None = exchange
        try:
            if len(self.live) > self.limits.max_connections:
                raise Refused(503, "too_many_connections", f"more than {self.limits.max_connections} open")
            if not await body(Buffered(reader), writer, exchange, writers):
                logged = None  # connected and closed without a request: nothing was decided
        except Refused as refused:
            exchange.decide(False, refused.reason, refused.detail)
            if refused.status and not exchange.answered and not writer.is_closing():
                writer.write(response(refused.status, f"agentbox egress: {refused.reason} {refused.detail}".strip()))
        except Exception as exc:  # never let one connection's surprise pass unlogged
            exchange.decide(False, "proxy_error", repr(exc)[:300])
        finally:
            del self.live[task]
            for w in writers:
                w.close()
            if logged is not None:
                self.log.write(logged)

    def abort_all(self) -> None:
        """Stopping: cut every open connection so each handler finishes and logs its line."""
        for writers in self.live.values():
            for w in writers:
                w.transport.abort()

    async def _exchange(self, rd: Buffered, writer, exchange: Exchange, writers: list) -> bool:
        limits = self.limits
        try:
            async with asyncio.timeout(limits.head_timeout):
                raw = await rd.readuntil(b"\r\n\r\n", limits.head_bytes)
        except TimeoutError:
            raise Refused(408, "head_timeout", f"no complete request head within {limits.head_timeout:g} s") from None
        except HeadTooLarge:
            raise Refused(431, "head_too_large", f"request head over {limits.head_bytes} bytes") from None
        except (asyncio.IncompleteReadError, ConnectionError):
            raise Refused(0, "incomplete_head", "client closed before the end of its request head") from None
        if not raw:
            return False
        try:
            head = parse_request(raw, limits.max_headers)
            exchange.method = head.method
            if head.method == "CONNECT":
                host, port = split_authority(head.target, None)
                await self._tunnel(rd, writer, exchange, writers, host, port)
            else:
                await self._forward(rd, writer, exchange, writers, head)
        except BadRequest as exc:
            raise Refused(400, "bad_request", str(exc)) from None
        return True

    def _decide(self, exchange: Exchange, host: str, port: int):
        """The policy's decision on host:port; raises Refused unless it is allowed and can be logged."""
        decision = self.policy.decide(host, port)
        exchange.host, exchange.port = decision.host or host, port
        if not decision.allowed:
            raise Refused(403, decision.reason, f"{host}:{port}")
        if self.log.error is not None:  # an exchange that cannot be recorded is not allowed (fail closed)
            raise Refused(503, "decision_log_unwritable", str(self.log.error))
        return decision

    async def _dial(self, exchange: Exchange, writers: list, decision, port: int, tls_host: str | None = None):
        """Resolve and connect an allowed host:port (over TLS to `tls_host`, verified, when given); the upstream's
        (reader, writer)."""
        addresses = await resolve(self.policy, decision.host, port)
        tls = (self.client_tls(), tls_host) if tls_host is not None else None
        reader, writer, exchange.address = await connect(addresses, port, self.limits.connect_timeout, READ_LIMIT, tls)
        writers.append(writer)
        if self.policy.shared_loopback and hostnames.is_loopback_name(exchange.address):
            # before a byte (the real credential among them) goes to a port the run could have taken first
            squatted = await asyncio.to_thread(foreign_listener, writer.get_extra_info("socket"))
            if squatted:
                raise Refused(403, "loopback_listener_not_host", squatted)
        exchange.decide(True, decision.reason)
        return reader, writer

    def _down(
        self,
        up_reader,
        client,
        idle: Idle,
        exchange: Exchange,
        writers: list,
        readable: bool = True,
        methods: deque | None = None,
        bound: bool = False,
    ):
        """The upstream -> client copy of an exchange. While the run has a secret, what the proxy can read
        (`readable`: not a TLS session it only splices) goes through a Scrubber: a real value seen there
        closes both sides at once, and the exchange's line records the refusal, naming the variable.
        `methods`: those of the requests forwarded, as they go (None: a stream that is not HTTP); `bound`: the
        upstream is where a secret is bound (a body coded past reading is refused too)."""
        if not self.forms or not readable:
            return pump(up_reader, client, idle, exchange.down)

        def refused(refusal: Refusal) -> None:
            exchange.refuse_for_good(
                refusal.reason,
                f"the response from {exchange.host}:{exchange.port} was cut before it reached the client: {refusal}",
            )
            _abort(writers)

        return scrubbed_pump(up_reader, client, idle, exchange.down, Scrubber(self.forms, methods, bound), refused)

    async def _splice(self, rd: Buffered, client, up_reader, upstream, exchange: Exchange, writers: list) -> None:
        idle = Idle(self.limits.idle_timeout, lambda: _abort(writers))
        down = asyncio.create_task(self._down(up_reader, client, idle, exchange, writers))
        try:
            await pump(rd, upstream, idle, exchange.up)
            await down
        finally:
            idle.cancel()
            down.cancel()

    async def _tunnel(self, rd: Buffered, client, exchange: Exchange, writers: list, host: str, port: int) -> None:
        """The upstream is dialled only once the client's first message passed the tunnel's checks, so a
        tunnel aimed at another host than its target never reaches even the target."""
        decision = self._decide(exchange, host, port)
        assert exchange.host is not None  # set by _decide
        client.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        exchange.answered = True
        if self.authority is not None and self.swaps.is_bound(exchange.host, port):
            await self._terminated(rd, client, exchange, writers, decision, port)
            return
        idle = Idle(self.limits.idle_timeout, lambda: _abort(writers))
        down: list[asyncio.Task] = []
        methods: deque[str] = deque()

        async def dial(readable: bool) -> asyncio.StreamWriter:
            assert exchange.host is not None  # set by _decide, above
            up_reader, upstream = await self._dial(exchange, writers, decision, port)
            down.append(
                asyncio.create_task(
                    self._down(
                        up_reader,
                        client,
                        idle,
                        exchange,
                        writers,
                        readable,
                        methods,
                        self.swaps.is_bound(exchange.host, port),
                    )
                )
            )
            return upstream

        try:
            await client_to_upstream(
                rd,
                dial,
                exchange.host,
                port,
                idle,
                exchange.up,
                self.limits.head_bytes,
                self.swaps,
                exchange.credentials.extend,
                methods,
            )
            if down:
                await down[0]
            elif exchange.reason == "incomplete":
                exchange.detail = "the client sent nothing the tunnel could check, so nothing was dialled"
        finally:
            idle.cancel()
            for task in down:
                task.cancel()

    async def _terminated(self, rd: Buffered, client, exchange: Exchange, writers: list, decision, port: int) -> None:
        """A tunnel to a host a secret is bound to: TLS ends here (the run's CA vouches for the host, and only for
        the bound hosts), each request is checked against the target, the secret swapped into its header, and
        forwarded over verified TLS to the real host."""
        host = exchange.host
        assert host is not None  # set by _tunnel's _decide
        if rd.buf:
            raise Refused(0, "bad_client_hello", "bytes arrived before the tunnel's TLS handshake could start")
        try:
            async with asyncio.timeout(self.limits.head_timeout):
                await client.start_tls(self.authority.server_context(host))
        except (ssl.SSLError, TimeoutError, ConnectionError) as exc:
            raise Refused(0, "tls_handshake_failed", f"with the client, for {host}: {exc!r}"[:300]) from None
        idle = Idle(self.limits.idle_timeout, lambda: _abort(writers))
        down: list[asyncio.Task] = []
        methods: deque[str] = deque()

        async def dial() -> asyncio.StreamWriter:
            up_reader, upstream = await self._dial(exchange, writers, decision, port, host)
            exchange.detail = "TLS terminated to swap a bound secret in"
            down.append(
                asyncio.create_task(self._down(up_reader, client, idle, exchange, writers, methods=methods, bound=True))
            )
            return upstream

        def edit(head, raw: bytes) -> bytes:
            check_request(head, host, port, default_port=443)
            return swapped_head(head, raw, self.swaps, host, port, exchange.credentials.extend)

        try:
            await forward_requests(rd, dial, edit, idle, exchange.up, self.limits.head_bytes, methods)
            if down:
                await down[0]
        except Refused as refused:
            if refused.status and not client.is_closing():  # nothing was forwarded yet: the client gets the answer
                client.write(response(refused.status, f"agentbox egress: {refused.reason} {refused.detail}".strip()))
            raise
        finally:
            idle.cancel()
            for task in down:
                task.cancel()

    async def _forward(self, rd: Buffered, client, exchange: Exchange, writers: list, head) -> None:
        if head.target[:8].lower() == "https://":
            raise BadRequest("an https:// URL goes through CONNECT, not a plain request")
        host, port, path = parse_absolute(head.target)
        exchange.host, exchange.port = host, port
        framing(head)  # a body the proxy could not delimit is refused before anything is dialled
        decision = self._decide(exchange, host, port)
        if not host_matches(head.host(), host, port):
            raise Refused(403, "host_mismatch", f"Host {head.host()!r} for a request to {host}:{port}")
        try:
            head, swapped = self.swaps.apply(head, host, port)
        except Replay as exc:
            raise Refused(403, "credential_replay", str(exc)) from None
        exchange.credentials += swapped
        up_reader, upstream = await self._dial(exchange, writers, decision, port)
        first = forward_head(head, host, port, path)
        upstream.write(first)
        exchange.up.n += len(first)
        idle = Idle(self.limits.idle_timeout, lambda: _abort(writers))
        down = asyncio.create_task(
            self._down(
                up_reader,
                client,
                idle,
                exchange,
                writers,
                methods=deque([head.method]),
                bound=self.swaps.binds(host, port),
            )
        )
        try:
            try:
                await copy_body(rd, upstream, head, idle, exchange.up, self.limits.head_bytes)
            except BadRequest as exc:  # the response may be under way: no 400 in the middle of it
                raise Refused(0, "bad_request", str(exc)) from None
            await down
        finally:
            idle.cancel()
            down.cancel()


def _authority(endpoint: Endpoint, default_port: int) -> str:
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    return host if endpoint.port == default_port else f"{host}:{endpoint.port}"


def _abort(writers: list) -> None:
    for w in writers:
        w.transport.abort()


def _client(writer: asyncio.StreamWriter) -> str:
    """`host:port` of a TCP client; `unix:pid=N` (SO_PEERCRED) for one on the unix socket."""
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple):
        return f"{peer[0]}:{peer[1]}"
    sock = writer.get_extra_info("socket")
    try:
        pid, _, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        return f"unix:pid={pid}"
    except OSError:
        return "unix"
