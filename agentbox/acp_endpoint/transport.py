"""The SDK's newline-delimited JSON transport, made to report what it would drop.

`acp`'s stdio transport logs and skips a line that is no JSON, and its connection ignores a JSON value
that is no JSON-RPC message. For a relay that hangs the other side: a client whose request was garbled
waits forever for its answer, and a request the agent garbled leaves the client's prompt pending. So a
bad message is handed to `on_bad` (which answers or ends the session) instead of vanishing. The framing
itself stays the SDK's.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from acp._transport import NdjsonTransport

__all__ = ["CheckedTransport", "describe"]


def describe(line: bytes, limit: int = 120) -> str:
    text = line.decode("utf-8", errors="replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."


class CheckedTransport(NdjsonTransport):
    """An NdjsonTransport that passes each malformed line or message to `on_bad(reason, line)`."""

    def __init__(self, reader, sender, on_bad: Callable[[str, bytes], Any]):
        super().__init__(reader, sender)
        self._on_bad = on_bad

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()  # the SDK's framing (limit overruns included)
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for a line that is no UTF-8
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                await _call(self._on_bad, f"not JSON ({why})", line)
                continue
            if (
                not isinstance(message, dict)
                or message.get("jsonrpc") != "2.0"
                or not (isinstance(message.get("method"), str) or "id" in message)
            ):
                await _call(self._on_bad, "not a JSON-RPC 2.0 message", line)
                continue
            return message


async def _call(fn, *args) -> None:
    result = fn(*args)
    if hasattr(result, "__await__"):
        await result
