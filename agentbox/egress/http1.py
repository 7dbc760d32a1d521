"""The slice of HTTP/1.x a forward proxy must read exactly: request heads, authorities, body framing.

Parsing is strict on purpose: where servers disagree (space before the colon, folded lines,
duplicate Host or Content-Length, Transfer-Encoding beside Content-Length) a lenient proxy and the
upstream would see two different requests, which is how a Host check gets smuggled past. Anything
ambiguous is a BadRequest. The rule is checked by differential fuzzing against h11
(tests/egress/test_egress_fuzz.py): whatever this accepts, h11 reads as the same request (method,
target, Host, body framing); this may refuse more than h11, never less.

Lines are whole matches, never `$` (which also matches before a final LF: a bare LF would end a line
here but end the head for a server that takes `\n\r\n` as the blank line). A request target and a Host
are printable ASCII only; a Host header must be spelled plainly (see `host_matches`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from agentbox.egress import hostnames

__all__ = [
    "BadRequest",
    "NEVER_DROPPED",
    "RequestHead",
    "parse_request",
    "check_trailer",
    "split_authority",
    "parse_absolute",
    "host_matches",
    "framing",
    "forward_head",
    "render_request",
    "response",
]

_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([\x21-\x7e]+) HTTP/(1\.[01])")
_HEADER = re.compile(rb"(" + _TOKEN + rb"):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*")
_CONTENT_LENGTH = re.compile(r"[0-9]{1,15}")
# What a Host header may spell: the characters of a name, an IPv4 or a bracketed IPv6 literal, and a port.
# The check normalizes (case, a trailing dot, IDNA, blanks) but the header goes upstream as it came; a
# spelling the upstream reads as another name (or as no known name: its default host) must not pass.
_PLAIN_AUTHORITY = re.compile(r"[A-Za-z0-9._\-]+(:[0-9]+)?|\[[0-9A-Fa-f:.]+\](:[0-9]+)?")
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
}
# A Connection header may name further hop-by-hop headers, but never these: dropping one would change
# how the upstream frames the body, or which host it serves.
NEVER_DROPPED = {"host", "content-length", "transfer-encoding"}


class BadRequest(ValueError):
    pass


class RequestHead(NamedTuple):
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]

    def values(self, name: str) -> list[str]:
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def connection_names(self) -> set[str]:
        """The headers the Connection header names (lower case): an intermediary drops them."""
        return {t.strip().lower() for v in self.values("connection") for t in v.split(",")}

    def host(self) -> str | None:
        hosts = self.values("host")
        if len(hosts) > 1:
            raise BadRequest("more than one Host header")
        return hosts[0] if hosts else None


def parse_request(head: bytes, max_headers: int = 100) -> RequestHead:
    """`head` is everything up to and including the blank line (CRLF CRLF)."""
    if not head.endswith(b"\r\n\r\n"):
        raise BadRequest("request head does not end with CRLF CRLF")
    lines = head[:-4].split(b"\r\n")
    match = _REQUEST_LINE.fullmatch(lines[0])
    if not match:
        raise BadRequest(f"bad request line {lines[0][:80]!r}")
    if len(lines) - 1 > max_headers:
        raise BadRequest(f"more than {max_headers} header fields")
    headers = []
    for line in lines[1:]:
        field = _HEADER.fullmatch(line)
        if not field:  # also refuses obsolete line folding and bare CR / LF inside a line
            raise BadRequest(f"bad header line {line[:80]!r}")
        headers.append((field.group(1).decode("ascii"), field.group(2).decode("latin-1")))
    method, target, version = (g.decode("latin-1") for g in match.groups())
    return RequestHead(method, target, version, headers)


# Fields that frame or route a message: never taken from a trailer (a server that merges trailers into the
# head would read them there).
_NOT_TRAILERS = {"host", "content-length", "transfer-encoding", "connection", "te", "trailer", "upgrade"}


def check_trailer(line: bytes) -> None:
    """A trailer line of a chunked body (with its CRLF) must be a header field as strict as the head's, and
    none that frames or routes."""
    field = _HEADER.fullmatch(line[:-2]) if line.endswith(b"\r\n") else None
    if not field:
        raise BadRequest(f"bad trailer line {line[:80]!r}")
    if field.group(1).decode("ascii").lower() in _NOT_TRAILERS:
        raise BadRequest(f"trailer {field.group(1)[:40]!r} frames or routes the message")


def split_authority(authority: str, default_port: int | None) -> tuple[str, int]:
    """`host[:port]` or `[v6][:port]` -> (normalized host, port); no userinfo, no empty parts."""
    if "@" in authority or not authority:
        raise BadRequest(f"bad authority {authority!r}")
    if authority.startswith("["):
        host, _, tail = authority.partition("]")
        host += "]"
        port_text = tail[1:] if tail.startswith(":") else None
        if tail and port_text is None:
            raise BadRequest(f"bad authority {authority!r}")
    elif ":" in authority:
        host, _, port_text = authority.partition(":")
    else:
        host, port_text = authority, None
    if port_text is None:
        if default_port is None:
            raise BadRequest(f"{authority!r} has no port")
        port = default_port
    elif port_text.isdigit() and len(port_text) <= 5 and 0 < int(port_text) < 65536:
        port = int(port_text)
    else:
        raise BadRequest(f"bad port in {authority!r}")
    try:
        return hostnames.normalize(host), port
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def parse_absolute(target: str) -> tuple[str, int, str]:
    """`http://host[:port]/path?q` -> (host, port, origin-form path); the fragment is dropped."""
    if not target[:7].lower() == "http://":
        raise BadRequest("not an absolute http:// URL")
    rest = target[7:].split("#", 1)[0]
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:]
    host, port = split_authority(authority, 80)
    return host, port, path if path.startswith("/") else "/" + path


def host_matches(header: str | None, host: str, port: int, default_port: int = 80) -> bool:
    """Does a Host header (absent, or `host[:port]` with `default_port` as the default) name exactly host:port?"""
    if header is None:
        return True  # nothing to route by: the upstream serves the connection's own host
    if not _PLAIN_AUTHORITY.fullmatch(header):
        return False
    try:
        return split_authority(header, default_port) == (host, port)
    except BadRequest:
        return False


def framing(head: RequestHead) -> tuple[str, int]:
    """How the body after this head is delimited: ("length", n), ("chunked", 0) or ("none", 0)."""
    encodings = head.values("transfer-encoding")
    lengths = head.values("content-length")
    if encodings:
        if lengths:
            raise BadRequest("both Transfer-Encoding and Content-Length")
        # the value as the header line held it (blanks already cut): str.strip() would also cut a no-break space
        # (\xa0), which makes "\xa0 chunked" chunked here and an unknown coding upstream (fuzzing, 2026-12-06)
        if len(encodings) != 1 or not encodings[0].isascii() or encodings[0].lower() != "chunked":
            raise BadRequest(f"unsupported Transfer-Encoding {', '.join(encodings)!r}")
        return "chunked", 0
    if lengths:
        if len(set(lengths)) != 1 or not _CONTENT_LENGTH.fullmatch(lengths[0]):  # str.isdigit() takes "²"
            raise BadRequest(f"bad Content-Length {', '.join(lengths)!r}")
        return "length", int(lengths[0])
    return "none", 0


def forward_head(head: RequestHead, host: str, port: int, path: str) -> bytes:
    """The origin-form head sent upstream: hop-by-hop headers gone, one request per connection."""
    named = head.connection_names() - NEVER_DROPPED
    drop = _HOP_BY_HOP | named
    lines = [f"{head.method} {path} HTTP/{head.version}"]
    if head.host() is None:
        authority = f"[{host}]" if ":" in host else host
        lines.append(f"Host: {authority}" if port == 80 else f"Host: {authority}:{port}")
    lines += [f"{k}: {v}" for k, v in head.headers if k.lower() not in drop]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def render_request(head: RequestHead, headers: list[tuple[str, str]]) -> bytes:
    """The head again, with `headers` in place of its own (the request line as it came)."""
    lines = [f"{head.method} {head.target} HTTP/{head.version}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


def response(status: int, text: str) -> bytes:
    """A complete short reply from the proxy itself; the connection is closed after it."""
    body = (text + "\n").encode("utf-8", "replace")
    return (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nX-Agentbox-Egress: {status}\r\n\r\n"
    ).encode("ascii") + body
