"""Two launches of one profile, the real Claude Code TUI inside the compiled plan: what it saved in `.claude.json`
that widens nothing (its start counter, tips shown, release notes seen) comes back in the next launch, while a
grant a command inside the run wrote there (`projects.<workspace>.allowedTools: ["Bash"]`) is dropped, named on
the way out, and absent from the next launch. The escape catalogue cannot say this (a vector is one run), so it is
a conformance test; the kept state is the launch's (`profile_state`), through `RunRequest.state_dir`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentbox

from agentbox.testing.fixtures import scripted_key_env, scripted_profile
from agentbox.testing.session import session_key
from agentbox.testing.tui import TuiFailed, exchange

ANSWER = "kept-state-5d2e"
SHELL_ALLOWED = {
    "workspace": {"access": "read_write", "requirement": "required"},
    "shell": {"access": "allow", "requirement": "advisory"},
    "command_network": {"access": "none", "requirement": "required"},
}
# what a command inside the run does: grant itself Bash in the harness's state file, for a later launch to find
GRANT = (
    "python3 -c \"import json,os; p=os.environ['CLAUDE_CONFIG_DIR']+'/.claude.json'; d=json.load(open(p)); "
    "d.setdefault('projects',{}).setdefault(os.getcwd(),{})['allowedTools']=['Bash']; "
    "json.dump(d,open(p,'w'))\""
)
GRANT_ATTEMPTS = 3
_REPO = Path(agentbox.__file__).resolve().parents[1]  # the import root, bound read-only for the helpers

pytestmark = [pytest.mark.smoke, pytest.mark.harness("claude-code")]


def test_answers_that_widen_nothing_come_back_in_the_next_launch_and_a_grant_written_in_the_run_does_not(
    harness, request, scripted_model, agentbox_workspace, tmp_path
):
    from agentbox.core.profile import LoadedProfile, Profile

    adapter = harness.adapter()
    profile = Profile.model_validate(scripted_profile(harness, scripted_model, SHELL_ALLOWED, name="kept-state"))
    loaded = LoadedProfile(profile=profile, source="<test>", digest="test")
    timeout = request.config.stash[session_key].timeout
    ws = str(agentbox_workspace.project)

    # Claude Code rewrites the project's entry at exit, sometimes from its own cached copy (seen under load in CI):
    # then the grant is gone before the launch could drop it, and this launch proves nothing about the filter.
    # A fresh launch (and kept state) is taken until the grant was in the file at exit.
    for attempt in range(GRANT_ATTEMPTS):
        kept_dir = str(tmp_path / f"state-{attempt}")
        scripted_model.load({"steps": [{"shell": {"command": GRANT}}], "final_text": ANSWER}, adapter.tool_vocabulary)
        first = _launch(harness, adapter, loaded, agentbox_workspace, kept_dir, timeout)
        if first.ended_with["projects"][ws].get("allowedTools") == ["Bash"]:
            break
    else:
        pytest.fail(f"in {GRANT_ATTEMPTS} launches, Claude Code's exit write never left the run's grant in the file")
    assert first.started_with.get("numStartups") is None
    assert any("allowedTools (could widen the permission rules" in line for line in first.said), first.said

    scripted_model.load({"steps": [], "final_text": ANSWER}, adapter.tool_vocabulary)
    second = _launch(harness, adapter, loaded, agentbox_workspace, kept_dir, timeout)
    assert second.started_with["numStartups"] == first.ended_with["numStartups"] >= 1
    assert second.started_with.get("tipsHistory") == first.ended_with.get("tipsHistory")
    assert second.started_with.get("lastReleaseNotesSeen") == first.ended_with.get("lastReleaseNotesSeen")
    assert "allowedTools" not in second.started_with["projects"][ws]
    assert second.ended_with["numStartups"] == first.ended_with["numStartups"] + 1, (
        "Claude Code counted on from the kept answer"
    )
    assert second.started_with["projects"][ws]["hasTrustDialogAccepted"] is True  # the plan's own key
    print("first launch said:", *first.said, "second launch said:", *second.said, sep="\n  ")


class _Seen:
    def __init__(self) -> None:
        self.started_with: dict = {}
        self.ended_with: dict = {}
        self.said: list[str] = []


def _launch(harness, adapter, loaded, ws, kept_dir: str, timeout: float) -> _Seen:
    """One TUI launch: a prompt, its answer, /exit; the state file as the run began and ended, what was said."""
    from agentbox.run.harness_run import RunRequest, prepared

    req = RunRequest(
        loaded=loaded,
        probe=adapter.probe(harness.binary),
        workspace=str(ws.project),
        home=str(ws.home),
        prompt="",
        timeout=timeout,
        extra_env=scripted_key_env(harness),
        ro_binds=(str(_REPO),),
        state_dir=kept_dir,
    )
    seen = _Seen()
    with prepared(req, command=lambda r: [harness.binary, *adapter.interactive_argv(r, [])]) as run:
        state = Path(run.run_dir) / "config" / ".claude.json"
        seen.started_with = json.loads(state.read_text())
        try:
            exchange(run, req, harness.name, "go", ANSWER)
        except TuiFailed as exc:
            pytest.fail(str(exc))
        seen.ended_with = json.loads(state.read_text())
    seen.said = run.state_notes
    return seen
