"""tox: toxfile.py generates one environment per harness version of matrices/*.yaml.

Only `tox list` and `tox config` run here (they read the configuration and create nothing); the
environments themselves install harnesses and drive them for many minutes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentbox.harnesses.matrix import cells, default_matrices, load_matrix

pytest.importorskip("tox", reason="tox is not installed (pip install -e '.[test]')")

REPO = Path(__file__).resolve().parents[2]
CELLS = cells(load_matrix(p) for p in default_matrices(REPO))


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tox")  # `tox config` takes a lock file there; keep it out of the checkout


@pytest.fixture(scope="module")
def tox(work_dir):
    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "tox", "--workdir", str(work_dir), *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    return run


@pytest.fixture(scope="module")
def config(tox):
    def value(env: str, key: str) -> list[str]:
        """The value lines of one key of one environment, as `tox config` prints them."""
        out = tox("config", "-e", env, "-k", key).splitlines()
        start = next(i for i, line in enumerate(out) if line.startswith(f"{key} ="))
        first = out[start].partition("=")[2].strip()
        rest = [line.strip() for line in out[start + 1 :] if line.startswith("  ")]
        return ([first] if first else []) + rest

    return value


def test_tox_lists_an_environment_per_harness_version_of_the_matrices_besides_unit_report_the_modes_and_unprivileged(
    tox,
):
    listed = [line.split()[0] for line in tox("list").splitlines() if line and not line.endswith(":")]
    assert listed[0] == "unit"
    assert set(listed) == {"unit", "report", "unprivileged", "tui", "acp", *(c.tox_env for c in CELLS)}
    assert {"codex-0.147.0", "codex-0.171.0", "hermes-0.13.0", "claude-code-2.1.197"} <= set(listed)


def test_a_harness_environment_installs_its_version_and_runs_both_suites_for_it_alone(config, work_dir):
    commands = config("codex-0.171.0", "commands")
    assert commands == [
        "agent-box harness install codex@0.171.0 codex-acp@0.16.0",
        "pytest -n 2 conformance negative --agentbox-harness codex@0.171.0 --agentbox-require-harnesses "
        f"--agentbox-evidence-dir {work_dir}/evidence/codex-0.171.0",
    ]
    assert config("hermes-0.13.0", "commands")[0] == "agent-box harness install hermes@0.13.0"
    assert config("codex-0.171.0", "description") == ["conformance and negative suites for codex@0.171.0"]


def test_the_report_environment_merges_every_harness_environment_after_they_ran(config, work_dir):
    assert config("report", "depends") == [c.tox_env for c in CELLS]
    merge, render = config("report", "commands")
    assert merge == f'sh -c \'agent-box evidence merge "$0"/evidence/*/ -o "$0"/evidence-merged\' {work_dir}'
    assert render.startswith(f"agent-box report --evidence {work_dir}/evidence-merged -o {work_dir}/report.html ")
    assert "--json-out" in render and "--markdown-out" in render


def test_the_unit_environment_runs_the_package_tests(config):
    assert config("unit", "commands") == ["pytest -n 2 tests"]
