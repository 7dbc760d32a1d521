"""The GitHub Actions workflows: actionlint finds nothing, and the jobs are wired as the README says."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.y*ml"))


def _workflow(name: str) -> dict:
    return yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint_finds_nothing(path):
    binary = shutil.which("actionlint")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("actionlint is not installed (pip install -e '.[test]' ships it)")
        pytest.skip("actionlint is not installed (pip install -e '.[test]' ships it)")
    done = subprocess.run(
        [binary, "-format", "{{json .}}", str(path)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    findings = json.loads(done.stdout or "[]")
    assert findings == [], "\n".join(f"{f['filepath']}:{f['line']}:{f['column']}: {f['message']}" for f in findings)
    assert done.returncode == 0, done.stderr


def test_the_conformance_jobs_are_one_per_version_of_the_supported_matrix_and_launch_mode():
    jobs = _workflow("ci.yml")["jobs"]
    plan = "\n".join(step.get("run", "") for step in jobs["plan"]["steps"])
    assert 'agent-box matrix list --matrix "$MATRIX" --json' in plan
    assert _workflow("ci.yml")["env"]["MATRIX"] == "matrices/supported.yaml"
    conformance = jobs["conformance"]
    assert conformance["needs"] == "plan"
    assert conformance["strategy"]["matrix"]["cell"] == "${{ fromJSON(needs.plan.outputs.cells) }}"
    # the modes the gate reads claims for: the conformance run's, `agent-box launch`'s and `agent-box acp`'s
    assert conformance["strategy"]["matrix"]["mode"] == ["headless", "tui", "acp"]
    # the older versions headless only: their TUI and ACP runs stay in tox (issue 27)
    assert conformance["strategy"]["matrix"]["exclude"] == "${{ fromJSON(needs.plan.outputs.excluded) }}"
    assert "agent-box matrix list --matrix matrices/default.yaml --json" in plan
    runs = "\n".join(step.get("run", "") for step in conformance["steps"])
    assert 'tox -e "$TOX_ENV" -- --agentbox-mode "$MODE"' in runs
    # a tui or acp job leaves out what the sandbox alone blocks: the headless job's records carry it
    assert 'if [ "$MODE" != headless ]; then only=(-m negative --agentbox-carry); fi' in runs
    upload = next(s for s in conformance["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "evidence-${{ matrix.cell.id }}-${{ matrix.mode }}"


def test_the_report_job_merges_every_evidence_artifact_and_uploads_the_report():
    report = _workflow("ci.yml")["jobs"]["report"]
    assert report["needs"] == "conformance"
    download = next(s for s in report["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == "evidence-*"
    runs = "\n".join(step.get("run", "") for step in report["steps"])
    assert "agent-box evidence merge evidence/*/ -o evidence-merged" in runs
    assert re.search(
        r"agent-box report --evidence evidence-merged -o report/report.html\s*\\?\s*"
        r"--json-out report/report.json --markdown-out report/report.md",
        runs,
    )
    upload = next(s for s in report["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert "report/" in upload["with"]["path"]


def test_ci_run_is_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    test_command = blocks[1].strip()
    assert test_command.startswith("python3 -m pytest")
    run = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert run[-1] == test_command
    assert ".ci/setup" in run


def test_ci_checks_the_shape_before_the_tests_in_the_ci_run_and_in_the_workflow():
    run = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert run.index(".ci/checks") < len(run) - 1  # before the README's test command
    checks = (REPO / ".ci" / "checks").read_text()
    assert all(tool in checks for tool in ("ruff check .", "ruff format --check .", "lint-imports", "mypy"))
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    assert runs.index(".ci/checks") < next(i for i, r in enumerate(runs) if r.startswith("python3 -m pytest"))
