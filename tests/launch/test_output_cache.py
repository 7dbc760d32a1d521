"""`permission compile` and `explain` answer from their own earlier output, without importing pydantic or
YAML, only while nothing the answer rests on changed; a changed project, profile or flag compiles again."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from launch_helpers import RO, cli, needs_bwrap, write_profile

pytestmark = needs_bwrap
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hot(*args) -> subprocess.CompletedProcess:
    """The command with no site-packages: only a cached answer can work (pydantic and YAML cannot load)."""
    return subprocess.run(
        [sys.executable, "-S", "-m", "agentbox.cli", *map(str, args)],
        env={**os.environ, "PYTHONPATH": REPO},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def profile(tmp_path, real_codex):
    return write_profile(tmp_path, RO)


@pytest.mark.parametrize("sub", ["compile", "explain"])
@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_a_second_run_replays_the_first_answer_byte_for_byte_without_pydantic(profile, ws, sub, flag):
    first = cli("permission", sub, profile, "--cwd", ws, *flag)
    again = hot("permission", sub, profile, "--cwd", ws, *flag)
    assert (again.returncode, again.stdout, again.stderr) == (first.returncode, first.stdout, first.stderr)
    assert first.returncode == 0 and first.stdout


def test_a_new_config_surface_in_the_project_compiles_again(profile, ws):
    assert cli("permission", "compile", profile, "--cwd", ws).returncode == 0
    (ws / ".codex").mkdir()
    (ws / ".codex" / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    assert hot("permission", "compile", profile, "--cwd", ws).returncode != 0  # not served: it must compile


def test_an_edited_profile_compiles_again(profile, ws):
    assert cli("permission", "compile", profile, "--cwd", ws).returncode == 0
    profile.write_text(profile.read_text().replace("read_only", "read_write"))
    assert hot("permission", "compile", profile, "--cwd", ws).returncode != 0


def test_another_install_of_the_harness_compiles_again(profile, ws, abhome, real_codex):
    assert cli("permission", "compile", profile, "--cwd", ws).returncode == 0
    (abhome / "harnesses" / "codex" / "0.0.1").mkdir(parents=True)  # another install: find_binary may choose anew
    assert hot("permission", "compile", profile, "--cwd", ws).returncode != 0


def test_other_spellings_are_never_served_from_the_cache(profile, ws):
    assert cli("permission", "compile", profile, "--cwd", ws, "--harness-version", "0.171.0").returncode == 0
    assert hot("permission", "compile", profile, "--cwd", ws, "--harness-version", "0.171.0").returncode != 0
