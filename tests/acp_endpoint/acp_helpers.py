"""Helpers of the ACP endpoint's tests: a project and a home outside /tmp (which the sandbox makes private, so a
file there would be hidden for the wrong reason), and the endpoint alone (`agentbox.testing.acp_endpoint`)
around the protocol test agent, driven by the SDK's own client."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from agentbox.testing.acp_client import AcpRun, RecordingClient, run_acp

REPO = Path(__file__).resolve().parents[2]
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


@dataclass
class Place:
    root: Path
    ws: Path
    home: Path
    abhome: Path

    def env(self) -> dict[str, str]:
        return {**os.environ, "HOME": str(self.home), "AGENTBOX_HOME": str(self.abhome), "PYTHONPATH": str(REPO)}


def endpoint_alone(
    place: Place,
    intent: dict,
    steps: list[dict],
    client: RecordingClient,
    *,
    facts: str | None = None,
    session_meta: dict | None = None,
    session_cwd: str | None = None,
    timeout: float = 60,
) -> AcpRun:
    """One ACP exchange (initialize, session/new, one prompt) with the endpoint alone around the protocol test agent."""
    argv = endpoint_argv(place, intent, steps, facts)
    return run_acp(
        argv,
        place.env(),
        str(place.root),
        "go",
        client=client,
        session_cwd=session_cwd or str(place.ws),
        session_meta=session_meta,
        timeout=timeout,
        grace=10.0,
    )


def endpoint_argv(place: Place, intent: dict, steps: list[dict], facts: str | None = None) -> list[str]:
    profile = place.root / "profile.yaml"
    profile.write_text(yaml.safe_dump({"name": "acp-test", "harness": "codex", "permission_intent": intent}))
    script = place.root / "steps.json"
    script.write_text(json.dumps(steps))
    return [
        sys.executable,
        "-m",
        "agentbox.testing.acp_endpoint",
        "--profile",
        str(profile),
        "--workspace",
        str(place.ws),
        "--script",
        str(script),
        *(["--facts", facts] if facts else []),
    ]


@asynccontextmanager
async def connected(
    place: Place, intent: dict, steps: list[dict], client: RecordingClient | None = None, facts: str | None = None
):
    """(connection, process) of an endpoint alone, initialized; the test drives the rest. Afterwards the
    endpoint's stdin is closed and the process reaped (killed if it outlives 15 s)."""
    import acp

    client = client or RecordingClient("approve", fs=True, terminal=True)
    proc = await asyncio.create_subprocess_exec(
        *endpoint_argv(place, intent, steps, facts),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=open(place.root / "endpoint.stderr", "wb"),
        env=place.env(),
        cwd=str(place.root),
        start_new_session=True,
        limit=16 * 1024 * 1024,
    )
    conn = acp.connect_to_agent(client, proc.stdin, proc.stdout)
    try:
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=client.capabilities())
        yield conn, proc
    finally:
        await conn.close()
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except asyncio.TimeoutError:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


def runs(place: Place) -> list[dict]:
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "agentbox.cli", "runs", "list", "--json"],
        env=place.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def step_lines(run: AcpRun) -> list[str]:
    return [line for line in run.client.agent_text().splitlines() if line.startswith("step ")]
