"""The next step is read from the request's history alone, so retries and parallel runs stay in step."""

from __future__ import annotations

from scripted_client import VOCABULARIES, post

VOCABULARY = VOCABULARIES["openai-chat"]
TOOLS = [{"type": "function", "function": {"name": "bash"}}]
THREE = {"steps": [{"shell": {"command": "one"}}, {"shell": {"command": "two"}}, {"shell": {"command": "three"}}]}


def ask(model, messages):
    completion = post(model, "/v1/chat/completions", {"model": "m", "tools": TOOLS, "messages": messages})
    return completion["choices"][0]["message"]


def answered(messages, message, result="ok"):
    """The history after the harness ran `message`'s tool call and sent the result back."""
    (call,) = message["tool_calls"]
    return messages + [message, {"role": "tool", "tool_call_id": call["id"], "content": result}]


def command(message):
    import json

    return json.loads(message["tool_calls"][0]["function"]["arguments"])["command"]


def test_the_same_request_sent_twice_gets_the_same_step(model):
    model.load(THREE, VOCABULARY)
    history = [{"role": "user", "content": "go"}]
    assert command(ask(model, history)) == command(ask(model, history)) == "one"


def test_two_interleaved_conversations_each_follow_their_own_history(model):
    model.load(THREE, VOCABULARY)
    a = [{"role": "user", "content": "a"}]
    b = [{"role": "user", "content": "b"}]
    a = answered(a, ask(model, a))
    assert command(ask(model, a)) == "two"
    assert command(ask(model, b)) == "one"


def test_calls_the_script_did_not_issue_do_not_move_it(model):
    model.load(THREE, VOCABULARY)
    foreign = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_xyz", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
    }
    history = answered([{"role": "user", "content": "go"}], foreign)
    assert command(ask(model, history)) == "one"


def test_a_final_text_step_ends_the_turn_and_the_next_user_turn_takes_the_next_step(model):
    model.load(
        {"steps": [{"shell": {"command": "one"}}, {"final_text": {"text": "half way"}}, {"shell": {"command": "two"}}]},
        VOCABULARY,
    )
    history = [{"role": "user", "content": "go"}]
    history = answered(history, ask(model, history))
    halfway = ask(model, history)
    assert halfway == {"role": "assistant", "content": "half way"}
    history += [halfway, {"role": "user", "content": "continue"}]
    assert command(ask(model, history)) == "two"


def test_after_the_last_step_every_request_gets_the_closing_text(model):
    model.load({"steps": [{"shell": {"command": "one"}}], "final_text": "all done"}, VOCABULARY)
    history = answered([{"role": "user", "content": "go"}], ask(model, [{"role": "user", "content": "go"}]))
    closing = ask(model, history)
    assert closing["content"] == "all done" and "tool_calls" not in closing
    assert ask(model, history + [closing, {"role": "user", "content": "more?"}])["content"] == "all done"
    assert [r.step_index for r in model.transcript] == [0, None, None]


def test_a_model_with_no_scenario_loaded_just_says_done(model):
    assert ask(model, [{"role": "user", "content": "hi"}])["content"] == "done"
