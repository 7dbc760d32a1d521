"""This process's stdin and stdout as asyncio streams, for the SDK's connection to the client.

The SDK's own helper (`acp.stdio`) lives in a module that loads the whole protocol schema; this is the same
two pipes, without it (see sdk.py). asyncio's pipe transports take only pipes, sockets and character devices,
and a person trying the endpoint by hand often gives files (`agent-box acp P < in.json > out.json`): a regular
file is carried through a pipe of our own by a thread."""

from __future__ import annotations

import asyncio
import atexit
import os
import stat
import sys
import threading

__all__ = ["stdio_streams"]


def _pumped(fd: int, into_pipe: bool) -> int:
    """A pipe end standing for the regular file `fd`: its read end fed from the file (`into_pipe`), or its write end
    drained into the file."""
    read_end, write_end = os.pipe()
    src, dst, ours = (fd, write_end, read_end) if into_pipe else (read_end, fd, write_end)

    def pump() -> None:
        try:
            while chunk := os.read(src, 65536):
                os.write(dst, chunk)
        finally:
            os.close(write_end if into_pipe else read_end)

    thread = threading.Thread(target=pump, name="acp-stdio-file", daemon=True)
    thread.start()
    if not into_pipe:  # what is still in the pipe reaches the file before the process ends
        atexit.register(_drain, ours, thread)
    return ours


def _drain(write_end: int, thread: threading.Thread) -> None:
    try:
        os.close(write_end)
    except OSError:
        pass  # closed with its transport already
    thread.join(timeout=10)


def _stream_fd(fileobj, into_pipe: bool):
    fd = fileobj.fileno()
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return fileobj
    return os.fdopen(_pumped(fd, into_pipe), "rb" if into_pipe else "wb", buffering=0)


async def stdio_streams(limit: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), _stream_fd(sys.stdin, True))
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(), _stream_fd(sys.stdout, False)
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)
