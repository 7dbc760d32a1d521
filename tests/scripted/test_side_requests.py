"""Requests outside the agent loop get a short answer, never advance the script, and are recorded."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from scripted_client import VOCABULARIES, post

SCENARIO = {"steps": [{"shell": {"command": "one"}}], "side_text": "A title"}


def test_a_request_offering_no_tools_gets_the_side_text_and_does_not_advance(model):
    model.load(SCENARIO, VOCABULARIES["openai-chat"])
    title = post(
        model,
        "/v1/chat/completions",
        {
            "model": "small",
            "messages": [
                {"role": "system", "content": "You are a title generator."},
                {"role": "user", "content": "go"},
            ],
        },
    )
    assert title["choices"][0]["message"]["content"] == "A title"
    main = post(
        model,
        "/v1/chat/completions",
        {
            "model": "big",
            "messages": [{"role": "user", "content": "go"}],
            "tools": [{"type": "function", "function": {"name": "bash"}}],
        },
    )
    assert main["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "bash"
    side, loop = model.transcript
    assert (side.side, side.step_index, side.model, side.emitted.text) == (True, None, "small", "A title")
    assert (loop.side, loop.step_index) == (False, 0)


def test_an_anthropic_summary_request_without_tools_is_a_side_request(model):
    model.load(SCENARIO, VOCABULARIES["anthropic-messages"])
    message = post(
        model,
        "/v1/messages",
        {"model": "haiku", "max_tokens": 10, "messages": [{"role": "user", "content": "summarise this page"}]},
    )
    assert message["content"] == [{"type": "text", "text": "A title"}] and message["stop_reason"] == "end_turn"
    assert model.transcript[0].side


def test_a_request_for_an_answer_in_a_json_schema_is_a_side_request_even_with_tools_offered(model):
    """Codex 0.171.0's TUI names its thread with such a request, offering apply_patch: answered as the agent loop,
    its tool call came back as "unsupported call" and read as the attack never having run."""
    import json

    model.load(SCENARIO, VOCABULARIES["openai-responses"])
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    title = post(
        model,
        "/v1/responses",
        {
            "model": "gpt-5.5",
            "input": "go",
            "tools": [{"type": "custom", "name": "apply_patch"}],
            "text": {"format": {"type": "json_schema", "schema": schema}},
        },
    )
    texts = [part["text"] for item in title["output"] if item["type"] == "message" for part in item["content"]]
    assert [json.loads(t) for t in texts] == [{"title": "A title"}]
    main = post(
        model,
        "/v1/responses",
        {"model": "gpt-5.5", "input": "go", "tools": [{"type": "function", "name": "exec_command"}]},
    )
    assert [item["type"] for item in main["output"]] == ["function_call"]
    side, loop = model.transcript
    assert (side.side, side.step_index) == (True, None) and (loop.side, loop.step_index) == (False, 0)


def test_an_unknown_path_is_a_recorded_404(model):
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(model.base_url + "/api/tags", timeout=10)
    assert caught.value.code == 404
    (record,) = model.requests_for("/api/tags")
    assert record.side and record.wire_api is None and record.method == "GET"


def test_a_body_that_is_not_json_is_a_recorded_400(model):
    request = urllib.request.Request(model.base_url + "/v1/messages", b"{nope", {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400 and len(model.transcript) == 1
