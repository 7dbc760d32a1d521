"""A CONNECT tunnel after its 200: the first client bytes are checked against the target, then spliced.

TLS: the ClientHello's SNI, when present, must name the CONNECT host. Plaintext HTTP: every request
of the tunnel (bodies are framed, so none hides in another's body) must name the CONNECT host:port
in its Host header and, if absolute, in its target. Any other protocol is spliced as it is. A
mismatch closes the tunnel before a byte of the offending message goes upstream, and the upstream is
dialled only after the first message passed: a host that shares the target's address (virtual
hosting) never sees even a connection. The price: a protocol whose server speaks first cannot be
tunnelled (nothing is dialled until the client sends).
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from .swap import Replay, SwapTable

from . import hostnames
from .bodies import copy_body
from .dial import Refused
from .http1 import BadRequest, RequestHead, host_matches, parse_request, render_request, split_authority
from .sniff import MAX_HELLO, BadHello, classify, client_hello_sni
from .streams import HeadTooLarge, Idle, Buffered, Tally, half_close, pump

__all__ = ["client_to_upstream", "forward_requests", "Edit", "check_request", "swapped_head"]

_SCHEME_PORTS = {"http": 80, "https": 443}


async def client_to_upstream(rd: Buffered, dial: Dial, host: str, port: int, idle: Idle, tally: Tally,
                             head_limit: int, swaps: SwapTable | None = None, on_swap=None) -> None:
    """The client -> upstream direction of a tunnel to host:port; raises Refused(0, ...) on a mismatch.

    `dial()` opens the upstream; it is awaited once, when the first message has passed its check.
    `swaps`: the run's credentials, checked (and, for a bound host, swapped in) in every plaintext request.
    """
    while (kind := classify(bytes(rd.buf))) is None:
        if len(rd.buf) > head_limit:
            raise Refused(0, "unclassifiable", f"first {len(rd.buf)} bytes are neither TLS, HTTP nor another protocol")
        if not await rd.fill():
            break
        idle.touch()
    if kind is None:  # the client ended inside what could still have been a request line: drop it
        return
    if kind == "http":
        def edit(head: RequestHead, raw: bytes) -> bytes:
            check_request(head, host, port)
            return swapped_head(head, raw, swaps, host, port, on_swap)

        upstream = await forward_requests(rd, dial, edit, idle, tally, head_limit)
        if upstream is not None:
            half_close(upstream)  # bytes of an unfinished request are dropped, never forwarded unchecked
        return
    if kind == "tls" and not await _check_hello(rd, host):
        return
    await pump(rd, await _open(dial), idle, tally)


Dial = Callable[[], Awaitable[asyncio.StreamWriter]]


async def _open(dial: Dial) -> asyncio.StreamWriter:
    try:
        return await dial()
    except Refused as refused:  # after the 200 there is no status line left to send: the tunnel just closes
        raise Refused(0, refused.reason, refused.detail) from None


async def _check_hello(rd: Buffered, host: str) -> bool:
    """True when the whole ClientHello is in and names the host (or none); False when the client left first."""
    while True:
        try:
            complete, sni = client_hello_sni(bytes(rd.buf))
        except BadHello as exc:
            raise Refused(0, "bad_client_hello", str(exc)) from None
        if complete:
            break
        if len(rd.buf) > 4 * MAX_HELLO:
            raise Refused(0, "bad_client_hello", "ClientHello spread over too many records")
        if not await rd.fill():
            return False
    if sni is not None and _normalized(sni) != host:
        raise Refused(0, "host_mismatch", f"TLS SNI {sni!r} in a tunnel to {host}")
    return True


# Checks one request head and gives the bytes to send for it (raises Refused or BadRequest to stop).
Edit = Callable[[RequestHead, bytes], bytes]


def swapped_head(head: RequestHead, raw: bytes, swaps: SwapTable | None, host: str | None, port: int | None,
                 on_swap=None, model_route: bool = False) -> bytes:
    """`raw` with the run's credentials swapped in where bound; a placeholder sent where it is not bound is
    refused as a credential replay (the value never leaves). `on_swap(variables)` hears of every swap."""
    if not swaps:
        return raw
    try:
        new, swapped = swaps.apply(head, host, port, model_route)
    except Replay as exc:
        raise Refused(403, "credential_replay", str(exc)) from None
    if not swapped:
        return raw
    if on_swap is not None:
        on_swap(swapped)
    return render_request(new, new.headers)


async def forward_requests(rd: Buffered, dial: Dial, edit: Edit, idle: Idle, tally: Tally,
                           limit: int) -> asyncio.StreamWriter | None:
    """Check (and edit) and forward request after request until the client has finished (EOF); the upstream,
    once dialled. A refusal before anything was dialled keeps its status (the client gets it); after, it only
    closes (a response may be under way)."""
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
            raw = edit(head, raw)
        except BadRequest as exc:
            raise Refused(0, "bad_request_in_tunnel", str(exc)) from None
        except Refused as refused:
            if upstream is not None:
                raise Refused(0, refused.reason, refused.detail) from None
            raise
        if upstream is None:
            upstream = await _open(dial)
        upstream.write(raw)
        tally.n += len(raw)
        idle.touch()
        try:
            if not await copy_body(rd, upstream, head, idle, tally, limit):
                return upstream
        except BadRequest as exc:
            raise Refused(0, "bad_request_in_tunnel", str(exc)) from None


def check_request(head: RequestHead, host: str, port: int, default_port: int = 80) -> None:
    """Every request of a tunnel must name its target host:port (`default_port`: what a Host without a port
    means, 443 inside TLS)."""
    if head.method == "CONNECT":
        raise Refused(0, "host_mismatch", f"CONNECT {head.target} inside a tunnel to {host}:{port}")
    target = head.target
    if "://" in target:  # an absolute target overrides Host for the server (RFC 9112 3.2.2)
        scheme, _, rest = target.partition("://")
        default = _SCHEME_PORTS.get(scheme.lower())
        authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        if default is None or split_authority(authority, default) != (host, port):
            raise Refused(0, "host_mismatch", f"request target {target[:200]!r} in a tunnel to {host}:{port}")
    elif not (target.startswith("/") or target == "*"):
        raise BadRequest(f"request target {target[:80]!r} is neither origin-form nor absolute")
    if not host_matches(head.host(), host, port, default_port):
        raise Refused(0, "host_mismatch", f"Host {head.host()!r} in a tunnel to {host}:{port}")


def _normalized(name: str) -> str | None:
    try:
        return hostnames.normalize(name)
    except ValueError:
        return None
