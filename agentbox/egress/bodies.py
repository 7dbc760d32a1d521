"""Copying exactly one request body, so the next bytes on the connection are read as the next request head.

A proxy that checks every request of a connection must know where each body ends; guessing (or
copying "the rest") would let a second request ride inside the first one's body unchecked.
"""

from __future__ import annotations

import asyncio
import re

from agentbox.egress.http1 import BadRequest, RequestHead, check_trailer, framing
from agentbox.egress.streams import HeadTooLarge, Idle, Buffered, Tally, pump

__all__ = ["copy_body"]

_CHUNK_SIZE = re.compile(rb"^([0-9A-Fa-f]{1,15})(;[^\r\n]*)?\r\n$")


async def copy_body(
    rd: Buffered, writer: asyncio.StreamWriter, head: RequestHead, idle: Idle, tally: Tally, limit: int
) -> bool:
    """Copy the body `head` announces; False when the client went away before its end.

    `limit` bounds every line read (chunk sizes, trailers). Raises BadRequest for bad framing.
    """
    kind, length = framing(head)
    try:
        if kind == "length":
            return await pump(rd, writer, idle, tally, limit=length) == length
        if kind == "chunked":
            return await _chunked(rd, writer, idle, tally, limit)
    except HeadTooLarge as exc:
        raise BadRequest(f"chunked body: {exc}") from None
    except asyncio.IncompleteReadError:
        return False
    return True


async def _chunked(rd: Buffered, writer, idle: Idle, tally: Tally, limit: int) -> bool:
    while True:
        line = await _line(rd, limit)
        match = _CHUNK_SIZE.match(line)
        if not match:
            raise BadRequest(f"bad chunk size line {line[:40]!r}")
        _send(writer, tally, line)
        size = int(match.group(1), 16)
        if size == 0:
            trailers = 0
            while (trailer := await _line(rd, limit)) != b"\r\n":
                trailers += len(trailer)
                if trailers > limit:
                    raise BadRequest("oversized chunked trailers")
                check_trailer(trailer)
                _send(writer, tally, trailer)
            _send(writer, tally, trailer)
            return True
        if await pump(rd, writer, idle, tally, limit=size) < size:
            return False
        if await _line(rd, 2) != b"\r\n":
            raise BadRequest("chunk data not followed by CRLF")
        _send(writer, tally, b"\r\n")


async def _line(rd: Buffered, limit: int) -> bytes:
    """One CRLF-terminated line, checked by the caller before a byte of it goes upstream."""
    line = await rd.readuntil(b"\r\n", limit)
    if not line:
        raise asyncio.IncompleteReadError(b"", None)
    return line


def _send(writer, tally: Tally, data: bytes) -> None:
    writer.write(data)
    tally.n += len(data)
