"""`agent-box prove` with the real codex: it runs the vectors of exactly the items the gate refuses, in the modes
that settle them, and afterwards `agent-box launch` of the same profile passes the gate with no other command."""

from __future__ import annotations

import json

from launch_helpers import RW, cli, needs_bwrap, prove, write_profile

pytestmark = needs_bwrap
SHELL_DENY = "  shell: {access: deny, requirement: required}\n"


def test_prove_runs_the_refused_items_vectors_headless_then_in_the_tui_and_the_launch_then_passes(
    tmp_path, ws, real_codex
):
    profile = write_profile(tmp_path, SHELL_DENY)
    store = tmp_path / "ev"  # prove makes the store it is the first to write
    done = cli("prove", profile, "--cwd", ws, "--evidence", store, "--json", "--timeout", "300", timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    answer = json.loads(done.stdout)  # pytest's progress went to stderr
    assert [(p["mode"], p["capabilities"], p["exit_status"]) for p in answer["passes"]] == [
        ("headless", ["shell.deny"], 0),
        ("tui", ["shell.deny"], 0),
    ]
    assert answer["items"]["shell"]["claim"] == "exact" and answer["launch"] == {"allowed": True, "refusal": None}
    records = [json.loads(line) for line in (store / "evidence.jsonl").read_text().splitlines()]
    # only the refused item's vectors ran: every record is of its capability
    assert {r["capability"] for r in records} == {"shell.deny"}
    assert {(r["layer"], r["run_info"]["mode"]) for r in records} >= {("composed", "headless"), ("composed", "tui")}
    launched = cli("launch", profile, "--cwd", ws, "--evidence", store, "--", "--version")
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout.strip().startswith("codex-cli")


def test_prove_of_a_profile_whose_items_are_proven_runs_nothing_and_says_launch_would_pass(tmp_path, ws, real_codex):
    profile = write_profile(tmp_path, SHELL_DENY)
    store = tmp_path / "ev"
    store.mkdir()
    for mode in ("headless", "tui"):
        prove(store, real_codex, ["shell.deny"], mode=mode)
    before = (store / "evidence.jsonl").read_text()
    done = cli("prove", profile, "--cwd", ws, "--evidence", store)
    assert done.returncode == 0, done.stderr
    assert "prove: nothing to run: every required item is proven" in done.stdout
    assert f"agent-box launch would pass the gate: agent-box launch {profile} --cwd {ws}" in done.stdout
    assert (store / "evidence.jsonl").read_text() == before  # no vector ran


def test_an_item_the_plan_cannot_enforce_is_no_question_of_evidence_and_prove_runs_nothing_for_it(
    tmp_path, ws, real_codex
):
    # shell ask: codex asks only in its TUI (partial), and the OS sandbox cannot tell its shell tool apart
    profile = write_profile(tmp_path, "  shell: {access: ask, requirement: required}\n")
    done = cli("prove", profile, "--cwd", ws, "--evidence", tmp_path / "ev", "--json")
    assert done.returncode == 3
    answer = json.loads(done.stdout)
    assert answer["passes"] == [] and answer["launch"]["allowed"] is False
    assert "shell (shell.ask)" in answer["launch"]["refusal"] and "plan layer" in answer["launch"]["refusal"]


def test_prove_says_when_the_gate_would_pass_and_the_start_refuse_a_profile_the_run_could_rewrite(
    abhome, ws, real_codex
):
    profile = write_profile(ws, RW)  # inside the read_write workspace: a run could rewrite what launch reads back
    store = abhome / "evidence"  # the default store, made by prove had it not been there
    store.mkdir()
    for mode in ("headless", "tui"):
        prove(store, real_codex, ["workspace.read_write"], mode=mode)
    done = cli("prove", profile, "--cwd", ws, "--json")
    assert done.returncode == 4, done.stderr
    answer = json.loads(done.stdout)
    assert answer["passes"] == [] and answer["launch"]["allowed"] is False
    assert f"the profile {profile} is inside {ws}, which this run can write" in answer["launch"]["refusal"]
    launched = cli("launch", profile, "--cwd", ws, "--", "--version")
    assert launched.returncode == 4  # as prove said


def test_prove_makes_the_default_evidence_store_on_a_fresh_home(abhome, tmp_path, ws, real_codex):
    assert not (abhome / "evidence").exists()
    done = cli("prove", write_profile(tmp_path, "  shell: {access: ask, requirement: required}\n"), "--cwd", ws)
    assert done.returncode == 3, done.stderr  # refused on the plan layer: nothing to run, and no "no such store"
    assert (abhome / "evidence").is_dir() and "no such evidence store" not in done.stderr
