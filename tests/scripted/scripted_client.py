"""A harness-like client for the scripted model: plain urllib, SSE read line by line."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from agentbox.scripted import ScriptedModel

VOCABULARIES = {
    "anthropic-messages": {
        "wire_api": "anthropic-messages",
        "shell": {"tool": "Bash", "arguments": {"command": "{command}"}},
        "write_file": {"tool": "Write", "arguments": {"file_path": "{path}", "content": "{content}"}},
        "mcp_call": {"tool": "mcp__{server}__{tool}", "arguments": "{arguments}"},
    },
    "openai-responses": {
        "wire_api": "openai-responses",
        "shell": {"tool": "exec_command", "arguments": {"cmd": "{command}"}},
        "mcp_call": {"tool": "mcp__{server}__{tool}", "arguments": "{arguments}"},
    },
    "openai-chat": {
        "wire_api": "openai-chat",
        "shell": {"tool": "bash", "arguments": {"command": "{command}"}},
        "read_file": {"tool": "read", "arguments": {"filePath": "{path}"}},
    },
}


def read_sse(response: Any) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) per SSE event; `[DONE]` stays a string."""
    events, name, data = [], None, []
    for raw in response:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            text = "\n".join(data)
            events.append((name, text if text == "[DONE]" else json.loads(text)))
            name, data = None, []
    return events


def post(model: ScriptedModel, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        model.base_url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.headers.get_content_type() == "text/event-stream":
            return read_sse(response)
        return json.load(response)


def get(model: ScriptedModel, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(model.base_url + path, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)
