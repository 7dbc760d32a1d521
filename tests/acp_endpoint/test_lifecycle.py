"""One Run per endpoint, its sessions recorded, and no process outliving it however it ends."""

from __future__ import annotations

import asyncio
import os
import signal

import acp
import pytest
from acp import RequestError

from acp_helpers import connected, needs_bwrap, runs
from agentbox.sandbox.session import marked

pytestmark = needs_bwrap
RW = {"workspace": {"access": "read_write"}, "shell": {"access": "allow"}, "command_network": {"access": "none"}}


def _only_run(place) -> dict:
    (run,) = runs(place)
    return run


def test_the_run_records_every_session_and_ends_finished_when_the_client_closes(place):
    async def go():
        async with connected(place, RW, [{"report": {}}]) as (conn, proc):
            first = await conn.new_session(cwd=str(place.ws))
            second = await conn.new_session(cwd=str(place.ws))
            await conn.prompt(session_id=first.session_id, prompt=[acp.text_block("go")])
        return [first.session_id, second.session_id], proc.returncode

    sessions, status = asyncio.run(go())
    run = _only_run(place)
    assert (run["mode"], run["status"], run["exit_status"]) == ("acp", "finished", 0)
    assert run["acp_sessions"] == sessions
    assert marked(run["id"]) == []


def test_a_cancel_reaches_the_agent(place):
    async def go():
        async with connected(place, RW, [{"sleep": {"seconds": 60}}]) as (conn, _):
            session = await conn.new_session(cwd=str(place.ws))
            prompt = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")]))
            await asyncio.sleep(1.0)
            await conn.cancel(session_id=session.session_id)
            return await asyncio.wait_for(prompt, 20)

    assert asyncio.run(go()).stop_reason == "cancelled"


async def _mid_prompt(conn, place) -> None:
    """A session whose prompt is running (the agent sleeps in it)."""
    session = await conn.new_session(cwd=str(place.ws))
    asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")]))
    await asyncio.sleep(1.0)


def test_client_eof_mid_prompt_ends_the_whole_tree_and_the_run_is_interrupted(place):
    async def go():
        async with connected(place, RW, [{"sleep": {"seconds": 120}}]) as (conn, proc):
            await _mid_prompt(conn, place)
            run_id = _only_run(place)["id"]
            assert marked(run_id), "the agent runs in the sandbox, marked"
        return run_id, proc.returncode

    run_id, status = asyncio.run(go())
    run = _only_run(place)
    assert status == 0 and run["status"] == "interrupted" and marked(run_id) == []


def test_a_killed_endpoint_leaves_no_process_and_the_next_command_shows_the_run_interrupted(place):
    async def go():
        async with connected(place, RW, [{"sleep": {"seconds": 120}}]) as (conn, proc):
            await _mid_prompt(conn, place)
            os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()

    asyncio.run(go())
    run = _only_run(place)  # `runs list` reaps: the endpoint is gone
    assert run["status"] == "interrupted" and marked(run["id"]) == []


def test_an_agent_crash_mid_prompt_is_an_error_to_the_client_and_the_run_failed(place):
    async def go():
        async with connected(place, RW, [{"crash": {"status": 3}}]) as (conn, _):
            session = await conn.new_session(cwd=str(place.ws))
            with pytest.raises(RequestError) as err:
                await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")]), 20)
            return err.value

    error = asyncio.run(go())
    assert "the agent exited with status 3" in str(error.data)
    run = _only_run(place)
    assert (run["status"], run["exit_status"]) == ("failed", 3) and marked(run["id"]) == []


def test_a_malformed_message_from_the_agent_is_an_error_to_the_client_not_a_hang(place):
    async def go():
        async with connected(place, RW, [{"garble": {"line": "this is no JSON-RPC"}}, {"sleep": {"seconds": 60}}]) as (
            conn,
            _,
        ):
            session = await conn.new_session(cwd=str(place.ws))
            with pytest.raises(RequestError) as err:
                await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")]), 20)
            return err.value

    error = asyncio.run(go())
    assert "malformed message" in str(error.data) and "this is no JSON-RPC" in str(error.data)
    assert _only_run(place)["status"] == "failed"


def test_a_malformed_message_from_the_client_gets_a_parse_error_and_the_session_goes_on(place):
    async def go():
        async with connected(place, RW, [{"report": {}}]) as (conn, proc):
            seen = []
            conn._conn.add_observer(lambda event: seen.append(event.message))
            proc.stdin.write(b"{this is not json\n")
            await proc.stdin.drain()
            session = await conn.new_session(cwd=str(place.ws))
            return seen, session

    seen, session = asyncio.run(go())
    assert session.session_id
    parse = [m for m in seen if (m.get("error") or {}).get("code") == -32700]
    assert parse and parse[0]["id"] is None and "not JSON" in parse[0]["error"]["data"]["details"]
