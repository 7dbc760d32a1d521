"""This process's stdin and stdout as asyncio streams, for the SDK's connection to the client.

The SDK's own helper (`acp.stdio`) lives in a module that loads the whole protocol schema; this is the same
two pipes, without it (see sdk.py)."""

from __future__ import annotations

import asyncio
import sys

__all__ = ["stdio_streams"]


async def stdio_streams(limit: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(lambda: asyncio.streams.FlowControlMixin(), sys.stdout)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)
