"""The three wire APIs the harnesses speak. Each module parses a request and renders a Reply.

A module has `API` (its WireApi name), `ID_PREFIX` (how that API's call ids look), `parse(body)`,
`stream(reply, conversation)` (SSE bytes) and `complete(reply, conversation)` (a JSON body).
"""

from __future__ import annotations

from agentbox.scripted.wire import anthropic, chat, responses

__all__ = ["ROUTES", "anthropic", "chat", "responses"]

# POST endpoints (normalized, without /v1) and the module that speaks them.
ROUTES = {
    "/messages": anthropic,
    "/responses": responses,
    "/chat/completions": chat,
}
