"""ACP smokes: every installed harness that has an ACP entry (agentbox/data/acp.yaml) is started as an
ACP agent inside bubblewrap through its compiled plan. A Python ACP client initializes, opens a
session in the workspace and prompts; the scripted model makes a shell call that needs approval,
the client answers the permission request, and the test reads the real side effect."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentbox.suite.conformance.acp_scenario import (
    COMMAND,
    FINAL,
    PROOF,
    REPO,
    SHELL_ASK,
    adapter_pin,
    asking_vocabulary,
)
from agentbox.harnesses.acp import acp_command, acp_entry, acp_harnesses
from agentbox.testing.acp_client import AcpRun, run_acp
from agentbox.testing.fixtures import scripted_key_env, scripted_profile
from agentbox.testing.session import session_key

if TYPE_CHECKING:
    from agentbox.testing.acp_client import Policy

pytestmark = [pytest.mark.smoke, pytest.mark.harness(*acp_harnesses())]


@pytest.fixture
def acp_run(request: pytest.FixtureRequest, scripted_model, agentbox_workspace):
    """`acp_run(harness, policy)` -> AcpRun: one ACP exchange through the compiled plan in the sandbox."""
    from agentbox.run.harness_run import HarnessCommand, RunRequest, kill_marked, prepared
    from agentbox.harnesses.installs import find_binary
    from agentbox.core.profile import LoadedProfile, Profile

    session = request.config.stash[session_key]

    def run(harness, policy: Policy) -> tuple[AcpRun, list[tuple[int, str]]]:
        entry = acp_entry(harness.name)
        assert entry is not None  # the module's harnesses are those with an ACP entry (`acp_harnesses`)
        adapter_binary = None
        if entry.adapter is not None:
            found = find_binary(entry.adapter)
            if found is None:
                why = (
                    f"{harness.name}'s ACP adapter {entry.adapter} is not installed "
                    f"(agent-box harness install {entry.adapter}@{adapter_pin(entry.adapter)})"
                )
                if session.require_harnesses:
                    pytest.fail(why)
                else:
                    pytest.skip(why)
            adapter_binary = found.binary
        probe = harness.adapter().probe(harness.binary)
        vocab = asking_vocabulary(harness, probe)
        scripted_model.load({"steps": [{"shell": {"command": COMMAND}}], "final_text": FINAL}, vocab)
        profile = scripted_profile(harness, scripted_model, SHELL_ASK, name="acp-smoke")
        loaded = LoadedProfile(profile=Profile.model_validate(profile), source="<test>", digest="test")
        ws = agentbox_workspace
        req = RunRequest(
            loaded=loaded,
            probe=probe,
            workspace=str(ws.project),
            home=str(ws.home),
            prompt="",
            timeout=session.timeout,
            extra_env=scripted_key_env(harness),
            ro_binds=(str(REPO),),
        )

        def command(result):
            argv, env, binds = acp_command(harness.name, result, harness.binary, adapter_binary)
            return HarnessCommand(argv, env, binds)

        with prepared(req, command=command) as launch:
            out = run_acp(
                launch.argv,
                launch.env,
                launch.cwd,
                "run the command, please",
                policy=policy,
                timeout=session.timeout,
                pass_fds=launch.pass_fds,
            )
            leftovers = kill_marked(launch.run_id)
        return out, leftovers

    return run


def _check_exchange(run: AcpRun) -> None:
    assert not run.timed_out and run.error is None, run.describe()
    assert run.init is not None and run.init.protocol_version >= 1, run.describe()
    assert run.session is not None and run.session.session_id, run.describe()
    assert run.client.updates, f"no session update: {run.describe()}"
    assert len(run.client.permission_requests) == 1, run.describe()
    asked = run.client.permission_requests[0]
    assert PROOF in f"{asked.title} {asked.raw_input}", f"the request names the shell call: {run.describe()}"


def test_an_acp_agent_asks_before_the_shell_call_and_runs_it_when_approved(harness, acp_run, agentbox_workspace):
    run, leftovers = acp_run(harness, "approve")
    _check_exchange(run)
    assert run.stop_reason == "end_turn", run.describe()
    assert "tool_call" in run.client.kinds(), f"no tool_call session update: {run.describe()}"
    assert FINAL in run.client.agent_text(), f"the closing text came back as agent_message_chunk: {run.describe()}"
    proof = agentbox_workspace.project / PROOF
    assert proof.exists() and proof.read_text().strip() == "approved", run.describe()
    assert leftovers == [], "no process of the agent survived the session"


def test_an_acp_agent_does_not_run_the_shell_call_when_denied(harness, acp_run, agentbox_workspace):
    run, leftovers = acp_run(harness, "deny")
    _check_exchange(run)
    assert run.stop_reason in ("end_turn", "cancelled"), run.describe()
    assert not (agentbox_workspace.project / PROOF).exists(), f"a denied call ran anyway: {run.describe()}"
    assert leftovers == []
