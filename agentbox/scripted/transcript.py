"""What the scripted model saw and said, one record per HTTP request, for tests to assert on.

The records describe; they never judge. Whether an attack worked is read from real side effects.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

__all__ = ["Emitted", "Record", "ToolResult", "Transcript", "normalize_path"]


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    text: str
    is_error: bool | None  # None: the wire API has no error flag (Chat Completions, Responses)
    step_index: int | None  # the scenario step whose call this answers; None if the call was not ours


@dataclass(frozen=True)
class Emitted:
    """The answer sent: one native tool call, or plain text."""

    kind: str  # "tool_call" | "text"
    text: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    call_id: str | None = None
    offered: bool | None = None  # was the tool in the list the harness offered? (a denied tool may not be)


@dataclass(frozen=True)
class Record:
    wire_api: str | None  # anthropic-messages | openai-responses | openai-chat; None for other paths
    method: str
    path: str
    model: str | None
    stream: bool
    tools_offered: tuple[str, ...]
    tool_results: tuple[ToolResult, ...]  # every result in the request's history, oldest first
    side: bool  # not the main agent loop (no tools offered, token counting, model listing): never advances
    step_index: int | None  # the scenario step emitted; None for side requests and the closing text
    emitted: Emitted | None
    request: Any = field(repr=False, default=None)  # the raw request JSON
    # what the request's key headers (x-api-key, Authorization, api-key) carried, when the model expects a key:
    # "real" (the key the model was given), "other" (anything else: a placeholder that was never swapped), "none"
    credential: str | None = None


def normalize_path(path: str) -> str:
    """`/v1/messages?beta=true` and `/messages` name the same endpoint."""
    path = path.split("?", 1)[0].rstrip("/") or "/"
    return path[3:] if path.startswith("/v1/") else path


class Transcript(list):
    """A snapshot of the records, oldest first, with the questions tests ask most."""

    def main_loop(self) -> list[Record]:
        return [r for r in self if not r.side]

    def offered_tools(self) -> set[str]:
        return {name for r in self for name in r.tools_offered}

    def tool_results(self) -> list[ToolResult]:
        """Each result once (requests repeat the whole history), in the order they first arrived."""
        seen: dict[str, ToolResult] = {}
        for record in self:
            for result in record.tool_results:
                seen.setdefault(result.call_id, result)
        return list(seen.values())

    def requests_for(self, path: str) -> list[Record]:
        want = normalize_path(path)
        return [r for r in self if normalize_path(r.path) == want]

    def credentials(self) -> set[str | None]:
        """What the requests' key headers carried (see Record.credential)."""
        return {r.credential for r in self}

    def models(self) -> set[str]:
        return {r.model for r in self if r.model}

    def emitted_calls(self) -> list[Emitted]:
        return [r.emitted for r in self if r.emitted and r.emitted.kind == "tool_call"]

    def as_json(self) -> list[dict[str, Any]]:
        """The records as plain data, for a report; the raw request bodies are left out (what the
        harness offered and sent back is in `tools_offered` and `tool_results`)."""
        out = []
        for record in self:
            plain = asdict(replace(record, request=None))
            del plain["request"]
            out.append(plain)
        return out
