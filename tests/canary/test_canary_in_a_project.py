"""The canary and the packaged suite in a user's own project folder: no test files of theirs, no checkout."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _pytest(project, home, *args: str) -> subprocess.CompletedProcess:
    # no harness anywhere: an empty AGENTBOX_HOME and a PATH with only the system's programs
    env = {**os.environ, "AGENTBOX_HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\naddopts = --strict-markers\n")
    return folder


def test_the_suite_is_collected_in_a_project_with_no_test_files_whatever_its_python_files(project, tmp_path):
    done = _pytest(project, tmp_path / "home", "--agentbox-suite", "--collect-only", "-q")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "negative/test_vectors.py::test_the_sandbox_alone_enforces_what_it_declares[" in done.stdout
    assert "conformance/test_goldens.py::" in done.stdout


def test_a_canary_with_no_harness_to_verify_fails_and_says_so(project, tmp_path):
    done = _pytest(
        project,
        tmp_path / "home",
        "--agentbox-canary",
        "-k",
        "nothing_is_called_this",
        f"--agentbox-evidence-dir={tmp_path / 'ev'}",
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "FAIL: no harness build to verify" in done.stdout
    assert "--agentbox-canary-allow-empty" in done.stdout


def test_a_canary_told_that_no_harness_is_expected_notes_it_and_still_fails_on_a_sandbox_it_did_not_verify(
    project, tmp_path
):
    done = _pytest(
        project,
        tmp_path / "home",
        "--agentbox-canary",
        "--agentbox-canary-allow-empty",
        "-k",
        "nothing_is_called_this",
        f"--agentbox-evidence-dir={tmp_path / 'ev'}",
    )
    assert "note: no harness build to verify" in done.stdout, done.stdout[-3000:]
    assert "FAIL: no harness build" not in done.stdout
    # the sandbox alone had no evidence and ran no vector: nothing proves it, allowed or not
    assert "(sandbox alone): to be re-verified, and no vector ran for it" in done.stdout
    assert done.returncode == 1


def test_a_capability_no_vector_bears_is_a_usage_error(project, tmp_path):
    done = _pytest(
        project, tmp_path / "home", "--agentbox-suite", "--agentbox-capability", "workspace.read_olny", "--collect-only"
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "no vector of the catalogue bears workspace.read_olny" in done.stderr


def test_a_canary_of_several_modes_is_a_usage_error_asking_for_one(project, tmp_path):
    modes = ("--agentbox-mode", "headless", "--agentbox-mode", "tui")
    done = _pytest(project, tmp_path / "home", "--agentbox-canary", *modes, "--collect-only")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "re-verifies one mode at a time, and this run drives headless, tui" in done.stderr
