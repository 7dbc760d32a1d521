"""What every wire module shares: the parsed view of a request, SSE framing, rough token counts."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agentbox.scripted.script import AssistantTurn
from agentbox.scripted.transcript import ToolResult

__all__ = ["Conversation", "sse", "estimate_tokens", "text_of", "new_id", "now", "schema_answer"]


@dataclass
class Conversation:
    model: str | None
    stream: bool
    tools: dict[str, str]  # offered tool name -> its kind on the wire ("function", "custom", "deferred", ...)
    # A request that sends no tools cannot be the agent loop (titles, summaries, quota probes), nor can one that
    # asks for an answer in a JSON schema (Codex's TUI names its thread so, offering apply_patch all the same).
    side: bool = False
    answer_schema: dict[str, Any] | None = None  # the JSON schema a side request wants its answer in
    tool_results: list[ToolResult] = field(default_factory=list)
    turns: list[AssistantTurn] = field(default_factory=list)
    input_tokens: int = 0
    wire_names: dict[str, dict[str, str]] = field(default_factory=dict)  # tool -> item fields that call it
    include_usage: bool = False  # Chat Completions sends a usage chunk only when stream_options asks


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"{head}data: {body}\n\n".encode()


def estimate_tokens(value: Any) -> int:
    """About four characters a token: enough for harnesses that budget their context."""
    return max(1, len(json.dumps(value, default=str)) // 4)


def text_of(content: Any) -> str:
    """The text in a message or tool-result content: a string, or a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text") or content.get("output") or "")
    if isinstance(content, list):
        return "\n".join(text_of(part) for part in content if isinstance(part, (dict, str)))
    return str(content)


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def now() -> int:
    return int(time.time())


def schema_answer(schema: dict[str, Any], text: str) -> str:
    """A side answer in the JSON schema asked for: each required property `text` (a string schema) or empty."""
    props = schema.get("properties") or {}
    return json.dumps(
        {
            name: text if (props.get(name) or {}).get("type") == "string" else None
            for name in schema.get("required") or ()
        }
    )
