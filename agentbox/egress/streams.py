"""Byte plumbing for the proxy: a reader whose next bytes can be inspected before they are consumed,
the splice pump, and one idle timer per exchange.

The idle timer is a single `call_later` handle that the pumps only touch (a float store per chunk);
wrapping every read in a timeout would cost a task per chunk and halve a tunnel's throughput.
"""

from __future__ import annotations

import asyncio

__all__ = ["Buffered", "HeadTooLarge", "Idle", "Tally", "pump", "half_close", "CHUNK", "READ_LIMIT"]

CHUNK = 256 * 1024  # one read / write of the splice: large, so per-chunk Python costs vanish
# What a StreamReader may buffer before it stops reading its socket (it pauses at twice this): with the
# drain threshold below, one direction of one tunnel holds at most ~1 MiB however slow its peer is.
READ_LIMIT = 128 * 1024


class HeadTooLarge(ValueError):
    pass


class Buffered:
    """A StreamReader with a front buffer the tunnel can inspect (`buf`, grown by `fill`) before any of it
    is consumed; lines come off it without rescanning or recopying what follows (front deletes are cheap)."""

    def __init__(self, reader: asyncio.StreamReader):
        self.reader, self.buf = reader, bytearray()

    async def read(self, n: int = CHUNK) -> bytes:
        if self.buf:
            data = bytes(self.buf[:n])
            del self.buf[:n]
            return data
        return await self.reader.read(n)

    async def fill(self) -> bool:
        """Append what the stream has next to the front buffer; False at EOF."""
        data = await self.reader.read(CHUNK)
        self.buf += data
        return bool(data)

    async def readuntil(self, sep: bytes, limit: int) -> bytes:
        """Up to and including `sep`; b"" at a clean EOF before any byte; HeadTooLarge past `limit`."""
        searched = 0
        while True:
            end = self.buf.find(sep, searched)
            if end > limit or (end < 0 and len(self.buf) > limit):
                raise HeadTooLarge(f"no {sep!r} within {limit} bytes")
            if end >= 0:
                data = bytes(self.buf[: end + len(sep)])
                del self.buf[: end + len(sep)]
                return data
            searched = max(0, len(self.buf) - len(sep) + 1)
            if not await self.fill():
                if self.buf:
                    raise asyncio.IncompleteReadError(bytes(self.buf), None)
                return b""


class Idle:
    """Calls `on_idle` once nothing has moved for `timeout` seconds."""

    def __init__(self, timeout: float, on_idle):
        self.loop = asyncio.get_running_loop()
        self.timeout, self.on_idle = timeout, on_idle
        self.last = self.loop.time()
        self._handle = self.loop.call_later(timeout, self._check)

    def touch(self) -> None:
        self.last = self.loop.time()

    def _check(self) -> None:
        quiet = self.loop.time() - self.last
        if quiet >= self.timeout:
            self.on_idle()
        else:
            self._handle = self.loop.call_later(self.timeout - quiet, self._check)

    def cancel(self) -> None:
        self._handle.cancel()


class Tally:
    """Bytes moved in one direction, kept outside the pump so a cancelled pump's count survives."""

    __slots__ = ("n",)

    def __init__(self):
        self.n = 0


async def pump(reader, writer: asyncio.StreamWriter, idle: Idle, tally: Tally, limit: int | None = None) -> int:
    """Copy until EOF (or exactly `limit` bytes, without the half-close); return the bytes copied.

    At EOF the writer is half-closed, so the peer sees the end of this direction while the other
    direction goes on (a client that shut its sending side still gets its response).
    """
    total = 0
    try:
        while limit is None or total < limit:
            data = await reader.read(CHUNK if limit is None else min(CHUNK, limit - total))
            if not data or writer.is_closing():  # a peer that is gone stops the copy, not just the writes
                break
            writer.write(data)
            total += len(data)
            tally.n += len(data)
            idle.touch()
            if writer.transport.get_write_buffer_size() > CHUNK:
                await writer.drain()  # backpressure only when the peer is slower than us
    except (ConnectionError, OSError):
        pass
    if limit is None:
        half_close(writer)
    return total


def half_close(writer: asyncio.StreamWriter) -> None:
    if writer.can_write_eof() and not writer.is_closing():
        try:
            writer.write_eof()
        except (ConnectionError, OSError):
            pass
