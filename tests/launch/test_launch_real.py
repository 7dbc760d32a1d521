"""Allowed launches of the real codex: the Run records them, the exit status comes back, the plan cache
serves the second launch, new evidence is seen at once, and a launcher killed with SIGKILL leaves a
Run the next command shows as interrupted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from agentbox.sandbox.session import marked
from launch_helpers import RW, cli, needs_bwrap, prove, write_profile

pytestmark = needs_bwrap


@pytest.fixture
def setup(tmp_path, abhome, ws, real_codex):
    """A read-write profile with exact evidence for this codex build; returns the launch argv prefix."""
    store = tmp_path / "ev"
    prove(store, real_codex, ["workspace.read_write"])
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = {**os.environ, "AGENTBOX_RUN_ROOT": str(tmpdir)}
    return ["launch", write_profile(tmp_path, RW), "--cwd", ws, "--evidence", store], env


def runs(env) -> list[dict]:
    return json.loads(cli("runs", "list", "--json", env=env).stdout)


def test_an_allowed_launch_runs_the_harness_and_records_the_run(setup, ws, tmp_path):
    argv, env = setup
    done = cli(*argv, "--", "--version", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("codex-cli ")
    [run] = runs(env)
    assert (run["status"], run["exit_status"], run["cleanup"]) == ("finished", 0, "clean")
    assert run["claims"]["workspace"]["verdict"] == "proven" and run["accept_unverified"] is False
    assert run["project_root"] == str(ws) and run["harness_args"] == ["--version"] and run["plan_hash"]
    assert list((tmp_path / "tmpdir").iterdir()) == []  # the private config home is gone


def test_the_harness_exit_status_is_the_launch_exit_status(setup):
    argv, env = setup
    done = cli(*argv, "--", "--no-such-flag-agentbox", env=env)
    assert done.returncode == 2, done.stderr  # codex's own usage error
    assert runs(env)[0]["exit_status"] == 2


def test_a_second_launch_runs_from_the_cache_without_pydantic_or_yaml(setup):
    argv, env = setup
    assert cli(*argv, "--", "--version", env=env).returncode == 0
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # -S: no site-packages, so neither pydantic nor YAML can be imported; only the cached path can work
    done = subprocess.run(
        [sys.executable, "-S", "-m", "agentbox.cli", *map(str, argv), "--", "--version"],
        env={**env, "PYTHONPATH": repo},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [r["exit_status"] for r in runs(env)] == [0, 0]


def test_new_evidence_is_seen_at_once_even_after_a_cached_launch(setup, real_codex, tmp_path):
    argv, env = setup
    assert cli(*argv, "--", "--version", env=env).returncode == 0
    prove(tmp_path / "ev", real_codex, ["workspace.read_write"], outcome="escaped")  # newer: refutes the claim
    done = cli(*argv, "--", "--version", env=env)
    assert done.returncode == 3 and "claim refuted" in done.stderr


def test_accept_unverified_launches_loudly_and_is_recorded(tmp_path, abhome, ws, real_codex):
    (tmp_path / "none").mkdir()  # an empty store
    done = cli(
        "launch",
        write_profile(tmp_path, RW),
        "--cwd",
        ws,
        "--evidence",
        tmp_path / "none",
        "--accept-unverified",
        "workspace",
        "--",
        "--version",
    )
    assert done.returncode == 0
    assert "WARNING: --accept-unverified workspace: 1 required item(s) are NOT proven" in done.stderr
    [run] = runs(os.environ)
    assert run["accept_unverified"] is True and run["accepted_items"] == ["workspace"]
    assert run["claims"]["workspace"]["verdict"] == "accepted"


def test_accept_unverified_naming_no_item_of_the_profile_is_an_input_error(tmp_path, abhome, ws, real_codex):
    done = cli(
        "launch",
        write_profile(tmp_path, RW),
        "--cwd",
        ws,
        "--evidence",
        tmp_path / "none",
        "--accept-unverified",
        "workspce",
        "--",
        "--version",
    )
    assert done.returncode == 2
    assert "--accept-unverified workspce: no item of this profile is called that" in done.stderr
    assert "workspace (workspace.read_write)" in done.stderr and runs(os.environ) == []


def test_project_config_gets_a_blank_private_backing_and_the_host_file_is_untouched(tmp_path, abhome, ws, real_codex):
    (ws / ".codex").mkdir()
    (ws / ".codex" / "config.toml").write_text("host config\n")
    store = tmp_path / "ev"
    prove(store, real_codex, ["workspace.read_write"])
    done = cli("launch", write_profile(tmp_path, RW), "--cwd", ws, "--evidence", store, "--", "--version")
    assert done.returncode == 0, done.stderr
    backing = ws / ".agentbox" / "profiles" / "t" / "root" / ".codex"
    assert backing.is_dir() and list(backing.iterdir()) == []  # created blank, nothing copied
    assert (ws / ".codex" / "config.toml").read_text() == "host config\n"


def test_a_symlinked_private_backing_is_refused_before_the_harness_starts(tmp_path, abhome, ws, real_codex):
    (ws / ".codex").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / ".agentbox" / "profiles" / "t").mkdir(parents=True)
    (ws / ".agentbox" / "profiles" / "t" / "root").symlink_to(elsewhere)
    store = tmp_path / "ev"
    prove(store, real_codex, ["workspace.read_write"])
    done = cli("launch", write_profile(tmp_path, RW), "--cwd", ws, "--evidence", store, "--", "--version")
    assert done.returncode == 4 and "symlink" in done.stderr and "codex-cli" not in done.stdout
    assert list(elsewhere.iterdir()) == []
    assert runs(os.environ)[0]["status"] == "failed"


def test_the_codex_tui_gets_the_terminal_and_a_sigkilled_launcher_leaves_an_interrupted_run(setup, tmp_path):
    pexpect = pytest.importorskip("pexpect")
    argv, env = setup
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentbox.cli", *map(str, argv)],
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )
    child.expect("(?i)codex")  # the TUI drew its screen on the terminal it was given
    [run] = runs(env)
    assert run["status"] == "running"
    child.kill(9)
    child.close(force=True)
    deadline = time.monotonic() + 10
    while marked(run["id"]) and time.monotonic() < deadline:  # bwrap --die-with-parent takes the harness down
        time.sleep(0.05)
    [run] = runs(env)
    assert run["status"] == "interrupted" and run["cleanup"].startswith("recovered")
    assert marked(run["id"]) == []
    assert not os.path.exists(run["run_dir"])


def test_runs_show_finds_a_run_by_a_prefix_and_refuses_an_unknown_id(setup):
    argv, env = setup
    cli(*argv, "--", "--version", env=env)
    [run] = runs(env)
    shown = cli("runs", "show", run["id"][:5], env=env)
    assert shown.returncode == 0 and f"id                 {run['id']}" in shown.stdout
    assert json.loads(cli("runs", "show", run["id"], "--json", env=env).stdout)["plan_hash"] == run["plan_hash"]
    assert cli("runs", "show", "nope", env=env).returncode == 2


def test_a_launch_whose_model_key_variable_is_unset_warns_and_names_it(tmp_path, abhome, ws, real_codex):
    (tmp_path / "none").mkdir()
    profile = tmp_path / "k.yaml"
    profile.write_text(
        "name: k\nharness: codex\nmodel: {api_key_env: AGENTBOX_TEST_UNSET_KEY}\npermission_intent:\n" + RW
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTBOX_TEST_UNSET_KEY"}
    done = cli(
        "launch",
        profile,
        "--cwd",
        ws,
        "--evidence",
        tmp_path / "none",
        "--accept-unverified",
        "workspace",
        "--",
        "--version",
        env=env,
    )
    assert done.returncode == 0
    assert "model.api_key_env names AGENTBOX_TEST_UNSET_KEY, which is not set here" in done.stderr


def test_a_cached_launch_holds_on_the_kernel_its_gate_read_evidence_of_only(setup, abhome):
    from agentbox.hot import read_marshal
    from agentbox.run.launch import plan_current

    argv, env = setup
    assert cli(*argv, "--", "--version", env=env).returncode == 0
    [cached] = (abhome / "cache" / "launch").iterdir()
    check = read_marshal(str(cached))["check"]
    assert check["kernel"] == os.uname().release and plan_current(check, None)
    # after a kernel upgrade the gate must read the evidence again: it is keyed by the kernel release
    assert not plan_current({**check, "kernel": "4.4.0-before-the-upgrade"}, None)
