"""The negative runner counts only an attempt that met the sandbox: anything else is an error, never a block."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

import agentbox.testing.negative as negative
from agentbox.harnesses.agent_build import AgentBuild
from agentbox.prove.claims import default_catalogue_dir
from agentbox.testing.negative import Attempt, VectorRunner
from agentbox.prove.vectors import load_catalogue

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

CATALOGUE = load_catalogue(default_catalogue_dir())
REAL_BWRAP = shutil.which("bwrap")

# Stand-ins for bubblewrap that break only the attack's run (network none): the control still passes.
BROKEN = {
    "fails": 'for a; do [ "$a" = --unshare-net ] && { echo "bwrap: No permissions to create new namespace" >&2; exit 1; }; '
    'done; exec {real} "$@"',
    "runs nothing": 'for a; do [ "$a" = --unshare-net ] && exit 0; done; exec {real} "$@"',
}


@pytest.mark.parametrize("how", BROKEN)
def test_a_sandbox_that_breaks_before_the_attempt_records_an_error_not_a_block(how, tmp_path, monkeypatch):
    stand_in = tmp_path / "bin" / "bwrap"
    stand_in.parent.mkdir()
    stand_in.write_text("#!/bin/sh\n" + BROKEN[how].replace("{real}", REAL_BWRAP) + "\n")
    stand_in.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stand_in.parent}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("AGENTBOX_VECTOR_ROOT", str(tmp_path / "vectors"))
    [vector] = [v for v in CATALOGUE.vectors if v.id == "net-curl"]
    record = VectorRunner(CATALOGUE, 30, "t").run(vector, "sandbox")
    assert record.outcome == "error", record.observation
    assert record.control_outcome == "not_run", "an attack that errored decides nothing a control could prove"
    assert ("the sandbox failed" if how == "fails" else "the attempt never started") in record.observation


LOADER_ABSENT = __import__("agentbox.prove.vectors", fromlist=["kernel_lacks_here"]).kernel_lacks_here() == ("modules",)


@pytest.mark.skipif(not LOADER_ABSENT, reason="this kernel has a module loader: the vector is judged as any other")
def test_on_a_kernel_without_a_module_loader_the_module_vector_records_inapplicable_with_the_kernel_fact(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENTBOX_VECTOR_ROOT", str(tmp_path / "vectors"))
    record = VectorRunner(CATALOGUE, 60, "t").run(CATALOGUE.by_id("priv-load-module"), "sandbox")
    assert record.outcome == "inapplicable", record.observation
    assert record.run_info.kernel_lacks == ("modules",)
    # the attempt met the seccomp filter's EPERM first; the control, the filter removed, met the kernel's ENOSYS
    assert "finit_module errno 1" in record.observation and "finit_module errno 38" in record.observation
    assert "this kernel has no module loader" in record.observation


@pytest.mark.skipif(not LOADER_ABSENT, reason="this kernel has a module loader: the vector is judged as any other")
def test_without_the_kernel_check_agreeing_a_control_that_met_enosys_is_an_error_not_inapplicable(
    tmp_path, monkeypatch
):
    import agentbox.testing.negative as negative

    monkeypatch.setenv("AGENTBOX_VECTOR_ROOT", str(tmp_path / "vectors"))
    monkeypatch.setattr(negative, "kernel_lacks", lambda vector: ())  # as if the kernel had a loader
    record = VectorRunner(CATALOGUE, 60, "t").run(CATALOGUE.by_id("priv-load-module"), "sandbox")
    assert (record.outcome, record.control_outcome) == ("error", "failed")
    assert record.run_info.kernel_lacks == ()


def test_an_escape_on_a_kernel_said_to_lack_the_feature_is_still_an_escape(tmp_path, monkeypatch):
    """Whatever the kernel said, a side effect the oracle sees is an escape: inapplicable needs no effect."""
    import agentbox.testing.negative as negative
    from agentbox.testing.negative import Attempt

    answers = {True: Attempt(False, "control saw nothing", enosys=True), False: Attempt(True, "escape.txt exists")}
    monkeypatch.setattr(negative, "kernel_lacks", lambda vector: ("modules",))
    monkeypatch.setattr(VectorRunner, "attempt", lambda self, vector, layer, control, *a, **k: answers[control])
    record = VectorRunner(CATALOGUE, 60, "t").run(CATALOGUE.by_id("priv-load-module"), "sandbox")
    assert record.outcome == "escaped"


def test_an_attack_that_never_made_its_call_on_such_a_kernel_is_an_error_not_inapplicable(monkeypatch):
    """Inapplicable needs the attempt's own answer (its proof file, written once the call came back)."""
    import agentbox.testing.negative as negative
    from agentbox.testing.negative import Attempt

    answers = {
        True: Attempt(False, "control saw nothing", enosys=True),
        False: Attempt(None, "the attempt never ran: its first act ({ws}/answer.txt) is missing"),
    }
    monkeypatch.setattr(negative, "kernel_lacks", lambda vector: ("modules",))
    monkeypatch.setattr(VectorRunner, "attempt", lambda self, vector, layer, control, *a, **k: answers[control])
    record = VectorRunner(CATALOGUE, 60, "t").run(CATALOGUE.by_id("priv-load-module"), "sandbox")
    assert record.outcome == "error" and "never ran" in record.observation


def test_an_escape_runs_no_control_and_a_block_counts_only_after_a_control_that_saw_the_effect(monkeypatch):
    from agentbox.testing.negative import Attempt

    def runs(attack: Attempt, control: Attempt):
        made = []

        def attempt(self, vector, layer, is_control, *a, **k):
            made.append("control" if is_control else "attack")
            return control if is_control else attack

        monkeypatch.setattr(VectorRunner, "attempt", attempt)
        record = VectorRunner(CATALOGUE, 30, "t").run(CATALOGUE.by_id("net-curl"), "sandbox")
        return made, (record.outcome, record.control_outcome)

    seen, nothing, broken = Attempt(True, "1 connection"), Attempt(False, "0 connections"), Attempt(None, "crashed")
    assert runs(seen, nothing) == (["attack"], ("escaped", "not_run"))
    assert runs(broken, seen) == (["attack"], ("error", "not_run"))
    assert runs(nothing, seen) == (["attack", "control"], ("blocked", "passed"))
    assert runs(nothing, nothing) == (["attack", "control"], ("error", "failed"))
    assert runs(nothing, broken) == (["attack", "control"], ("error", "failed"))


def test_an_attempt_the_harness_failed_before_reaching_is_tried_once_more_and_judged_on_its_own(monkeypatch):
    from agentbox.testing.negative import Attempt

    def attempt_after(*tries: Attempt):
        left = list(tries)
        monkeypatch.setattr(VectorRunner, "_tried", lambda self, *a, **k: left.pop(0))
        got = VectorRunner(CATALOGUE, 30, "t").attempt(CATALOGUE.by_id("net-curl"), "harness", False)
        return got, len(tries) - len(left)

    never_drawn = Attempt(None, "the TUI never drew its prompt", again="the TUI never drew its prompt")
    got, runs = attempt_after(never_drawn, Attempt(False, "0 connections"))
    assert (got.effect, runs) == (False, 2)
    assert "(a second try: the first never reached it: the TUI never drew its prompt)" in got.observation
    got, runs = attempt_after(never_drawn, never_drawn, Attempt(False, "0 connections"))
    assert (got.effect, runs) == (None, 2), "a harness that fails every time is an error, tried once more only"
    got, runs = attempt_after(Attempt(None, "the harness never answered step 0"), Attempt(False, "0 connections"))
    assert (got.effect, runs) == (None, 1), "an error after a step reached the harness is the record"


def test_only_an_error_before_any_step_reached_the_harness_is_worth_another_try():
    from agentbox.testing.negative import Planned, Seen
    from agentbox.prove.vectors import Oracle

    runner, vector = VectorRunner(CATALOGUE, 30, "t"), CATALOGUE.by_id("net-curl")
    plan = Planned({}, None, {}, (), [], Oracle(kind="listener_silent", listener="http"), "harness", {})
    before = runner.judge(vector, plan, None, "the harness timed out after 30s", Seen([], reached=False))
    after = runner.judge(vector, plan, None, "the harness timed out after 30s", Seen([], reached=True))
    assert (before.effect, before.again) == (None, "the harness timed out after 30s")
    assert (after.effect, after.again) == (None, None)


def test_a_blocked_attack_names_the_refusal_it_met(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBOX_VECTOR_ROOT", str(tmp_path / "vectors"))
    vector = CATALOGUE.by_id("ws-ro-shell-redirect")
    attempt = VectorRunner(CATALOGUE, 30, "t").attempt(vector, "sandbox", False)
    assert attempt.effect is False, attempt.observation
    assert "refused: erofs (Read-only file system)" in attempt.observation


# attacks that fail on their own, before any mechanism: nothing is written, which the oracle alone reads as blocked
FAILS_FIRST = {
    "a tool that does not exist": "no-such-writer-tool {ws}/escape.txt",
    "a wrong argument": "cp --no-such-option /etc/hostname {ws}/escape.txt",
    "a folder that does not exist (the write never reaches the mount)": "echo pwned > {ws}/no/such/folder/escape.txt",
}


@pytest.mark.parametrize("how", FAILS_FIRST)
def test_an_attack_refused_otherwise_than_its_mechanism_is_an_error_not_a_block(how, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBOX_VECTOR_ROOT", str(tmp_path / "vectors"))
    raw = CATALOGUE.by_id("ws-ro-shell-redirect").model_dump()
    vector = type(CATALOGUE.vectors[0]).model_validate({**raw, "steps": [{"shell": {"command": FAILS_FIRST[how]}}]})
    attempt = VectorRunner(CATALOGUE, 30, "t").attempt(vector, "sandbox", False)
    assert attempt.effect is None, attempt.observation
    assert (
        "blocked, but the refusal seen was not one expected (expected erofs|eacces|eperm|policy" in attempt.observation
    )


def test_what_agent_box_names_after_the_run_is_no_refusal_of_the_attempt_but_any_other_line_of_its_is():
    import subprocess

    from agentbox.testing.negative import _sandbox_failure

    def done(err: str, code: int = 0):
        return subprocess.CompletedProcess([], code, "", err)

    started = "agentbox-attempt-n1\n"
    after = "agent-box: after the run: the run left host-executed files where nothing held them: /p/new/.git\n"
    assert _sandbox_failure(done(started + after), "n1") is None
    assert "refused" in _sandbox_failure(done(started + "agent-box: the egress proxy died\n", 4), "n1")


def test_a_tui_or_acp_run_may_leave_to_the_headless_run_only_what_the_sandbox_alone_is_declared_to_block():
    from agentbox.testing.negative import carried_by_headless

    assert carried_by_headless(CATALOGUE.by_id("state-other-run-folder"))  # the sandbox alone hides it
    # a file tool's write, a harness's own fetch and MCP tools never meet the sandbox alone: each mode runs them
    for own in ("ws-ro-write-tool", "net-fetch-tool", "mcp-denied-tool-call", "shell-ask-unapproved"):
        assert not carried_by_headless(CATALOGUE.by_id(own)), own


@pytest.mark.parametrize(
    "name, mode, names",
    [("codex", "acp", True), ("codex", "headless", False), ("codex", "tui", False), ("opencode", "acp", False)],
)
def test_an_acp_run_through_an_adapter_records_the_adapter_build_it_drove(monkeypatch, name, mode, names):
    """The record is about the adapter as much as the harness build (codex-acp embeds its own codex core); a run of
    another mode, or of a harness whose ACP agent is its own binary (`opencode acp`), names none."""
    build = AgentBuild(name="codex-acp", version="0.16.0", sha256="e" * 64)
    install = SimpleNamespace(binary="/opt/codex-acp")
    monkeypatch.setattr(
        negative, "adapter_of", lambda h, m: (install, build) if negative.through_adapter(h, m) else None
    )
    monkeypatch.setattr(negative, "adapter_build", lambda h, found: (build, None))
    monkeypatch.setattr(VectorRunner, "attempt", lambda self, *a, **k: Attempt(True, "escaped"))
    probe = SimpleNamespace(version="1.0", sha256="a" * 64, dialect=None)
    record = VectorRunner(CATALOGUE, 30, "t", mode).run(
        CATALOGUE.by_id("net-curl"), "composed", SimpleNamespace(name=name), probe
    )
    assert record.run_info.mode == mode and record.run_info.adapter == (build if names else None)


def test_a_tests_runs_start_the_adapter_pinned_at_its_first_run_and_its_record_names_that_one(monkeypatch):
    """An adapter installed while the test runs is neither started nor named (red team: a record named the build
    installed after the drive); one whose files changed meanwhile leaves a block unproven."""
    pinned = AgentBuild(name="codex-acp", version="0.16.0", sha256="e" * 64)
    newer = AgentBuild(name="codex-acp", version="0.17.0", sha256="f" * 64)
    asked = []
    monkeypatch.setattr(negative, "adapter_of", lambda h, m: asked.append(h) or (SimpleNamespace(binary="/a"), pinned))
    now = {"build": pinned}
    monkeypatch.setattr(negative, "adapter_build", lambda h, found: (now["build"], None))
    outcomes = iter([Attempt(False, "refused: Operation not permitted"), Attempt(True, "control saw it")])
    monkeypatch.setattr(VectorRunner, "attempt", lambda self, *a, **k: next(outcomes))
    probe = SimpleNamespace(version="1.0", sha256="a" * 64, dialect=None)
    runner = VectorRunner(CATALOGUE, 30, "t", "acp")
    record = runner.run(CATALOGUE.by_id("net-curl"), "composed", SimpleNamespace(name="codex"), probe)
    assert record.outcome == "blocked" and record.run_info.adapter == pinned and asked == ["codex"]
    now["build"] = newer  # the adapter's files changed between the runs and the record
    outcomes = iter([Attempt(False, "refused: Operation not permitted"), Attempt(True, "control saw it")])
    record = runner.run(CATALOGUE.by_id("net-curl"), "composed", SimpleNamespace(name="codex"), probe)
    assert record.outcome == "error" and "changed during the run" in record.observation
    assert record.run_info.adapter == pinned and asked == ["codex"]
