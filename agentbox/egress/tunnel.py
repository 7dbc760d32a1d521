"""A CONNECT tunnel after its 200: the first client bytes are checked against the target, then forwarded.

Rule: a tunnel carries only what the proxy can check, and refuses the rest. Two protocols are allowed:
- TLS: a well-formed ClientHello whose SNI names the CONNECT host; then the session is spliced (the
  proxy cannot read it). A ClientHello without SNI is refused: the server would answer it with its
  default host, which need not be the target.
- HTTP/1.x: every request of the tunnel (bodies are framed, so none hides in another's body) is parsed
  strictly (http1.py) and must carry a Host header naming the CONNECT host:port and, if absolute, name
  it in its target.
Anything else ("opaque": SSH, a form feed before `GET`, HTTP/2 with prior knowledge, whose requests name
their host in frames this proxy does not read) closes the tunnel, logged, before a byte of it goes
upstream. A mismatch does the same, and the upstream is dialled only after the first message passed: a
host that shares the target's address (virtual hosting) never sees even a connection. The price: a
protocol whose server speaks first cannot be tunnelled (nothing is dialled until the client sends), nor
can any protocol but these two.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Awaitable, Callable, Literal

from agentbox.egress.swap import Replay, SwapTable

from agentbox.egress import hostnames
from agentbox.egress.bodies import copy_body
from agentbox.egress.dial import Refused
from agentbox.egress.http1 import (
    NEVER_DROPPED,
    BadRequest,
    RequestHead,
    framing,
    host_matches,
    parse_request,
    render_request,
    split_authority,
)
from agentbox.egress.sniff import MAX_HELLO, BadHello, classify, client_hello_sni
from agentbox.egress.streams import HeadTooLarge, Idle, Buffered, Tally, half_close, pump

__all__ = ["client_to_upstream", "first_message", "forward_requests", "Edit", "check_request", "swapped_head"]

_SCHEME_PORTS = {"http": 80, "https": 443}


async def client_to_upstream(
    rd: Buffered,
    dial: TunnelDial,
    host: str,
    port: int,
    idle: Idle,
    tally: Tally,
    head_limit: int,
    swaps: SwapTable | None = None,
    on_swap=None,
    methods: deque | None = None,
) -> None:
    """The client -> upstream direction of a tunnel to host:port; raises Refused(0, ...) on a mismatch or a
    message the tunnel cannot check.

    `dial(readable)` opens the upstream; it is awaited once, when the first message has passed its check
    (`readable`: False for a TLS session the proxy cannot read, whose way back then has nothing to scan).
    `swaps`: the run's credentials, checked (and, for a bound host, swapped in) in every plaintext request.
    `methods`: see forward_requests.
    """
    while (step := first_message(bytes(rd.buf), host, head_limit)) == "more":
        if not await rd.fill():
            return  # the client ended before its first message was whole: nothing of it goes upstream
        idle.touch()
    if step == "http":

        def edit(head: RequestHead, raw: bytes) -> bytes:
            check_request(head, host, port)
            return swapped_head(head, raw, swaps, host, port, on_swap)

        upstream = await forward_requests(rd, lambda: dial(True), edit, idle, tally, head_limit, methods)
        if upstream is not None:
            half_close(upstream)  # bytes of an unfinished request are dropped, never forwarded unchecked
        return
    await pump(rd, await _open(lambda: dial(False)), idle, tally)


Dial = Callable[[], Awaitable[asyncio.StreamWriter]]
TunnelDial = Callable[[bool], Awaitable[asyncio.StreamWriter]]


def first_message(buf: bytes, host: str, head_limit: int) -> Literal["more", "http", "tls"]:
    """What a tunnel to `host` does with the first bytes its client sent: wait for more, read them as HTTP/1.x
    requests (each checked), or splice a TLS session whose complete ClientHello names `host`. Raises
    Refused(0, ...) for anything else: the only two outcomes that forward a byte are "http" and "tls"."""
    kind = classify(buf)
    if kind is None:
        if len(buf) > head_limit:
            raise Refused(0, "unclassifiable", f"first {len(buf)} bytes are neither TLS nor an HTTP request line")
        return "more"
    if kind == "opaque":
        raise Refused(
            0,
            "not_tls_or_http",
            f"the tunnel's first bytes {buf[:24]!r} are neither a TLS ClientHello "
            "nor an HTTP/1.x request: what the proxy cannot check, it does not pass",
        )
    if kind == "http":
        return "http"
    return "tls" if _hello_names(buf, host) else "more"


async def _open(dial: Dial) -> asyncio.StreamWriter:
    try:
        return await dial()
    except Refused as refused:  # after the 200 there is no status line left to send: the tunnel just closes
        raise Refused(0, refused.reason, refused.detail) from None


def _hello_names(buf: bytes, host: str) -> bool:
    """True when the whole ClientHello is in and names `host`; False while more bytes are needed."""
    try:
        complete, sni = client_hello_sni(buf)
    except BadHello as exc:
        raise Refused(0, "bad_client_hello", str(exc)) from None
    if not complete:
        if len(buf) > 4 * MAX_HELLO:
            raise Refused(0, "bad_client_hello", "ClientHello spread over too many records")
        return False
    if sni is None:
        raise Refused(
            0,
            "bad_client_hello",
            f"a ClientHello without a server name in a tunnel to {host}: the "
            "server would answer for its default host, which need not be the target",
        )
    if _normalized(sni) != host:
        raise Refused(0, "host_mismatch", f"TLS SNI {sni!r} in a tunnel to {host}")
    return True


# Checks one request head and gives the bytes to send for it (raises Refused or BadRequest to stop).
Edit = Callable[[RequestHead, bytes], bytes]


def swapped_head(
    head: RequestHead,
    raw: bytes,
    swaps: SwapTable | None,
    host: str | None,
    port: int | None,
    on_swap=None,
    model_route: bool = False,
) -> bytes:
    """`raw` with the run's credentials swapped in where bound; a placeholder sent where it is not bound is
    refused as a credential replay (the value never leaves). `on_swap(variables)` hears of every swap."""
    if not swaps:
        return raw
    try:
        new, swapped = swaps.apply(head, host, port, model_route)
    except Replay as exc:
        raise Refused(403, "credential_replay", str(exc)) from None
    if swapped and on_swap is not None:
        on_swap(swapped)
    return raw if new is head else render_request(new, new.headers)


async def forward_requests(
    rd: Buffered, dial: Dial, edit: Edit, idle: Idle, tally: Tally, limit: int, methods: deque | None = None
) -> asyncio.StreamWriter | None:
    """Check (and edit) and forward request after request until the client has finished (EOF); the upstream,
    once dialled. A refusal before anything was dialled keeps its status (the client gets it); after, it only
    closes (a response may be under way). A head is checked whole, its body framing included, before a byte
    of it goes upstream. `methods` hears the method of each request as it goes (what the responses to it
    look like depends on it: responses.py)."""
    upstream = None
    while True:
        try:
            raw = await rd.readuntil(b"\r\n\r\n", limit)
        except HeadTooLarge as exc:
            raise Refused(0, "head_too_large", str(exc)) from None
        except asyncio.IncompleteReadError:
            return upstream
        if not raw:
            return upstream
        raw = raw.lstrip(b"\r\n")  # servers skip blank lines between requests: so do we, and drop them
        if not raw:
            continue
        try:
            head = parse_request(raw)
            framing(head)  # a body the proxy could not delimit: refused before its head goes upstream
            raw = edit(head, raw)
        except BadRequest as exc:
            raise Refused(0, "bad_request_in_tunnel", str(exc)) from None
        except Refused as refused:
            if upstream is not None:
                raise Refused(0, refused.reason, refused.detail) from None
            raise
        if upstream is None:
            upstream = await _open(dial)
        if methods is not None:
            methods.append(head.method)
        upstream.write(raw)
        tally.n += len(raw)
        idle.touch()
        try:
            if not await copy_body(rd, upstream, head, idle, tally, limit):
                return upstream
        except BadRequest as exc:
            raise Refused(0, "bad_request_in_tunnel", str(exc)) from None


def check_request(head: RequestHead, host: str, port: int, default_port: int = 80) -> None:
    """Every request of a tunnel must name its target host:port in a Host header (`default_port`: what a Host
    without a port means, 443 inside TLS)."""
    if head.method == "CONNECT":
        raise Refused(0, "host_mismatch", f"CONNECT {head.target} inside a tunnel to {host}:{port}")
    target = head.target
    # a target that starts with "/" is origin-form, whatever its query holds (?redirect_uri=https://...)
    if "://" in target and not target.startswith("/"):  # an absolute target overrides Host (RFC 9112 3.2.2)
        scheme, _, rest = target.partition("://")
        default = _SCHEME_PORTS.get(scheme.lower())
        authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        if default is None or split_authority(authority, default) != (host, port):
            raise Refused(0, "host_mismatch", f"request target {target[:200]!r} in a tunnel to {host}:{port}")
    elif not (target.startswith("/") or target == "*"):
        raise BadRequest(f"request target {target[:80]!r} is neither origin-form nor absolute")
    if head.host() is None:  # the server would answer for its default host, which need not be the target
        raise BadRequest(f"a request without a Host header in a tunnel to {host}:{port}")
    if not host_matches(head.host(), host, port, default_port):
        raise Refused(0, "host_mismatch", f"Host {head.host()!r} in a tunnel to {host}:{port}")
    # a tunnel forwards the head as it came: a Connection header naming Host or the body's framing would have an
    # intermediary upstream drop the very headers checked here (the proxy's own forward_head never drops them)
    named = head.connection_names()
    if named & NEVER_DROPPED:
        raise BadRequest(f"a Connection header naming {', '.join(sorted(named))!r} in a tunnel to {host}:{port}")


def _normalized(name: str) -> str | None:
    try:
        return hostnames.normalize(name)
    except ValueError:
        return None
