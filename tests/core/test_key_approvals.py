"""The profile names the model key, so a launch answers the harness's first-run question about it: Claude
Code's TUI would otherwise ask "Do you want to use this API key?" on every launch and, its state file
being read-only in the run, could not keep the answer ("ANTHROPIC_API_KEY not used here")."""

from __future__ import annotations

import json

from agentbox.compile.adapters import get_adapter
from agentbox.core.plan import CompileContext
from agentbox.core.profile import Profile
from agentbox.sandbox.session import settle_key_approvals


def claude(api_key_env: str | None = None):
    model = {"base_url": "http://127.0.0.1:9/v1"} | ({"api_key_env": api_key_env} if api_key_env else {})
    profile = Profile.model_validate({"name": "p", "harness": "claude-code", "model": model})
    return get_adapter("claude-code").compile(profile, CompileContext(cwd="/w", home="/h", harness_version="2.1.332"))


def entry(result) -> dict:
    return {"key_approvals": [a.model_dump(mode="json") for a in result.key_approvals]}


def test_a_launch_approves_the_key_the_profile_names_in_the_private_state_file(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True}))
    settle_key_approvals(entry(claude()), str(tmp_path), {"ANTHROPIC_API_KEY": "sk-ant-" + "x" * 30 + "TAIL"})
    state = json.loads((tmp_path / "config" / ".claude.json").read_text())
    assert state["customApiKeyResponses"] == {"approved": ["x" * 16 + "TAIL"], "rejected": []}
    assert state["hasCompletedOnboarding"] is True


def test_the_key_itself_is_never_part_of_the_compiled_plan():
    result = claude()
    assert "{key_suffix}" in json.dumps(entry(result))
    assert all("customApiKeyResponses" not in a.content for a in result.artifacts)


def test_an_unset_key_leaves_the_question_to_the_harness(tmp_path):
    (tmp_path / "config").mkdir()
    settle_key_approvals(entry(claude()), str(tmp_path), {})
    assert not (tmp_path / "config" / ".claude.json").exists()


def test_a_key_claude_code_reads_through_apikeyhelper_needs_no_approval():
    assert claude("MY_GATEWAY_KEY").key_approvals == ()
