"""The egress proxy around a launch and a harness run of the real codex: its decision log outlives the run
folder, and a proxy that cannot start refuses the run (exit 4) before any harness process exists."""

from __future__ import annotations

import json
import os

import pytest

from agentbox import cli as agentbox_cli
from agentbox.errors import SandboxError
from launch_helpers import RW, cli, needs_bwrap, prove, write_profile

pytestmark = needs_bwrap

# An advisory network none with a loopback model: the plan needs the proxy, and no evidence beyond the
# workspace's gates it.
NONE_WITH_MODEL = RW + "  command_network: {access: none, requirement: advisory}\n"


def with_model(tmp_path, intent: str):
    path = write_profile(tmp_path, intent)
    path.write_text(
        path.read_text().replace(
            "permission_intent:", "model: {base_url: 'http://127.0.0.1:47999/v1'}\npermission_intent:"
        )
    )
    return path


@pytest.fixture
def long_tmp(tmp_path):
    """A temp folder so deep that a unix socket inside it exceeds the kernel's 108 bytes: the proxy cannot listen."""
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    return deep


def test_a_launch_keeps_its_egress_log_and_runs_show_names_it(tmp_path, abhome, ws, real_codex):
    store = tmp_path / "ev"
    prove(store, real_codex, ["workspace.read_write"])
    done = cli("launch", with_model(tmp_path, NONE_WITH_MODEL), "--cwd", ws, "--evidence", store, "--", "--version")
    assert done.returncode == 0, done.stderr
    [run] = json.loads(cli("runs", "list", "--json").stdout)
    log = abhome / "runs" / run["id"] / "egress.jsonl"
    assert log.exists() and log.read_text() == ""  # `codex --version` asks the network for nothing
    shown = cli("runs", "show", run["id"])
    assert f"egress log         {log}" in shown.stdout
    assert json.loads(cli("runs", "show", run["id"], "--json").stdout)["egress_log"] == str(log)


def test_a_launch_whose_proxy_cannot_start_is_refused_before_the_harness(
    tmp_path, abhome, ws, real_codex, long_tmp, monkeypatch, capsys
):
    store = tmp_path / "ev"
    prove(store, real_codex, ["workspace.read_write"])

    def forbidden(*args, **kwargs):
        raise AssertionError("the harness must not start without its egress proxy")

    monkeypatch.setattr(os, "posix_spawn", forbidden)
    monkeypatch.setenv("AGENTBOX_RUN_ROOT", str(long_tmp))
    rc = agentbox_cli.main(
        [
            "launch",
            str(with_model(tmp_path, NONE_WITH_MODEL)),
            "--cwd",
            str(ws),
            "--evidence",
            str(store),
            "--binary",
            str(real_codex),
            "--",
            "--version",
        ]
    )
    assert rc == 4
    err = capsys.readouterr().err
    assert "egress proxy cannot listen" in err and "point AGENTBOX_RUN_ROOT at a shorter folder" in err
    [run] = json.loads(cli("runs", "list", "--json").stdout)  # a new process: the patches stay here
    assert (run["status"], run["exit_status"]) == ("failed", 4)
    assert list(long_tmp.iterdir()) == []  # the run folder is gone too


def test_a_harness_run_whose_proxy_cannot_start_raises_before_the_harness(
    tmp_path, ws, real_codex, long_tmp, monkeypatch
):
    from agentbox.run import harness_run
    from agentbox.compile.adapters import get_adapter
    from agentbox.core.profile import load_profile

    def forbidden(*args, **kwargs):
        raise AssertionError("the harness must not start without its egress proxy")

    home = tmp_path / "home"
    home.mkdir()
    request = harness_run.RunRequest(
        loaded=load_profile(str(with_model(tmp_path, NONE_WITH_MODEL))),
        probe=get_adapter("codex").probe(str(real_codex)),
        workspace=str(ws),
        home=str(home),
        prompt="hi",
    )
    from agentbox.sandbox.bwrap import backend_version

    backend_version()  # asked once per process (`bwrap --version`): before Popen is forbidden, whatever ran before
    monkeypatch.setattr(harness_run.subprocess, "Popen", forbidden)
    monkeypatch.setenv("AGENTBOX_RUN_ROOT", str(long_tmp))
    with pytest.raises(SandboxError, match="egress proxy cannot listen") as raised:
        harness_run.run_harness(request)
    assert raised.value.exit_code == 4
    assert list(long_tmp.iterdir()) == []
