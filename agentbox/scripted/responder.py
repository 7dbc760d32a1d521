"""One HTTP request in, one answer and one transcript record out. No sockets here, so tests can call it."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, replace
from typing import Any, Iterator

from agentbox.scripted.script import Script
from agentbox.scripted.transcript import Emitted, Record, normalize_path
from agentbox.scripted.wire import ROUTES, anthropic
from agentbox.scripted.wire.common import Conversation, now, schema_answer

__all__ = ["Answer", "respond"]


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes | Iterator[bytes]  # an iterator is streamed as SSE, one chunk per event
    record: Record


def _json(status: int, payload: Any, record: Record) -> Answer:
    return Answer(status, "application/json", json.dumps(payload).encode(), record)


def _decode(raw: bytes, encoding: str | None) -> Any:
    if encoding in ("gzip", "deflate"):
        raw = zlib.decompress(raw, 47)  # 47: accept gzip and zlib headers alike
    elif encoding == "zstd":
        import zstandard  # only if a harness compresses its requests; not a hard dependency

        raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    return json.loads(raw or b"null")


def _record(
    method: str,
    path: str,
    *,
    wire_api: str | None = None,
    conv: Conversation | None = None,
    side: bool = True,
    step: int | None = None,
    emitted: Emitted | None = None,
    request: Any = None,
) -> Record:
    return Record(
        wire_api=wire_api,
        method=method,
        path=path,
        model=conv.model if conv else None,
        stream=conv.stream if conv else False,
        tools_offered=tuple(conv.tools) if conv else (),
        tool_results=tuple(conv.tool_results) if conv else (),
        side=side,
        step_index=step,
        emitted=emitted,
        request=request,
    )


def _model(name: str) -> dict[str, Any]:
    # Reads as an OpenAI and an Anthropic model entry, with the context size that vLLM-style clients look for.
    return {
        "id": name,
        "object": "model",
        "type": "model",
        "created": now(),
        "created_at": "2025-01-01T00:00:00Z",
        "owned_by": "agentbox",
        "display_name": name,
        "context_length": 200_000,
        "max_model_len": 200_000,
    }


def _models(models: tuple[str, ...]) -> dict[str, Any]:
    data = [_model(m) for m in models]
    return {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }


def respond(
    script: Script,
    method: str,
    path: str,
    raw: bytes,
    encoding: str | None = None,
    models: tuple[str, ...] = ("scripted",),
) -> Answer:
    route = normalize_path(path)
    if method == "GET" and route == "/models":
        return _json(200, _models(models), _record(method, path))
    if method == "GET" and route.startswith("/models/"):
        return _json(200, _model(route.removeprefix("/models/")), _record(method, path))
    if method != "POST" or (route not in ROUTES and route != "/messages/count_tokens"):
        return _json(
            404, {"error": {"type": "not_found_error", "message": f"no {method} {path} here"}}, _record(method, path)
        )
    try:
        body = _decode(raw, encoding)
    except (ValueError, zlib.error, ImportError) as exc:
        return _json(
            400,
            {"error": {"type": "invalid_request_error", "message": f"unreadable JSON body: {exc}"}},
            _record(method, path),
        )
    if not isinstance(body, dict):
        return _json(
            400,
            {"error": {"type": "invalid_request_error", "message": "the body is not a JSON object"}},
            _record(method, path, request=body),
        )
    if route == "/messages/count_tokens":
        conv = anthropic.parse(body)
        return _json(
            200, anthropic.count_tokens(body), _record(method, path, wire_api=anthropic.API, conv=conv, request=body)
        )
    wire = ROUTES[route]
    conv = wire.parse(body)
    reply = script.side() if conv.side else script.next(conv.turns, wire.ID_PREFIX)
    if conv.side and conv.answer_schema is not None:
        reply = replace(reply, text=schema_answer(conv.answer_schema, reply.text or ""))
    emitted = (
        Emitted(kind="text", text=reply.text)
        if reply.tool is None
        else Emitted(
            kind="tool_call",
            tool=reply.tool,
            arguments=reply.arguments,
            call_id=reply.call_id,
            offered=reply.tool in conv.tools,
        )
    )
    record = _record(
        method, path, wire_api=wire.API, conv=conv, side=conv.side, step=reply.step_index, emitted=emitted, request=body
    )
    if conv.stream:
        return Answer(200, "text/event-stream", wire.stream(reply, conv), record)
    return _json(200, wire.complete(reply, conv), record)
