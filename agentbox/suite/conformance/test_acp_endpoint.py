"""`agent-box acp` with every installed harness that has an ACP entry: the Python ACP client drives the real
command (gate, sandbox, the harness's real ACP agent, the relay), the scripted model makes a shell call that
asks, and the client approves or denies it. The side effect is read on the host; the Run is read from the
Run store. A last test offers the client's file system and terminals and records which of them the agent
calls, against `client_methods` in agentbox/data/acp.yaml."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentbox.suite.conformance.acp_scenario import (
    COMMAND,
    FINAL,
    PROOF,
    REPO,
    SHELL_ASK,
    adapter_pin,
    asking_vocabulary,
)
from agentbox.harnesses.acp import acp_entry, acp_harnesses
from agentbox.sandbox.session import marked
from agentbox.testing.acp_client import AcpRun, RecordingClient, run_acp
from agentbox.testing.fixtures import scripted_key_env, scripted_profile
from agentbox.testing.session import session_key

pytestmark = [pytest.mark.smoke, pytest.mark.harness(*acp_harnesses())]
# The test's evidence store is empty: the required items are unverified, accepted by name, as a user would.
ACCEPT = ("--accept-unverified", "workspace", "--accept-unverified", "command_network")


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One build-digest cache for the session, so no test hashes a harness's binaries afresh."""
    return tmp_path_factory.mktemp("acp-cache")


@pytest.fixture
def endpoint(request, scripted_model, agentbox_workspace, shared_cache):
    """`endpoint(harness, intent, steps, client, asking=True)` -> (AcpRun, Run record): one exchange with
    `agent-box acp`; `asking`: shell calls carry the arguments that make the harness's dialect ask."""
    from agentbox.core.home import harnesses_dir

    session = request.config.stash[session_key]
    ws = agentbox_workspace
    abhome = ws.root / "agentbox-home"
    abhome.mkdir()
    (abhome / "harnesses").symlink_to(harnesses_dir())  # the pinned installs, as at home
    (abhome / "cache").symlink_to(shared_cache)

    def run(
        harness, intent: dict, steps: list[dict], client: RecordingClient, asking: bool = True
    ) -> tuple[AcpRun, dict]:
        entry = acp_entry(harness.name)
        assert entry is not None  # the module's harnesses are those with an ACP entry (`acp_harnesses`)
        if entry.adapter is not None:
            from agentbox.harnesses.installs import find_binary

            if find_binary(entry.adapter) is None:
                why = (
                    f"{harness.name}'s ACP adapter {entry.adapter} is not installed "
                    f"(agent-box harness install {entry.adapter}@{adapter_pin(entry.adapter)})"
                )
                pytest.fail(why) if session.require_harnesses else pytest.skip(why)
        probe = harness.adapter().probe(harness.binary)
        vocab = asking_vocabulary(harness, probe) if asking else harness.adapter().tool_vocabulary
        scripted_model.load({"steps": steps, "final_text": FINAL}, vocab)
        profile = ws.root / "acp-endpoint.yaml"
        profile.write_text(yaml.safe_dump(scripted_profile(harness, scripted_model, intent, name="acp-endpoint")))
        env = {
            **os.environ,
            **scripted_key_env(harness),
            "AGENTBOX_HOME": str(abhome),
            "HOME": str(ws.home),
            "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
        }
        argv = [
            sys.executable,
            "-m",
            "agentbox.cli",
            "acp",
            str(profile),
            "--cwd",
            str(ws.project),
            "--binary",
            harness.binary,
            *ACCEPT,
        ]
        out = run_acp(
            argv,
            env,
            str(ws.root),
            "run the command, please",
            session_cwd=str(ws.project),
            client=client,
            timeout=session.timeout,
            grace=15.0,
        )
        listed = subprocess.run(
            [sys.executable, "-m", "agentbox.cli", "runs", "list", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        (record,) = json.loads(listed.stdout)
        return out, record

    return run


def _check(run: AcpRun, record: dict) -> None:
    assert not run.timed_out and run.error is None, run.describe()
    assert run.init is not None and run.init.protocol_version >= 1, run.describe()
    assert run.session is not None and record["acp_sessions"] == [run.session.session_id], (record, run.describe())
    assert (record["mode"], record["status"], record["exit_status"]) == ("acp", "finished", 0), record
    assert record["accepted_items"] == ["workspace", "command_network"], record
    assert marked(record["id"]) == [], "no process of the run outlived the endpoint"
    (asked,) = run.client.permission_requests
    assert PROOF in f"{asked.title} {asked.raw_input}", run.describe()
    assert "allow_always" not in [o.kind for o in asked.options], "a standing grant would turn ask into allow"


def test_through_agent_box_acp_an_approved_shell_call_runs_and_its_file_is_on_the_host(
    harness, endpoint, agentbox_workspace
):
    run, record = endpoint(harness, SHELL_ASK, [{"shell": {"command": COMMAND}}], RecordingClient("approve"))
    _check(run, record)
    assert run.stop_reason == "end_turn" and FINAL in run.client.agent_text(), run.describe()
    proof = agentbox_workspace.project / PROOF
    assert proof.exists() and proof.read_text().strip() == "approved", run.describe()


def test_through_agent_box_acp_a_denied_shell_call_never_runs(harness, endpoint, agentbox_workspace):
    run, record = endpoint(harness, SHELL_ASK, [{"shell": {"command": COMMAND}}], RecordingClient("deny"))
    _check(run, record)
    assert run.stop_reason in ("end_turn", "cancelled"), run.describe()
    assert not (agentbox_workspace.project / PROOF).exists(), run.describe()


def test_the_client_methods_each_agent_calls_are_the_ones_recorded_for_its_version(
    harness, endpoint, agentbox_workspace
):
    from agentbox.harnesses.installs import find_binary

    ws = agentbox_workspace.project
    (ws / "read-me.txt").write_text("read me\n")
    steps = [
        {"write_file": {"path": str(ws / "written.txt"), "content": "written\n"}},
        {"read_file": {"path": str(ws / "read-me.txt")}},
        {"shell": {"command": f"echo ran > {ws}/ran.txt"}},
    ]
    allow = {**SHELL_ASK, "shell": {"access": "allow", "requirement": "advisory"}}
    client = RecordingClient("approve", fs=True, terminal=True)
    run, record = endpoint(harness, allow, steps, client, asking=False)
    assert run.error is None and run.stop_reason == "end_turn", run.describe()
    assert (ws / "written.txt").exists() and (ws / "ran.txt").exists(), run.describe()
    entry = acp_entry(harness.name)
    agent, version = (
        (entry.adapter, find_binary(entry.adapter).version) if entry.adapter else (harness.name, harness.version)
    )
    called = sorted({method for method, _ in client.calls})
    recorded = entry.client_methods.get(version)
    assert recorded is not None, (
        f"{agent} {version} called {called or 'no client method'}: record it under "
        f"{harness.name}.client_methods in agentbox/data/acp.yaml and its docs/harnesses page"
    )
    assert called == sorted(recorded), f"{agent} {version} now calls {called}, recorded {sorted(recorded)}"
