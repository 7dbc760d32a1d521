"""The real codex binary through the gate: launched with evidence for its exact build, refused without."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentbox.harnesses.installs import find_binary
from launch_helpers import CATALOGUE, RO, build_digest, cli, needs_bwrap, posing_as_observed, write_profile

REAL = find_binary("codex")  # resolved at import, from the user's own AGENTBOX_HOME, before tests move it
pytestmark = [
    needs_bwrap,
    pytest.mark.skipif(
        REAL is None or REAL.source != "agentbox",
        reason="codex is not installed: agent-box harness install codex@0.171.0",
    ),
]
HIDDEN_HOME = "  host_home: {access: hidden, requirement: required}\n"


@pytest.fixture
def codex(abhome) -> Path:
    """The installed codex, seen from the test's AGENTBOX_HOME, so the launch finds it as it would at home."""
    version_dir = Path(REAL.binary).parents[2]
    (abhome / "harnesses" / "codex").mkdir(parents=True)
    (abhome / "harnesses" / "codex" / REAL.version).symlink_to(version_dir)
    return Path(REAL.binary)


def test_codex_launches_through_the_gate_with_evidence_for_its_exact_build(tmp_path, abhome, ws, codex):
    from agentbox.prove.evidence import append
    from synthetic_evidence import proving_records

    store = tmp_path / "ev"
    capabilities = ["workspace.read_only", "host_home.hidden"]
    written = append(
        store, posing_as_observed(proving_records(CATALOGUE, "codex", REAL.version, build_digest(codex), capabilities))
    )
    done = cli("launch", write_profile(tmp_path, RO + HIDDEN_HOME), "--cwd", ws, "--evidence", store, "--", "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"codex-cli {REAL.version}"
    [run] = json.loads(cli("runs", "list", "--json").stdout)
    assert (run["status"], run["exit_status"], run["version"]) == ("finished", 0, REAL.version)
    assert run["binary_sha256"] == build_digest(codex)
    assert {i: c["verdict"] for i, c in run["claims"].items() if c["requirement"] == "required"} == {
        "workspace": "proven",
        "host_home": "proven",
    }
    assert len(run["evidence_ids"]) == written
    assert list(ws.iterdir()) == []


def test_codex_is_refused_without_evidence_and_the_refusal_is_recorded(tmp_path, abhome, ws, codex):
    (tmp_path / "ev").mkdir()
    done = cli(
        "launch",
        write_profile(tmp_path, RO + HIDDEN_HOME),
        "--cwd",
        ws,
        "--evidence",
        tmp_path / "ev",
        "--",
        "--version",
    )
    assert done.returncode == 3 and "codex-cli" not in done.stdout
    assert "agent-box prove" in done.stderr and f"--cwd {ws}" in done.stderr
    [run] = json.loads(cli("runs", "list", "--json").stdout)
    assert (run["status"], run["exit_status"]) == ("refused", 3)
    assert {run["claims"][i]["claim"] for i in ("workspace", "host_home")} == {"unverified"}
