"""`agent-box acp` keeps the agent's answers that widen nothing for the profile's next run, as `launch` does: the
endpoint's run starts from them and, when it closes, keeps its own and names on stderr what it drops."""

from __future__ import annotations

import json

from agentbox.acp_endpoint.notes import note
from agentbox.compile.compiler import compile_plan
from agentbox.core.profile import LoadedProfile, Profile
from agentbox.run.lifecycle import sandboxed
from agentbox.sandbox.session import entry_from_plan


def test_an_endpoint_run_starts_from_the_kept_answers_and_keeps_its_own_when_it_closes(tmp_path, capfd):
    profile = Profile.model_validate({"name": "p", "harness": "claude-code"})
    project = tmp_path / "project"  # beside the run folder and the kept state: a run may write neither
    project.mkdir()
    plan = compile_plan(
        LoadedProfile(profile=profile, source="<t>", digest="d"),
        str(project),
        harness_version="2.1.332",
        home="/home/u",
    )
    entry, state = entry_from_plan(plan, ()), tmp_path / "state"
    state.mkdir()
    (state / ".claude.json").write_text(json.dumps({"numStartups": 4}))
    # as `serve` runs it: the lifecycle every run has, its lines for the user through the endpoint's notes
    with sandboxed(entry, str(tmp_path / "run"), run_id="r1", serve_later=True, state_dir=str(state), tell=note):
        file = tmp_path / "run" / "config" / ".claude.json"
        answers = json.loads(file.read_text())
        assert answers["numStartups"] == 4 and answers["hasCompletedOnboarding"] is True
        file.write_text(json.dumps({**answers, "numStartups": 5, "bypassPermissionsModeAccepted": True}))
    assert json.loads((state / ".claude.json").read_text()) == {"hasCompletedOnboarding": True, "numStartups": 5}
    assert (
        "agent-box acp: .claude.json: not kept: bypassPermissionsModeAccepted (could widen every item"
        in capfd.readouterr().err
    )
