"""A binary that does not answer as the harness, or no harness at all, is a harness problem (exit 5):
never a plan compiled quietly for "version unknown" in the oldest dialect, never a gate refusal."""

from __future__ import annotations

import os

from launch_helpers import RW, cli, needs_bwrap, write_profile

pytestmark = needs_bwrap


def no_harness_env(tmp_path) -> dict:
    """A machine where codex is neither installed by agent-box nor on PATH."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("bwrap", "git"):
        for d in os.environ["PATH"].split(os.pathsep):
            if os.path.exists(os.path.join(d, tool)):
                (bare / tool).symlink_to(os.path.join(d, tool))
                break
    return {**os.environ, "PATH": f"{bare}:/usr/bin:/bin", "HOME": str(tmp_path)}


def test_compile_with_a_stand_in_binary_exits_5_naming_it(tmp_path, ws):
    done = cli("permission", "compile", write_profile(tmp_path, RW), "--cwd", ws, "--binary", "/bin/true")
    assert done.returncode == 5, done.stderr
    assert "does not answer as codex" in done.stderr and "true" in done.stderr
    assert done.stdout == ""


def test_launch_with_a_stand_in_binary_exits_5_not_3(tmp_path, ws):
    done = cli("launch", write_profile(tmp_path, RW), "--cwd", ws, "--binary", "/bin/true")
    assert done.returncode == 5, done.stderr
    assert "does not answer as codex" in done.stderr and "pytest" not in done.stderr


def test_compile_without_any_installed_harness_exits_5_and_says_how_to_install(tmp_path, ws):
    done = cli("permission", "compile", write_profile(tmp_path, RW), "--cwd", ws, env=no_harness_env(tmp_path))
    assert done.returncode == 5, done.stderr
    assert "agent-box harness install codex@" in done.stderr and "--harness-version" in done.stderr


def test_compile_for_a_named_version_needs_no_binary(tmp_path, ws):
    done = cli(
        "permission",
        "compile",
        write_profile(tmp_path, RW),
        "--cwd",
        ws,
        "--harness-version",
        "0.171.0",
        env=no_harness_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("plan ")
