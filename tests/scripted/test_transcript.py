"""The transcript says what the harness offered, sent back and asked for; it judges nothing."""

from __future__ import annotations

from scripted_client import VOCABULARIES, post

SCENARIO = {
    "steps": [
        {"shell": {"command": "echo hi > /etc/nope"}},
        {"mcp_call": {"server": "canary", "tool": "denied_write", "arguments": {"path": "x", "content": "y"}}},
    ]
}
TOOLS = [{"name": "Bash", "input_schema": {}}, {"name": "Read", "input_schema": {}}]


def run_two_turns(model):
    model.load(SCENARIO, VOCABULARIES["anthropic-messages"])
    history = [{"role": "user", "content": "go"}]
    first = post(model, "/v1/messages?beta=true", {"model": "claude-a", "tools": TOOLS, "messages": history})
    call = first["content"][0]
    history += [
        {"role": "assistant", "content": [call]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call["id"],
                    "is_error": True,
                    "content": [{"type": "text", "text": "Permission denied"}],
                }
            ],
        },
    ]
    return post(model, "/messages", {"model": "claude-b", "tools": TOOLS, "messages": history})


def test_each_record_holds_api_path_model_tools_results_step_and_raw_request(model):
    run_two_turns(model)
    first, second = model.transcript
    assert (first.wire_api, first.path, first.model, first.step_index) == (
        "anthropic-messages",
        "/v1/messages?beta=true",
        "claude-a",
        0,
    )
    assert first.tools_offered == ("Bash", "Read") and first.tool_results == ()
    assert first.emitted.tool == "Bash" and first.emitted.arguments == {"command": "echo hi > /etc/nope"}
    (result,) = second.tool_results
    assert (result.text, result.is_error, result.step_index) == ("Permission denied", True, 0)
    assert second.request["model"] == "claude-b" and second.request["messages"][0]["content"] == "go"


def test_a_call_to_a_tool_the_harness_did_not_offer_is_emitted_and_flagged(model):
    run_two_turns(model)
    emitted = model.transcript[1].emitted
    assert emitted.tool == "mcp__canary__denied_write" and emitted.offered is False
    assert emitted.arguments == {"path": "x", "content": "y"}
    assert "mcp__canary__denied_write" not in model.offered_tools()


def test_the_helpers_answer_the_common_questions(model):
    run_two_turns(model)
    assert model.offered_tools() == {"Bash", "Read"}
    assert [r.call_id for r in model.tool_results()] == ["toolu_agentbox_0000"]
    assert len(model.requests_for("/v1/messages")) == len(model.requests_for("/messages")) == 2
    assert model.transcript.models() == {"claude-a", "claude-b"}
    assert [c.tool for c in model.transcript.emitted_calls()] == ["Bash", "mcp__canary__denied_write"]
    model.clear()
    assert model.transcript == []


def test_tools_claude_code_defers_behind_tool_search_still_count_as_offered(model):
    model.load(SCENARIO, VOCABULARIES["anthropic-messages"])
    system = (
        "Intro.\nThe following deferred tools are now available via ToolSearch. Use ToolSearch first:\n"
        "WebFetch\nmcp__canary__allowed_echo\n\nMore text."
    )
    post(
        model,
        "/v1/messages",
        {
            "model": "m",
            "system": [{"type": "text", "text": system}],
            "tools": TOOLS + [{"name": "DeferredToolPlaceholder", "defer_loading": True}],
            "messages": [{"role": "user", "content": "go"}],
        },
    )
    assert model.offered_tools() == {"Bash", "Read", "WebFetch", "mcp__canary__allowed_echo"}
