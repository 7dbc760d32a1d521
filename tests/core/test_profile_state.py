"""Answers a person gives inside a launch that widen nothing come back at the profile's next launch; anything that
could widen the plan is dropped, and named, never silently. Claude Code's `.claude.json` is the harness case
(`KEPT_STATE`); the mechanism (`profile_state`) names no harness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentbox.compile.adapters.claude_code import KEPT_STATE
from agentbox.compile.compiler import compile_plan
from agentbox.core.profile import LoadedProfile, Profile
from agentbox.run.profile_state import keep, restore, state_dir
from agentbox.sandbox.session import entry_from_plan

WS = "/w"
ENTRY = {"state_files": [KEPT_STATE.model_dump(mode="json")]}
COMPILED = {"hasCompletedOnboarding": True, "projects": {WS: {"hasTrustDialogAccepted": True}}}


class Launch:
    """One launch's run folder: the compiled file the launcher writes, then what the harness leaves in it."""

    def __init__(self, tmp_path: Path, state: str, n: int):
        self.run_dir = tmp_path / f"run{n}"
        (self.run_dir / "config").mkdir(parents=True)
        self.file = self.run_dir / "config" / ".claude.json"
        self.file.write_text(json.dumps(COMPILED))
        self.state = state
        self.problems = restore(ENTRY, str(self.run_dir), state)

    def started_with(self) -> dict:
        return json.loads(self.file.read_text())

    def harness_writes(self, change) -> None:
        data = self.started_with()
        change(data)
        self.file.write_text(json.dumps(data))

    def ends(self) -> list[str]:
        return keep(ENTRY, str(self.run_dir), self.state)


@pytest.fixture
def launch(tmp_path):
    state = state_dir(tmp_path / "home", "reviewer", "claude-code")
    count = iter(range(100))
    return lambda: Launch(tmp_path, state, next(count))


def test_an_answer_that_widens_nothing_comes_back_at_the_next_launch(launch):
    first = launch()
    first.harness_writes(
        lambda d: d.update(numStartups=1, tipsHistory={"memory-command": 1}, lastReleaseNotesSeen="2.1.332")
    )
    assert first.ends() == []
    second = launch().started_with()
    assert (second["numStartups"], second["tipsHistory"], second["lastReleaseNotesSeen"]) == (
        1,
        {"memory-command": 1},
        "2.1.332",
    )


def test_a_widening_key_written_in_the_run_is_dropped_and_named(launch):
    first = launch()
    first.harness_writes(lambda d: d["projects"][WS].update(allowedTools=["Bash"]))
    said = first.ends()
    assert said == [
        '.claude.json: not kept: projects["/w"].allowedTools (could widen the permission rules: tools '
        "allowed without asking)"
    ]
    assert "allowedTools" not in json.dumps(launch().started_with())


def test_a_key_on_no_list_is_dropped_too_and_named_once_with_the_others_of_its_reason(launch):
    first = launch()
    first.harness_writes(lambda d: d.update(somethingNew=1, another={"x": 1}))
    said = first.ends()
    assert len(said) == 1
    assert "not kept: somethingNew, another (not on the list of answers that widen nothing" in said[0]
    assert set(launch().started_with()) == set(COMPILED)


def test_the_compiled_keys_win_over_the_kept_ones_at_the_next_launch(launch):
    first = launch()
    first.harness_writes(lambda d: (d.update(hasCompletedOnboarding=False), d["projects"][WS].update(lastCost=0.5)))
    first.ends()
    second = launch().started_with()
    assert second["hasCompletedOnboarding"] is True
    assert second["projects"][WS] == {"hasTrustDialogAccepted": True, "lastCost": 0.5}  # merged, map by map


def test_what_the_launcher_wrote_and_the_run_left_alone_is_not_named(launch):
    first = launch()  # the plan trusts the workspace at every start: nothing was lost by not keeping it
    first.harness_writes(lambda d: d.update(numStartups=1))
    assert first.ends() == []


@pytest.mark.parametrize("garbage", ['{"numStartups": 3, "projects": {', "[1, 2]", "\xff\xfe"])
def test_a_malformed_file_left_by_the_harness_is_reported_and_nothing_of_it_persists(launch, garbage):
    first = launch()
    first.harness_writes(lambda d: d.update(numStartups=1))
    first.ends()
    second = launch()
    second.file.write_bytes(garbage.encode("latin-1"))
    said = second.ends()
    assert len(said) == 1 and said[0].startswith(".claude.json written in the run is not") and "nothing" in said[0]
    assert launch().started_with()["numStartups"] == 1  # the kept state is the first launch's


def test_a_symlink_in_place_of_the_file_is_never_followed(launch, tmp_path):
    host_file = tmp_path / "host.json"  # any JSON file of the host the run could point at
    host_file.write_text(json.dumps({"numStartups": 99, "tipsHistory": {"secret": 1}}))
    first = launch()
    first.file.unlink()
    first.file.symlink_to(host_file)
    said = first.ends()
    assert said and "symlink" in said[0] and "nothing of it kept" in said[0]
    assert "secret" not in json.dumps(launch().started_with())


def test_a_kept_key_that_left_the_allowlist_is_not_brought_back(launch):
    first = launch()
    first.ends()
    kept = Path(first.state) / ".claude.json"
    kept.write_text(json.dumps({"numStartups": 2, "bypassPermissionsModeAccepted": True}))  # edited by hand
    second = launch().started_with()
    assert second["numStartups"] == 2 and "bypassPermissionsModeAccepted" not in second


def test_an_unreadable_kept_state_starts_the_run_from_the_compiled_file_and_says_so(launch):
    first = launch()
    first.ends()
    (Path(first.state) / ".claude.json").write_text("not json")
    second = launch()
    assert second.started_with() == COMPILED
    assert second.problems and "is not valid JSON" in second.problems[0]


def test_the_kept_state_lives_under_agentbox_home_by_profile_and_harness_readable_by_its_owner_alone(launch, tmp_path):
    first = launch()
    first.ends()
    kept = tmp_path / "home" / "state" / "reviewer" / "claude-code" / ".claude.json"
    assert kept.is_file() and oct(kept.stat().st_mode & 0o777) == "0o600"
    assert oct(kept.parent.stat().st_mode & 0o777) == "0o700"


def test_claude_codes_state_file_is_writable_in_the_run_while_its_policy_stays_read_only(tmp_path):
    profile = Profile.model_validate(
        {"name": "p", "harness": "claude-code", "model": {"base_url": "http://127.0.0.1:9/v1"}}
    )
    plan = compile_plan(
        LoadedProfile(profile=profile, source="<t>", digest="d"),
        str(tmp_path),
        harness_version="2.1.332",
        home="/home/u",
    )
    argv = plan.sandbox.argv
    ro = {argv[i + 2] for i, a in enumerate(argv) if a == "--ro-bind"}
    assert "/tmp/agentbox/config/settings.json" in ro and "/tmp/agentbox/config/mcp.json" in ro
    assert "/tmp/agentbox/config/.claude.json" not in ro
    assert entry_from_plan(plan, ())["state_files"] == ENTRY["state_files"]


def test_every_key_claude_code_keeps_or_drops_by_name_has_its_reason():
    for key, reason in {**KEPT_STATE.keep, **KEPT_STATE.widens}.items():
        assert len(reason) > 15, key
    assert not set(KEPT_STATE.keep) & set(KEPT_STATE.widens)


def test_the_mechanism_names_no_harness():
    import agentbox.run.profile_state as mechanism

    source = Path(mechanism.__file__).read_text().lower()
    assert all(name not in source for name in ("claude", "codex", "opencode", "hermes"))


def test_a_dropped_key_is_named_on_one_line_with_what_a_terminal_would_obey_escaped():
    from agentbox.run.profile_state import split

    key = "tip\nagent-box: after the run: nothing was left\x1b[8m"
    _, dropped = split({key: 1}, {"keep": []})
    [(name, _)] = dropped
    assert "\n" not in name and "\x1b" not in name
    assert name == "tip\\x0aagent-box: after the run: nothing was left\\x1b[8m"
