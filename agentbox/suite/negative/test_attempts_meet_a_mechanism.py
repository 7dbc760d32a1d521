"""An attempt counts only when it met a mechanism: a call the harness rejected for its arguments never did.

Each harness gets one shell call spelled with a wrong argument name (what a stale tool vocabulary would
send). Its tool answers with an argument error, nothing runs, and nothing is written, which an oracle alone
would read as `blocked`. The runner must call it an error instead, naming the rejected step."""

from __future__ import annotations

import pytest

from agentbox.testing.negative import VectorRunner
from agentbox.testing.session import session_key
from agentbox.prove.vectors import Vector

pytestmark = pytest.mark.negative

# a shell call with the argument name each tool does not take (claude-code, opencode, hermes take
# `command`; codex's exec_command takes `cmd`)
WRONG = {
    "claude-code": ("Bash", "cmd"),
    "codex": ("exec_command", "command"),
    "opencode": ("bash", "cmd"),
    "hermes": ("terminal", "cmd"),
}
RW = {"workspace": {"access": "read_write"}, "shell": {"access": "allow"}}


def test_a_call_whose_arguments_the_tool_rejects_is_an_error_never_blocked(request, harness, scripted_model):
    tool, argument = WRONG[harness.name]
    vector = Vector.model_validate(
        {
            "id": "wrong-arguments",
            "capability": "workspace.read_write",
            "surface": "shell",
            "layers": ["harness"],
            "description": "a shell call with a wrong argument name",
            "intent": RW,
            "control": {"intent": RW},
            "steps": [{"native_call": {"tool": tool, "arguments": {argument: "echo pwned > {ws}/escape.txt"}}}],
            "oracle": {"kind": "file_absent", "path": "{ws}/escape.txt"},
        }
    )
    session = request.config.stash[session_key]
    runner = VectorRunner(session.catalogue(), session.timeout, request.node.nodeid)
    attempt = runner.attempt(
        vector, "harness", False, harness, request.getfixturevalue("harness_probe"), scripted_model
    )
    assert attempt.effect is None, attempt.observation
    assert "never ran scripted step 0's call" in attempt.observation
