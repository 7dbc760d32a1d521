"""Anthropic Messages, as Claude Code speaks it: SSE content blocks, tool_use, tool_result."""

from __future__ import annotations

import json

from scripted_client import VOCABULARIES, post

SCENARIO = {
    "steps": [{"shell": {"command": "echo hi > out.txt"}}, {"write_file": {"path": "/w/a.txt", "content": "x"}}],
    "final_text": "finished",
}
TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}, {"name": "Write", "input_schema": {"type": "object"}}]


def request(messages, stream=True):
    return {"model": "claude-test", "max_tokens": 100, "stream": stream, "tools": TOOLS, "messages": messages}


def assistant_content(events):
    """Rebuild the assistant message from the stream, as a client accumulating deltas does."""
    blocks = {}
    for name, data in events:
        if name == "content_block_start":
            blocks[data["index"]] = {**data["content_block"], "_json": ""}
        elif name == "content_block_delta" and data["delta"]["type"] == "input_json_delta":
            blocks[data["index"]]["_json"] += data["delta"]["partial_json"]
        elif name == "content_block_delta":
            blocks[data["index"]]["text"] += data["delta"]["text"]
    content = []
    for block in blocks.values():
        partial = block.pop("_json")
        if block["type"] == "tool_use":
            block["input"] = json.loads(partial)
        content.append(block)
    return content


def test_a_shell_step_streams_as_one_tool_use_block_with_partial_json(model):
    model.load(SCENARIO, VOCABULARIES["anthropic-messages"])
    events = post(model, "/v1/messages", request([{"role": "user", "content": "go"}]))
    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert start["model"] == "claude-test" and start["role"] == "assistant"
    assert {"cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens"} <= set(start["usage"])
    (block,) = assistant_content(events)
    assert block["type"] == "tool_use" and block["name"] == "Bash" and block["id"].startswith("toolu_")
    assert block["input"] == {"command": "echo hi > out.txt"}
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert {"output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} <= set(delta["usage"])


def test_each_tool_result_sent_back_advances_the_script_until_the_final_text(model):
    model.load(SCENARIO, VOCABULARIES["anthropic-messages"])
    messages = [{"role": "user", "content": "go"}]
    names = []
    for _ in range(2):
        content = assistant_content(post(model, "/messages", request(messages)))
        names.append(content[0]["name"])
        messages += [
            {"role": "assistant", "content": content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": content[0]["id"], "content": "ok"}]},
        ]
    events = post(model, "/v1/messages", request(messages))
    assert names == ["Bash", "Write"]
    assert assistant_content(events) == [{"type": "text", "text": "finished"}]
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"


def test_a_request_without_stream_gets_one_message_object(model):
    model.load(SCENARIO, VOCABULARIES["anthropic-messages"])
    message = post(model, "/v1/messages", request([{"role": "user", "content": "go"}], stream=False))
    assert message["type"] == "message" and message["stop_reason"] == "tool_use"
    assert message["content"][0]["input"] == {"command": "echo hi > out.txt"}
    assert message["usage"]["cache_read_input_tokens"] == 0


def test_count_tokens_answers_a_count_and_is_recorded_as_a_side_request(model):
    model.load(SCENARIO, VOCABULARIES["anthropic-messages"])
    counted = post(model, "/v1/messages/count_tokens", request([{"role": "user", "content": "go"}]))
    assert isinstance(counted["input_tokens"], int) and counted["input_tokens"] > 0
    (record,) = model.transcript
    assert record.side and record.emitted is None and record.wire_api == "anthropic-messages"
