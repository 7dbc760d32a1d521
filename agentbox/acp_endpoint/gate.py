"""The gate of `agent-box acp`: the launch gate on evidence taken in ACP mode, answered at `initialize`.

The decision is `launch`'s (`launch_plan.build`), for the harness driven as an ACP agent: evidence recorded
in mode `acp` carries an item; headless evidence only where the OS sandbox alone blocks every vector of it
(`gate.carried_by_sandbox`), since an ACP agent's permission handling is another code path than a headless
run's. It is made before anything is read from the client or started, so a refusal is ready when the
client's `initialize` arrives: that request (and any other) is answered with an ACP error naming the
items, and the endpoint exits 3 without having started a process.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from acp.exceptions import RequestError

from agentbox.harnesses.acp import AcpUnavailable, acp_binds, acp_command, acp_entry, adapter_build
from agentbox.errors import HarnessError
from agentbox.run.launch_plan import Built, build

__all__ = ["ACP_MODE", "Ready", "prepare", "answer_with_error", "refusal_data"]

ACP_MODE = "acp"


@dataclass
class Ready:
    """A gated plan and the command that starts the harness's ACP agent inside it."""

    built: Built
    argv: list[str]
    env: dict[str, str]


def prepare(
    profile_arg: str,
    cwd: str,
    *,
    evidence: str | None = None,
    accept_unverified: tuple[str, ...] = (),
    binary: str | None = None,
) -> Ready:
    from agentbox.harnesses.installs import find_binary
    from agentbox.core.profile import load_profile

    harness = load_profile(profile_arg).profile.harness
    entry = acp_entry(harness)
    if entry is None:
        raise AcpUnavailable(f"{harness} has no ACP agent agent-box knows how to start (agentbox/data/acp.yaml)")
    adapter_binary, adapter = None, None
    if entry.adapter is not None:
        found = find_binary(entry.adapter)
        if found is None:
            raise AcpUnavailable(
                f"{harness}'s ACP adapter {entry.adapter} is not installed: "
                f"agent-box harness install {entry.adapter}@VERSION"
            )
        # resolved: the sandbox binds the adapter's install folder at its real path, not the links leading there
        adapter_binary = os.path.realpath(found.binary)
        # the build of the adapter `acp_command` starts below: only evidence about that program counts
        adapter = adapter_build(harness, found, project=cwd)  # refused where a run could replace it
    built = build(
        profile_arg,
        cwd,
        evidence=evidence,
        accept_unverified=accept_unverified,
        binary=binary,
        mode=ACP_MODE,
        ro_binds=acp_binds(harness, adapter_binary),
        adapter=adapter[0] if adapter is not None else None,
    )
    if adapter is not None:  # a cached start re-checks the adapter's files too: changed, the gate decides again
        built.check["build"] = [*built.check["build"], *adapter[1].as_check()]
    if built.probe.binary is None:
        raise HarnessError(f"{harness}: no binary to start")
    argv, env, _ = acp_command(harness, built.plan.native, built.probe.binary, adapter_binary)
    return Ready(built, argv, env)


def refusal_data(built: Built, run_id: str | None) -> dict:
    """What a refused `initialize` carries besides its message: the refused items, for a client to show."""
    return {
        "refusedBy": "agent-box",
        "run": run_id,
        "items": [
            {
                "item": v.item,
                "capability": v.capability,
                "claim": v.claim,
                "layer": v.layer,
                "vectors": list(v.vectors),
                "reason": v.reason,
            }
            for v in built.decision.refused
        ],
        "errors": list(built.decision.errors),
    }


async def _answer(error: RequestError) -> None:
    from agentbox.acp_endpoint.stdio import stdio_streams

    from agentbox.acp_endpoint.notes import note
    from agentbox.acp_endpoint.relay import connect
    from agentbox.acp_endpoint.sandboxed import STDIO_LIMIT

    reader, writer = await stdio_streams(limit=STDIO_LIMIT)
    answered = asyncio.Event()

    async def handler(method, params, is_notification):
        if not is_notification:
            asyncio.get_running_loop().call_soon(answered.set)  # after the error below is on its way
        raise error

    def garbled(reason: str, line: bytes) -> None:
        note(f"malformed message from the client ({reason}) before initialize")

    conn, _ = connect(handler, reader, writer, garbled, "acp.refusal")
    eof = asyncio.ensure_future(asyncio.shield(conn._recv_task)) if conn._recv_task else None
    waits = [asyncio.ensure_future(answered.wait()), *([eof] if eof else [])]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    from agentbox.acp_endpoint.relay import _drain

    await _drain(conn)
    await conn.close()


def answer_with_error(error: RequestError) -> None:
    """Serve the client only this error: the first request gets it, then the endpoint ends (EOF ends it too)."""
    asyncio.run(_answer(error))
