"""OpenAI Chat Completions, as OpenCode and Hermes speak it: tool_calls deltas, finish_reason, [DONE]."""

from __future__ import annotations

import json

from scripted_client import VOCABULARIES, get, post

SCENARIO = {"steps": [{"shell": {"command": "touch proof"}}], "final_text": "finished"}
TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def request(messages, stream=True, **extra):
    return {"model": "chat-test", "stream": stream, "tools": TOOLS, "messages": messages, **extra}


def deltas(events):
    return [data["choices"][0] for _, data in events if data != "[DONE]" and data["choices"]]


def test_a_shell_step_streams_as_tool_call_deltas_then_done(model):
    model.load(SCENARIO, VOCABULARIES["openai-chat"])
    events = post(model, "/v1/chat/completions", request([{"role": "user", "content": "go"}]))
    assert events[-1] == (None, "[DONE]")
    choices = deltas(events)
    first = choices[0]["delta"]["tool_calls"][0]
    assert first["id"].startswith("call_") and first["function"]["name"] == "bash"
    arguments = "".join(
        c["delta"]["tool_calls"][0]["function"]["arguments"] for c in choices if "tool_calls" in c["delta"]
    )
    assert json.loads(arguments) == {"command": "touch proof"}
    assert choices[-1]["finish_reason"] == "tool_calls"
    assert all(data == "[DONE]" or data["choices"] for _, data in events), "no usage chunk unless asked"


def test_a_usage_chunk_comes_only_when_stream_options_ask_for_it(model):
    model.load(SCENARIO, VOCABULARIES["openai-chat"])
    events = post(
        model,
        "/v1/chat/completions",
        request([{"role": "user", "content": "go"}], stream_options={"include_usage": True}),
    )
    usage = events[-2][1]
    assert usage["choices"] == [] and usage["usage"]["prompt_tokens"] > 0


def test_the_tool_message_sent_back_leads_to_the_final_text_and_stop(model):
    model.load(SCENARIO, VOCABULARIES["openai-chat"])
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]
    first = deltas(post(model, "/chat/completions", request(messages)))[0]["delta"]["tool_calls"][0]
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": first["id"], "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": first["id"], "content": "done"},
    ]
    choices = deltas(post(model, "/v1/chat/completions", request(messages)))
    assert "".join(c["delta"].get("content") or "" for c in choices) == "finished"
    assert choices[-1]["finish_reason"] == "stop"


def test_a_request_without_stream_gets_one_completion_object(model):
    model.load(SCENARIO, VOCABULARIES["openai-chat"])
    completion = post(model, "/v1/chat/completions", request([{"role": "user", "content": "go"}], stream=False))
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "bash"


def test_the_model_list_answers_with_and_without_the_v1_prefix(model):
    for path in ("/v1/models", "/models"):
        status, listing = get(model, path)
        assert status == 200 and [m["id"] for m in listing["data"]] == ["scripted"]
    status, entry = get(model, "/v1/models/scripted")
    assert status == 200 and entry["id"] == "scripted"
