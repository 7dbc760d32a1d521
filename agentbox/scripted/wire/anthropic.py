"""Anthropic Messages (Claude Code): POST /v1/messages, SSE with content blocks."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from agentbox.scripted.script import AssistantTurn, Reply, step_of
from agentbox.scripted.transcript import ToolResult
from agentbox.scripted.wire.common import Conversation, estimate_tokens, new_id, sse, text_of

API = "anthropic-messages"
# Claude Code (with tool search on) sends a `defer_loading` placeholder instead of some tools and lists
# their names in the prompt. They are still callable, so "was it offered?" must see them.
_DEFERRED = re.compile(r"deferred tools are now available via ToolSearch[^\n]*\n((?:[A-Za-z0-9_.-]+\n?)+)")
ID_PREFIX = "toolu_"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _deferred(body: dict[str, Any]) -> list[str]:
    return [
        name
        for text in _strings([body.get("system"), body.get("messages")])
        if "ToolSearch" in text
        for match in _DEFERRED.finditer(text)
        for name in match.group(1).split()
    ]


def parse(body: dict[str, Any]) -> Conversation:
    tools = {}
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and "name" in tool and not tool.get("defer_loading"):
            tools[tool["name"]] = tool.get("type", "custom")
    tools.update((name, "deferred") for name in _deferred(body) if name not in tools)
    conv = Conversation(
        model=body.get("model"),
        stream=bool(body.get("stream")),
        side=not body.get("tools"),
        tools=tools,
        input_tokens=estimate_tokens([body.get("system"), body.get("messages"), body.get("tools")]),
    )
    for message in body.get("messages") or []:
        blocks = _blocks(message.get("content"))
        if message.get("role") == "assistant":
            calls = [b.get("id") for b in blocks if b.get("type") in ("tool_use", "server_tool_use")]
            ours = tuple(i for i in map(step_of, calls) if i is not None)
            conv.turns.append(
                AssistantTurn(
                    ours=ours,
                    other_calls=len(calls) - len(ours),
                    has_text=any(b.get("type") == "text" and b.get("text") for b in blocks),
                )
            )
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                conv.tool_results.append(
                    ToolResult(
                        call_id=block.get("tool_use_id", ""),
                        text=text_of(block.get("content")),
                        is_error=bool(block.get("is_error", False)),
                        step_index=step_of(block.get("tool_use_id")),
                    )
                )
    return conv


def _usage(conv: Conversation, output_tokens: int) -> dict[str, int]:
    # The cache fields are not optional in practice: ACP clients log errors when they are missing.
    return {
        "input_tokens": conv.input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _content(reply: Reply) -> list[dict[str, Any]]:
    if reply.tool is not None:
        return [{"type": "tool_use", "id": reply.call_id, "name": reply.tool, "input": reply.arguments or {}}]
    return [{"type": "text", "text": reply.text or ""}]


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool is not None else "end_turn"


def complete(reply: Reply, conv: Conversation) -> dict[str, Any]:
    content = _content(reply)
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": conv.model or "scripted",
        "content": content,
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": _usage(conv, estimate_tokens(content)),
    }


def stream(reply: Reply, conv: Conversation) -> Iterator[bytes]:
    message = complete(reply, conv)
    yield sse(
        {"type": "message_start", "message": {**message, "content": [], "stop_reason": None, "usage": _usage(conv, 1)}},
        "message_start",
    )
    yield sse({"type": "ping"}, "ping")
    block = message["content"][0]
    if block["type"] == "tool_use":
        yield sse(
            {"type": "content_block_start", "index": 0, "content_block": {**block, "input": {}}}, "content_block_start"
        )
        arguments = json.dumps(block["input"])
        # Two fragments, so a client that does not accumulate partial JSON fails loudly here.
        for part in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
            yield sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": part},
                },
                "content_block_delta",
            )
    else:
        yield sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        )
        yield sse(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": block["text"]}},
            "content_block_delta",
        )
    yield sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
    yield sse(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": message["usage"],
        },
        "message_delta",
    )
    yield sse({"type": "message_stop"}, "message_stop")


def count_tokens(body: dict[str, Any]) -> dict[str, int]:
    return {"input_tokens": estimate_tokens([body.get("system"), body.get("messages"), body.get("tools")])}
