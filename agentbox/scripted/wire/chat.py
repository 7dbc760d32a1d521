"""OpenAI Chat Completions (OpenCode, Hermes): POST /v1/chat/completions, SSE chunks, `data: [DONE]`."""

from __future__ import annotations

import json
from typing import Any, Iterator

from agentbox.scripted.script import AssistantTurn, Reply, step_of
from agentbox.scripted.transcript import ToolResult
from agentbox.scripted.wire.common import Conversation, estimate_tokens, new_id, now, sse, text_of

API = "openai-chat"
ID_PREFIX = "call_"


def parse(body: dict[str, Any]) -> Conversation:
    tools = {}
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            function = tool.get("function") or {}
            tools[function.get("name") or tool.get("name") or tool.get("type", "")] = tool.get("type", "function")
    conv = Conversation(
        model=body.get("model"),
        stream=bool(body.get("stream")),
        side=not body.get("tools"),
        tools=tools,
        input_tokens=estimate_tokens([body.get("messages"), body.get("tools")]),
        include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
    )
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            calls = [c.get("id") for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            ours = tuple(s for s in map(step_of, calls) if s is not None)
            conv.turns.append(
                AssistantTurn(
                    ours=ours, other_calls=len(calls) - len(ours), has_text=bool(text_of(message.get("content")))
                )
            )
        elif message.get("role") == "tool":
            conv.tool_results.append(
                ToolResult(
                    call_id=message.get("tool_call_id", ""),
                    text=text_of(message.get("content")),
                    is_error=None,
                    step_index=step_of(message.get("tool_call_id")),
                )
            )
    return conv


def _message(reply: Reply) -> dict[str, Any]:
    if reply.tool is None:
        return {"role": "assistant", "content": reply.text or ""}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": reply.call_id,
                "type": "function",
                "function": {"name": reply.tool, "arguments": json.dumps(reply.arguments or {})},
            }
        ],
    }


def _usage(conv: Conversation, output: int) -> dict[str, int]:
    return {"prompt_tokens": conv.input_tokens, "completion_tokens": output, "total_tokens": conv.input_tokens + output}


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.tool is not None else "stop"


def complete(reply: Reply, conv: Conversation) -> dict[str, Any]:
    message = _message(reply)
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": now(),
        "model": conv.model or "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        "usage": _usage(conv, estimate_tokens(message)),
    }


def stream(reply: Reply, conv: Conversation) -> Iterator[bytes]:
    head = {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": now(),
        "model": conv.model or "scripted",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    message = _message(reply)
    if reply.tool is None:
        yield chunk({"role": "assistant", "content": ""})
        yield chunk({"content": message["content"]})
    else:
        call = message["tool_calls"][0]
        yield chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""},
                    }
                ],
            }
        )
        yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": call["function"]["arguments"]}}]})
    yield chunk({}, _finish(reply))
    if conv.include_usage:  # only when asked: some clients index choices[0] of every chunk
        yield sse({**head, "choices": [], "usage": _usage(conv, estimate_tokens(message))})
    yield sse("[DONE]")
