"""The canary MCP server, driven for real: spawned over stdio and spoken to with the SDK's own client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

import agentbox
from agentbox.canary_mcp import DEFAULT_SECRET, TOOL_NAMES, CanaryLog, canary_command

# The SDK's stdio client passes only a safe subset of the environment (HOME, PATH, ...), so the
# checkout must be put on the child's path explicitly until agentbox is pip-installed.
REPO = str(Path(agentbox.__file__).resolve().parent.parent)

# Harnesses speak the initialize handshake ("legacy" in mcp 2.x); the SDK's own default ("auto")
# probes the stateless 2026-07-28 protocol first. The canary must serve both.
MODES = ["legacy", "auto"]


def server_params(log: Path, *, env: dict[str, str] | None = None, **options: str) -> StdioServerParameters:
    argv = canary_command(log, **options)
    return StdioServerParameters(command=argv[0], args=argv[1:], env={"PYTHONPATH": REPO, **(env or {})})


def session(log: Path, body, *, mode: str = "legacy", env: dict[str, str] | None = None, **options: str):
    """Start a server, run `body(client)` against it, shut the server down, return body's result."""

    async def main():
        with anyio.fail_after(30):
            async with Client(server_params(log, env=env, **options), mode=mode) as client:
                return await body(client)

    return anyio.run(main)


def text_of(result) -> str:
    return "".join(block.text for block in result.content)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "canary.log"


@pytest.mark.parametrize("mode", MODES)
def test_tools_list_offers_exactly_the_canary_tools_with_string_arguments(log, mode):
    async def body(client):
        return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    schemas = session(log, body, mode=mode)
    assert sorted(schemas) == sorted(TOOL_NAMES)
    assert schemas["allowed_echo"]["properties"] == {"text": {"title": "Text", "type": "string"}}
    assert schemas["allowed_echo"]["required"] == ["text"]
    assert set(schemas["denied_write"]["properties"]) == {"path", "content"}
    assert sorted(schemas["denied_write"]["required"]) == ["content", "path"]
    assert schemas["secret_read"]["properties"] == {}
    assert set(schemas["read_path"]["properties"]) == {"path"} and set(schemas["fetch_url"]["properties"]) == {"url"}
    assert set(schemas["call_api"]["properties"]) == {"url", "token_env"}
    assert CanaryLog(log).invocations() == [], "listing tools is not an invocation"


def test_read_path_returns_the_file_reversed_and_logs_the_call(log, tmp_path):
    (tmp_path / "f.txt").write_text("abc")

    async def body(client):
        return text_of(await client.call_tool("read_path", {"path": str(tmp_path / "f.txt")}))

    assert session(log, body) == "cba"
    assert CanaryLog(log).calls("read_path") == [{"path": str(tmp_path / "f.txt")}]


def test_the_server_reports_the_name_it_was_given(log):
    async def body(client):
        return client.server_info.name

    assert session(log, body, name="canary-two") == "canary-two"


@pytest.mark.parametrize("mode", MODES)
def test_allowed_echo_returns_its_text_and_logs_the_call_with_its_arguments(log, mode):
    async def body(client):
        return await client.call_tool("allowed_echo", {"text": "hello canary"})

    result = session(log, body, mode=mode)
    assert not result.is_error and text_of(result) == "hello canary"
    (record,) = CanaryLog(log).invocations()
    assert record["tool"] == "allowed_echo" and record["arguments"] == {"text": "hello canary"}
    assert record["server"] == "canary" and isinstance(record["pid"], int)


def test_denied_write_really_writes_the_file_and_logs_path_and_content(log, tmp_path):
    target = tmp_path / "pwned.txt"

    async def body(client):
        return await client.call_tool("denied_write", {"path": str(target), "content": "pwned"})

    assert not session(log, body).is_error
    assert target.read_text() == "pwned"
    assert CanaryLog(log).calls("denied_write") == [{"path": str(target), "content": "pwned"}]


def test_a_failed_denied_write_is_still_logged_and_comes_back_as_an_error_with_its_reason(log, tmp_path):
    target = tmp_path / "missing-dir" / "x.txt"

    async def body(client):
        return await client.call_tool("denied_write", {"path": str(target), "content": "x"})

    result = session(log, body)
    assert result.is_error and "No such file or directory" in text_of(result)
    assert CanaryLog(log).calls("denied_write") == [{"path": str(target), "content": "x"}]


def test_secret_read_returns_the_secret_given_by_argument_or_by_env_or_the_default(tmp_path):
    async def body(client):
        return text_of(await client.call_tool("secret_read", {}))

    assert session(tmp_path / "a.log", body, secret="from-arg") == "from-arg"
    assert session(tmp_path / "b.log", body, env={"AGENTBOX_CANARY_SECRET": "from-env"}) == "from-env"
    assert session(tmp_path / "c.log", body) == DEFAULT_SECRET
    assert CanaryLog(tmp_path / "a.log").calls("secret_read") == [{}]


def test_a_server_started_but_never_called_leaves_an_empty_log_and_a_started_marker(log):
    async def body(client):
        return None  # connecting (the initialize handshake) is all this server gets

    session(log, body)
    canary = CanaryLog(log)
    assert log.exists() and log.read_text() == ""
    assert canary.started() and canary.invocations() == []
    (start,) = canary.starts()
    assert start["name"] == "canary" and isinstance(start["pid"], int)


def test_a_server_that_never_started_leaves_neither_log_nor_marker(log):
    canary = CanaryLog(log)
    assert not canary.started() and canary.invocations() == [] and not log.exists()


def test_calls_filters_one_tool_in_call_order(log):
    async def body(client):
        for text in ("one", "two"):
            await client.call_tool("allowed_echo", {"text": text})
            await client.call_tool("secret_read", {})

    session(log, body)
    canary = CanaryLog(log)
    assert canary.calls("allowed_echo") == [{"text": "one"}, {"text": "two"}]
    assert canary.calls("secret_read") == [{}, {}]
    assert canary.calls("denied_write") == []
    assert [r["tool"] for r in canary.invocations()] == ["allowed_echo", "secret_read"] * 2


def test_concurrent_calls_from_two_servers_sharing_one_log_never_interleave(log):
    # Big payloads make a torn or interleaved write visible as a line that is not valid JSON.
    payload = {server: {i: f"{server}{i}-" + "x" * 20_000 for i in range(20)} for server in ("a", "b")}

    async def hammer(server: str):
        async with Client(server_params(log, name=server), mode="legacy") as client:
            async with anyio.create_task_group() as tg:
                for text in payload[server].values():
                    tg.start_soon(client.call_tool, "allowed_echo", {"text": text})

    async def main():
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(hammer, "a")
                tg.start_soon(hammer, "b")

    anyio.run(main)
    canary = CanaryLog(log)  # parsing every line as JSON is the interleaving check
    for server in ("a", "b"):
        logged = sorted(r["arguments"]["text"] for r in canary.invocations() if r["server"] == server)
        assert logged == sorted(payload[server].values())
    assert len(canary.starts()) == 2


def test_the_module_refuses_to_start_without_a_log(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTBOX_CANARY_")}
    proc = subprocess.run(
        [sys.executable, "-m", "agentbox.canary_mcp"],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "--log" in proc.stderr
