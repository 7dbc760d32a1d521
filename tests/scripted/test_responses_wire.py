"""OpenAI Responses, as Codex speaks it: SSE output items, function_call, function_call_output."""

from __future__ import annotations

import json

from scripted_client import VOCABULARIES, post

SCENARIO = {"steps": [{"shell": {"command": "touch proof"}}], "final_text": "finished"}
TOOLS = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]


def request(items, tools=TOOLS, stream=True):
    return {"model": "gpt-test", "stream": stream, "instructions": "be brief", "tools": tools, "input": items}


def done_items(events):
    return [data["item"] for name, data in events if name == "response.output_item.done"]


def test_a_shell_step_streams_as_a_function_call_item_and_a_completed_response(model):
    model.load(SCENARIO, VOCABULARIES["openai-responses"])
    events = post(model, "/v1/responses", request([{"type": "message", "role": "user", "content": "go"}]))
    names = [name for name, _ in events]
    assert names[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert names[-2:] == ["response.output_item.done", "response.completed"]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    (item,) = done_items(events)
    assert item["type"] == "function_call" and item["name"] == "exec_command"
    assert json.loads(item["arguments"]) == {"cmd": "touch proof"}
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed" and completed["output"] == [item]
    assert (
        completed["usage"]["total_tokens"] == completed["usage"]["input_tokens"] + completed["usage"]["output_tokens"]
    )


def test_the_function_call_output_sent_back_leads_to_the_final_message(model):
    model.load(SCENARIO, VOCABULARIES["openai-responses"])
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]
    (call,) = done_items(post(model, "/v1/responses", request(items)))
    items += [call, {"type": "function_call_output", "call_id": call["call_id"], "output": "exit 0"}]
    (message,) = done_items(post(model, "/responses", request(items)))
    assert message["type"] == "message" and message["content"][0]["text"] == "finished"


def test_a_tool_offered_inside_a_namespace_is_called_by_its_inner_name_and_namespace(model):
    model.load(
        {"steps": [{"mcp_call": {"server": "canary", "tool": "allowed_echo", "arguments": {"text": "hi"}}}]},
        VOCABULARIES["openai-responses"],
    )
    tools = TOOLS + [
        {
            "type": "namespace",
            "name": "mcp__canary",
            "tools": [{"type": "function", "name": "allowed_echo", "parameters": {}}],
        }
    ]
    (item,) = done_items(post(model, "/v1/responses", request("go", tools)))
    assert (item["name"], item["namespace"], json.loads(item["arguments"])) == (
        "allowed_echo",
        "mcp__canary",
        {"text": "hi"},
    )
    assert "mcp__canary__allowed_echo" in model.offered_tools()


def test_a_freeform_custom_tool_gets_its_input_as_raw_text(model):
    vocabulary = {
        "wire_api": "openai-responses",
        "write_file": {"tool": "apply_patch", "arguments": {"input": "*** Add File: {path}\n+{content}"}},
    }
    model.load({"steps": [{"write_file": {"path": "a.txt", "content": "x"}}]}, vocabulary)
    (item,) = done_items(post(model, "/v1/responses", request("go", [{"type": "custom", "name": "apply_patch"}])))
    assert item["type"] == "custom_tool_call" and item["input"] == "*** Add File: a.txt\n+x"


def test_a_request_without_stream_gets_one_response_object(model):
    model.load(SCENARIO, VOCABULARIES["openai-responses"])
    response = post(model, "/v1/responses", request("go", stream=False))
    assert response["object"] == "response" and response["output"][0]["type"] == "function_call"
