"""OpenAI Responses (Codex): POST /v1/responses, SSE of output items."""

from __future__ import annotations

import json
from typing import Any, Iterator

from agentbox.scripted.script import AssistantTurn, Reply, step_of
from agentbox.scripted.transcript import ToolResult
from agentbox.scripted.wire.common import Conversation, estimate_tokens, new_id, now, sse, text_of

API = "openai-responses"
ID_PREFIX = "call_"
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def _offer(conv: Conversation, tools: list[Any]) -> None:
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        kind = tool.get("type", "function")
        if kind == "namespace":
            # Codex groups MCP tools: {"type":"namespace","name":"mcp__canary","tools":[{"name":"allowed_echo"}]}.
            # The transcript names them as Codex does internally, mcp__canary__allowed_echo.
            space = tool.get("name", "")
            for inner in tool.get("tools") or []:
                name = f"{space.rstrip('_')}__{inner.get('name', '')}"
                conv.tools[name] = inner.get("type", "function")
                conv.wire_names[name] = {"name": inner.get("name", ""), "namespace": space}
            continue
        conv.tools[tool.get("name") or kind] = kind


def parse(body: dict[str, Any]) -> Conversation:
    shape = ((body.get("text") or {}).get("format") or {}) if isinstance(body.get("text"), dict) else {}
    schema = (
        shape.get("schema") if shape.get("type") == "json_schema" and isinstance(shape.get("schema"), dict) else None
    )
    conv = Conversation(
        model=body.get("model"),
        stream=bool(body.get("stream")),
        side=not body.get("tools") or schema is not None,
        tools={},
        answer_schema=schema,
        input_tokens=estimate_tokens([body.get("instructions"), body.get("input"), body.get("tools")]),
    )
    _offer(conv, body.get("tools") or [])
    items = body.get("input")
    items = [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else items or []
    # Consecutive assistant-side items form one turn; a user message or a tool output closes it.
    turn: list[dict[str, Any]] = []

    def close() -> None:
        if turn:
            calls = [i.get("call_id") for i in turn if i.get("type") in _CALLS]
            ours = tuple(s for s in map(step_of, calls) if s is not None)
            has_text = any(i.get("type") == "message" and text_of(i.get("content")) for i in turn)
            conv.turns.append(AssistantTurn(ours=ours, other_calls=len(calls) - len(ours), has_text=has_text))
            turn.clear()

    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind in _OUTPUTS:
            close()
            conv.tool_results.append(
                ToolResult(
                    call_id=item.get("call_id", ""),
                    text=text_of(item.get("output")),
                    is_error=None,
                    step_index=step_of(item.get("call_id")),
                )
            )
        elif kind == "message" and item.get("role") != "assistant":
            close()
        else:
            turn.append(item)
    close()
    return conv


def _item(reply: Reply, conv: Conversation) -> dict[str, Any]:
    if reply.tool is None:
        return {
            "type": "message",
            "id": new_id("msg_"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.text or "", "annotations": []}],
        }
    base = {"id": f"fc_{reply.call_id}", "call_id": reply.call_id, "name": reply.tool, "status": "completed"}
    arguments = reply.arguments or {}
    if conv.tools.get(reply.tool) == "custom":
        # A freeform tool (Codex's apply_patch) takes raw text: the template gives it as `input`.
        text = arguments["input"] if set(arguments) == {"input"} else json.dumps(arguments)
        return {"type": "custom_tool_call", **base, "input": text}
    # A tool offered inside a namespace is called by its inner name plus the namespace. Codex defers
    # MCP tools of catalog models behind tool_search, so an unoffered mcp__server__tool still gets
    # the namespace form: a real model that found it through tool_search would call it that way.
    wire = conv.wire_names.get(reply.tool)
    if wire is None and reply.tool.startswith("mcp__") and "__" in reply.tool[5:]:
        server, inner = reply.tool[5:].split("__", 1)
        wire = {"name": inner, "namespace": f"mcp__{server}"}
    return {"type": "function_call", **base, "arguments": json.dumps(arguments), **(wire or {})}


def _response(conv: Conversation, rid: str, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    response = {
        "id": rid,
        "object": "response",
        "created_at": now(),
        "status": status,
        "model": conv.model or "scripted",
        "output": output,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
    }
    if status == "completed":
        out = estimate_tokens(output)
        response["usage"] = {
            "input_tokens": conv.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": conv.input_tokens + out,
        }
    return response


def complete(reply: Reply, conv: Conversation) -> dict[str, Any]:
    return _response(conv, new_id("resp_"), "completed", [_item(reply, conv)])


def stream(reply: Reply, conv: Conversation) -> Iterator[bytes]:
    seq = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(seq), **fields}, kind)

    item, rid = _item(reply, conv), new_id("resp_")
    yield event("response.created", response=_response(conv, rid, "in_progress", []))
    yield event("response.in_progress", response=_response(conv, rid, "in_progress", []))
    if item["type"] == "message":
        text = item["content"][0]["text"]
        yield event("response.output_item.added", output_index=0, item={**item, "status": "in_progress", "content": []})
        part = {"type": "output_text", "text": "", "annotations": []}
        common = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        yield event("response.content_part.added", **common, part=part)
        yield event("response.output_text.delta", **common, delta=text)
        yield event("response.output_text.done", **common, text=text)
        yield event("response.content_part.done", **common, part={**part, "text": text})
    else:
        field, delta_kind = (
            ("input", "response.custom_tool_call_input")
            if item["type"] == "custom_tool_call"
            else ("arguments", "response.function_call_arguments")
        )
        yield event("response.output_item.added", output_index=0, item={**item, field: "", "status": "in_progress"})
        yield event(f"{delta_kind}.delta", item_id=item["id"], output_index=0, delta=item[field])
        yield event(f"{delta_kind}.done", item_id=item["id"], output_index=0, **{field: item[field]})
    yield event("response.output_item.done", output_index=0, item=item)
    yield event("response.completed", response=_response(conv, rid, "completed", [item]))
