"""What a client may ask of the agent through the endpoint: sessions stay in the workspace, MCP servers come
from the profile, and `_meta` options and modes that would widen the plan are refused."""

from __future__ import annotations

import asyncio
import json

import acp
import pytest
from acp import RequestError

from acp_helpers import connected, endpoint_alone, needs_bwrap, step_lines
from agentbox.testing.acp_client import RecordingClient

pytestmark = needs_bwrap
ASK = {"workspace": {"access": "read_write"}, "shell": {"access": "ask"}, "command_network": {"access": "none"}}


def _seen(run) -> dict:
    return json.loads(step_lines(run)[0].split(" ok ", 1)[1])


def test_a_session_outside_the_workspace_is_refused(place):
    run = endpoint_alone(place, ASK, [{"report": {}}], RecordingClient(), session_cwd=str(place.root))
    assert run.session is None and "outside the workspace" in run.error, run.describe()


def test_the_clients_mcp_servers_never_reach_the_agent(place):
    client = RecordingClient()

    async def go():
        async with connected(place, ASK, [{"report": {}}], client) as (conn, _):
            from acp.schema import McpServerStdio

            server = McpServerStdio(name="evil", command="/bin/sh", args=["-c", "id"], env=[])
            session = await conn.new_session(cwd=str(place.ws), mcp_servers=[server])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])

    asyncio.run(go())
    seen = json.loads(client.agent_text().split(" ok ", 1)[1])
    assert seen["session"]["mcpServers"] == []


def test_meta_options_that_widen_the_plan_are_refused_as_claude_agent_acp_reads_them(place):
    widen = {"claudeCode": {"options": {"allowedTools": ["Bash"], "permissionMode": "bypassPermissions"}}}
    run = endpoint_alone(place, ASK, [{"report": {}}], RecordingClient(), facts="claude-code", session_meta=widen)
    assert run.session is None, run.describe()
    assert "_meta.claudeCode.options" in run.error and "would widen the plan" in run.error


def test_harmless_meta_keys_are_kept_and_unknown_ones_stripped(place):
    meta = {"systemPrompt": {"append": "be brief"}, "somethingNew": {"x": 1}}
    run = endpoint_alone(place, ASK, [{"report": {}}], RecordingClient(), facts="claude-code", session_meta=meta)
    assert _seen(run)["session"]["meta"]["systemPrompt"] == {"append": "be brief"}
    assert "somethingNew" not in _seen(run)["session"]["meta"]


def test_without_facts_about_an_agent_every_meta_key_is_stripped(place):
    run = endpoint_alone(place, ASK, [{"report": {}}], RecordingClient(), session_meta={"systemPrompt": "x"})
    assert "systemPrompt" not in (_seen(run)["session"]["meta"] or {})


@pytest.mark.parametrize("mode, refused", [("bypassPermissions", True), ("plan", False)])
def test_a_mode_that_widens_the_plan_is_refused_before_the_agent_sees_it(place, mode, refused):
    async def go():
        async with connected(place, ASK, [], facts="claude-code") as (conn, _):
            session = await conn.new_session(cwd=str(place.ws))
            with pytest.raises(RequestError) as err:
                await conn.set_session_mode(session_id=session.session_id, mode_id=mode)
            return err.value

    error = asyncio.run(go())
    # the protocol test agent has no modes: a mode the endpoint lets through fails at the agent instead
    assert ("agent-box" in str(error)) == refused, (error, error.data)


def test_a_client_method_the_endpoint_cannot_judge_is_refused(place):
    async def go():
        async with connected(place, ASK, []) as (conn, _):
            with pytest.raises(RequestError) as err:
                await conn._conn.send_request("_vendor/anything", {})
            return err.value

    error = asyncio.run(go())
    assert "is not relayed" in str(error)


def test_an_agent_request_the_endpoint_cannot_judge_never_reaches_the_client(place):
    client = RecordingClient("approve", fs=True, terminal=True)
    run = endpoint_alone(
        place,
        ASK,
        [
            {"client_call": {"method": "_zed/open", "params": {}}},
            {
                "client_call": {
                    "method": "elicitation/create",
                    "params": {"message": "m", "mode": "url", "url": "http://x"},
                }
            },
        ],
        client,
    )
    assert all("is not relayed to the client" in line for line in step_lines(run)), run.describe()
