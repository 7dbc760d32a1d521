"""The upgrade canary end to end: two real codex builds, a small vector catalogue, three runs.

Each run is `pytest --agentbox-canary` in an empty folder outside this checkout, as a user runs it. The first
run finds no evidence and re-verifies both versions (goldens, smokes, vectors) and diffs
0.171.0 against 0.147.0; the second finds everything current and reuses it without starting a
harness; the third carries a baseline entry that no longer fails and must fail as stale.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentbox.prove.claims import default_catalogue_dir

OLD, NEW = "0.147.0", "0.171.0"
# One vector per capability keeps the run short while every layer and the diff are exercised.
SUBSET = ("shell-deny-runs-nothing", "ws-ro-shell-redirect", "mcp-denied-tool-call", "net-curl")


@pytest.fixture(scope="module")
def codex_versions():
    for version in (OLD, NEW):
        done = subprocess.run(
            [sys.executable, "-m", "agentbox", "harness", "install", f"codex@{version}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0:
            pytest.fail(f"cannot install codex@{version}: {done.stderr or done.stdout}")
    return OLD, NEW


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory):
    out = tmp_path_factory.mktemp("catalogue")
    entries = []
    for path in sorted(default_catalogue_dir().glob("*.yaml")):
        entries += [e for e in yaml.safe_load(path.read_text()) or [] if e["id"] in SUBSET]
    assert sorted(e["id"] for e in entries) == sorted(SUBSET)
    (out / "subset.yaml").write_text(yaml.safe_dump(entries, sort_keys=False))
    return out


def _canary(evidence: Path, catalogue: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    """The canary as a user runs it: in a project folder of their own (empty here), with no test files, so
    the suite it runs is the one the package ships."""
    project = evidence.parent / f"{evidence.name}-project"
    project.mkdir(exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "--agentbox-canary",
        f"--agentbox-harness=codex@{OLD}",
        f"--agentbox-harness=codex@{NEW}",
        "--agentbox-require-harnesses",
        f"--agentbox-catalogue={catalogue}",
        f"--agentbox-evidence-dir={evidence}",
        "-n",
        "2",
        *extra,
    ]
    done = subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=1800)
    report = evidence / "canary-report.json"
    return done, (json.loads(report.read_text()) if report.exists() else {})


def _target(report: dict, version: str) -> dict:
    return next(t for t in report["targets"] if t["version"] == version)


@pytest.fixture(scope="module")
def first_run(codex_versions, catalogue, tmp_path_factory):
    evidence = tmp_path_factory.mktemp("evidence")
    done, report = _canary(evidence, catalogue)
    return evidence, done, report


def test_a_first_canary_reverifies_both_versions_and_diffs_the_new_one_against_the_old(first_run):
    _, done, report = first_run
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    old, new = _target(report, OLD), _target(report, NEW)
    assert old["action"] == new["action"] == "reverified"
    assert old["freshness_before"]["state"] == "missing"
    assert old["previous_version"] is None
    records = [json.loads(line) for line in (first_run[0] / "evidence.jsonl").read_text().splitlines()]
    # Both layers of every subset vector on both versions, and the sandbox-alone runs once.
    assert {(r["run_info"]["version"], r["layer"]) for r in records if r["run_info"]["harness"]} == {
        (v, layer) for v in (OLD, NEW) for layer in ("harness", "composed")
    }
    assert {r["vector_id"] for r in records} == set(SUBSET)
    assert new["previous_version"] == OLD
    # The diff names every capability the subset covers, each with its change.
    assert sorted(c["capability"] for c in new["changes"]) == sorted(
        ["shell.deny", "workspace.read_only", "mcp.allowlist", "command_network.none"]
    )
    assert all(c["change"] in ("improved", "regressed", "new", "removed", "unchanged") for c in new["changes"])
    assert all(c["old"] and c["new"] for c in new["changes"])
    # ... and every layer under the claims, vector by vector (a harness layer may weaken while a claim holds).
    assert {c["layer"] for c in new["layer_changes"]} == {"harness", "composed"}
    assert f"vs {OLD}:" in done.stdout
    assert "not the package's: what it verifies is not what the launch gate reads" in done.stdout  # a subset
    assert "canary: passed" in done.stdout


def test_a_second_canary_reuses_current_evidence_and_starts_no_harness(first_run, catalogue):
    evidence, _, _ = first_run
    before = (evidence / "evidence.jsonl").read_text().count("\n")
    done, report = _canary(evidence, catalogue)
    assert done.returncode == 0, done.stdout[-4000:]
    assert {t["action"] for t in report["targets"]} == {"reused"}, [t["freshness_before"] for t in report["targets"]]
    assert report["sandbox"][0]["state"] == "current"
    assert f"codex {NEW}: reused current evidence" in done.stdout, done.stdout
    # No vector ran, so nothing was appended; the goldens (no harness binary) still ran.
    assert (evidence / "evidence.jsonl").read_text().count("\n") == before
    assert _target(report, NEW)["previous_version"] == OLD


def test_a_baseline_entry_that_no_longer_fails_fails_the_canary_as_stale(first_run, catalogue, tmp_path):
    evidence, _, _ = first_run
    baseline = tmp_path / "expected-failures.yaml"
    stale = {
        "harness": "codex",
        "version": NEW,
        "backend": "bwrap",
        "capability": "shell.deny",
        "outcome": "refuted",
        "reason": "upstream bug 1234",
    }
    baseline.write_text(yaml.safe_dump({"schema_version": 2, "expected_failures": [stale]}))
    done, report = _canary(
        evidence, catalogue, f"--agentbox-baseline={baseline}", f"--agentbox-canary-report={tmp_path / 'report.json'}"
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert done.returncode == 1, done.stdout[-4000:]
    assert report["stale_baseline"] == [stale]
    assert f"stale baseline entry codex@{NEW} bwrap/shell.deny refuted" in done.stdout


def test_a_canary_that_runs_no_vector_for_a_build_it_was_to_reverify_fails_naming_the_build(
    codex_versions, catalogue, tmp_path
):
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    done, report = _canary(evidence, catalogue, "-k", "no_test_is_called_this")
    assert done.returncode == 1, done.stdout[-4000:]
    assert report["ran_nothing_for"] == [
        f"codex@{OLD}",
        f"codex@{NEW}",
        f"{report['sandbox'][0]['subject']} (sandbox alone)",
    ]
    assert f"FAIL codex@{NEW}: to be re-verified, and no vector ran for it" in done.stdout
    assert "canary: FAILED (" in done.stdout
