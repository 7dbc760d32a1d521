"""What a client sends first inside a CONNECT tunnel: a TLS ClientHello, a plaintext HTTP request, or
another protocol.

A tunnel to an allowed host:port can still be aimed at another host that shares its address (virtual
hosting, CDN fronting) by the SNI of the ClientHello or the Host header of a plaintext request; the
tunnel checks both against its CONNECT target. Classification leans towards "http": anything a server
could read as a request line is parsed as one (strictly, by http1.py), so odd spacing or leading blank
lines do not hide it. "opaque" is everything else, and the tunnel refuses it (tunnel.py): a proxy that
passed on what it cannot parse would let a lenient server read a request in it (a form feed before
`GET`, say) that no check has seen.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["classify", "client_hello_sni", "BadHello", "MAX_HELLO"]

MAX_HELLO = 65536  # a ClientHello is a handshake message of at most this many bytes here

_TOKEN_PREFIX = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]*")
_LOOSE_REQUEST_LINE = re.compile(rb"^\S+[ \t]+\S+[ \t]+HTTP/", re.IGNORECASE)


class BadHello(ValueError):
    pass


def classify(buf: bytes) -> Literal["tls", "http", "opaque"] | None:
    """None while the bytes so far could still become either; the caller bounds how long it waits."""
    if not buf:
        return None
    if buf[0] == 0x16:
        return "tls"
    rest = buf.lstrip(b"\r\n\t ")  # servers skip blank lines before a request line
    if not rest:
        return None
    token = _TOKEN_PREFIX.match(rest)
    assert token is not None  # the pattern matches the empty string, so it always matches
    token_end = token.end()
    if token_end == len(rest):
        return None
    if token_end == 0 or rest[token_end] not in b" \t":
        return "opaque"
    newline = rest.find(b"\n")
    if newline < 0:
        return None
    return "http" if _LOOSE_REQUEST_LINE.match(rest[:newline]) else "opaque"


def client_hello_sni(buf: bytes) -> tuple[bool, str | None]:
    """(complete, server name) from the TLS records at the start of `buf`.

    complete is False while more bytes are needed; the name is None when the hello has no SNI.
    Raises BadHello for anything that is not a well-formed ClientHello.
    """
    message = bytearray()
    offset = 0
    while True:
        if len(message) >= 4:
            size = int.from_bytes(message[1:4], "big")
            if message[0] != 1:
                raise BadHello("first handshake message is not a ClientHello")
            if size > MAX_HELLO:
                raise BadHello("ClientHello larger than 64 KiB")
            if len(message) >= 4 + size:
                return True, _sni(bytes(message[4 : 4 + size]))
        if len(buf) < offset + 5:
            return False, None
        if buf[offset] != 0x16:
            raise BadHello("record before the end of the ClientHello is not a handshake record")
        length = int.from_bytes(buf[offset + 3 : offset + 5], "big")
        if length == 0 or length > 16384 + 2048:
            raise BadHello("bad TLS record length")
        if len(buf) < offset + 5 + length:
            return False, None
        message += buf[offset + 5 : offset + 5 + length]
        offset += 5 + length


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise BadHello("ClientHello is truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def vector(self, width: int) -> bytes:
        return self.take(int.from_bytes(self.take(width), "big"))

    def done(self) -> bool:
        return self.pos == len(self.data)


def _sni(hello: bytes) -> str | None:
    r = _Reader(hello)
    if r.take(2)[0] != 3:  # legacy_version: 3.x for every SSL / TLS
        raise BadHello("ClientHello of no TLS version")
    r.take(32)  # random
    r.vector(1)  # session id
    r.vector(2)  # cipher suites
    r.vector(1)  # compression methods
    if r.done():
        return None
    extensions = _Reader(r.vector(2))
    if not r.done():  # what a TLS server would refuse is not a ClientHello whose SNI means anything
        raise BadHello("bytes after the ClientHello's extensions")
    names = []
    while not extensions.done():
        ext_type = int.from_bytes(extensions.take(2), "big")
        body = extensions.vector(2)
        if ext_type == 0:
            names.append(_server_name(body))
    if len(names) > 1:
        raise BadHello("more than one server_name extension")
    return names[0] if names else None


def _server_name(body: bytes) -> str:
    entries = _Reader(_Reader(body).vector(2))
    names = []
    while not entries.done():
        name_type = entries.take(1)[0]
        name = entries.vector(2)
        if name_type == 0:
            names.append(name)
    if len(names) != 1:
        raise BadHello("server_name extension without exactly one host_name")
    try:
        return names[0].decode("ascii")
    except UnicodeDecodeError:
        raise BadHello("server_name is not ASCII") from None
