"""The negative runner counts only an attempt that met the sandbox: anything else is an error, never a block."""

from __future__ import annotations

import shutil

import pytest

from agentbox.claims import default_catalogue_dir
from agentbox.testing.negative import VectorRunner
from agentbox.vectors import load_catalogue

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
    assert record.control_outcome == "passed"
    assert record.outcome == "error", record.observation
    assert ("the sandbox failed" if how == "fails" else "the attempt never started") in record.observation


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
    assert "blocked, but the refusal seen was not one expected (expected erofs|eacces|eperm|policy" in \
        attempt.observation
