"""The protocol test agent: a minimal ACP agent on the `acp` SDK that does, on each prompt, what its script says.

It stands in for no harness and no claim about a harness rests on it. It exists because no pinned ACP
adapter calls the client-side methods (`fs/*`, `terminal/*`) or sends every kind of message, yet
`agent-box acp` must hold each of them to the intent; this agent makes each call on purpose, so the
endpoint's answer can be observed. Evidence it produced says so (`acp-protocol-test-agent`).

Runs inside the sandbox as a plain script (`python -I acp_protocol_agent.py SCRIPT.json`): it imports the
SDK and the standard library only. The script is a JSON list of steps, run in order on every prompt; each
step's outcome is reported to the client as an agent message `step N <kind>: ok ...` or
`step N <kind>: error ...`, so a test sees that the attempt happened and what answered it.

    {"client_write": {"path": P, "content": C}}    fs/write_text_file
    {"client_read": {"path": P}}                    fs/read_text_file (the content is reported)
        (+ "swap": {"after": S, "dir": D, "to": T}) ... having left a process that, S seconds later, swaps the folder D
                                                    for a symlink to T (between the endpoint's check and the client's act)
    {"terminal": {"command": C, "args": [...]}}     terminal/create, wait_for_exit, output, release
    {"ask_then_run": {"command": SH}}               session/request_permission (kind execute); `sh -c SH` when allowed
        (+ "unasked_if_meta": KEY)                  ... or at once, unasked, when the session's `_meta` holds the dotted
                                                    KEY: what an adapter does with an option that widens its mode
    {"client_call": {"method": M, "params": {...}}} any request to the client (an extension, a newer method)
    {"report": {}}                                  what the agent was told: client capabilities, session params
    {"sleep": {"seconds": S}}                       waits (cancelled by session/cancel)
    {"crash": {"status": N}}                        exits at once, mid-prompt
    {"garble": {"line": TEXT}}                      writes TEXT (no JSON-RPC) on its stdout
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any, cast

import acp
from acp import schema

NAME = "acp-protocol-test-agent"


class ProtocolTestAgent:
    def __init__(self, steps: list[dict]):
        self.steps = steps
        self.client: Any = None
        self.seen: dict[str, Any] = {}
        self.cancelled: dict[str, asyncio.Event] = {}
        self.meta: dict[str, dict] = {}  # each session's `_meta`, as the SDK hands it over

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, client_capabilities=None, client_info=None, **kwargs):
        self.seen["clientCapabilities"] = (
            client_capabilities.model_dump(by_alias=True, exclude_none=True)
            if client_capabilities is not None
            else None
        )
        self.seen["initializeMeta"] = kwargs or None
        return schema.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(load_session=False),
            agent_info=schema.Implementation(name=NAME, version="1"),
        )

    async def new_session(self, cwd: str, mcp_servers=None, **kwargs):
        self.seen["session"] = {
            "cwd": cwd,
            "mcpServers": [s.model_dump(by_alias=True, exclude_none=True) for s in mcp_servers or []],
            "meta": kwargs or None,
        }
        session_id = f"protocol-{os.getpid()}-{len(self.cancelled) + 1}"
        self.cancelled[session_id] = asyncio.Event()
        self.meta[session_id] = kwargs
        return schema.NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, prompt, session_id: str, **kwargs):
        for n, step in enumerate(self.steps):
            kind, args = next(iter(step.items()))
            try:
                detail = await getattr(self, f"_{kind}")(session_id, **args)
                line = f"step {n} {kind}: ok {detail}".rstrip()
            except acp.RequestError as exc:
                line = f"step {n} {kind}: error {exc} {json.dumps(exc.data)}"
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the step's own failure, reported like a refusal
                line = f"step {n} {kind}: error {type(exc).__name__}: {exc}"
            await self._say(session_id, line)
            if self.cancelled.get(session_id) and self.cancelled[session_id].is_set():
                return schema.PromptResponse(stop_reason="cancelled")
        return schema.PromptResponse(stop_reason="end_turn")

    async def _say(self, session_id: str, text: str) -> None:
        await self.client.session_update(session_id=session_id, update=acp.update_agent_message_text(text + "\n"))

    # -- steps --------------------------------------------------------------------------------------------------
    async def _client_write(self, session_id: str, path: str, content: str, swap: dict | None = None) -> str:
        _swap_later(swap)
        await self.client.write_text_file(session_id=session_id, path=path, content=content)
        return f"wrote {path}"

    async def _client_read(self, session_id: str, path: str, swap: dict | None = None) -> str:
        _swap_later(swap)
        got = await self.client.read_text_file(session_id=session_id, path=path)
        return f"read {path}: {got.content}"

    async def _terminal(self, session_id: str, command: str, args: list[str] | None = None) -> str:
        made = await self.client.create_terminal(session_id=session_id, command=command, args=args or [])
        await self.client.wait_for_terminal_exit(session_id=session_id, terminal_id=made.terminal_id)
        out = await self.client.terminal_output(session_id=session_id, terminal_id=made.terminal_id)
        await self.client.release_terminal(session_id=session_id, terminal_id=made.terminal_id)
        return f"terminal {made.terminal_id} exit {out.exit_status}: {out.output}"

    async def _ask_then_run(self, session_id: str, command: str, unasked_if_meta: str | None = None) -> str:
        if unasked_if_meta and _holds(self.meta.get(session_id) or {}, unasked_if_meta):
            done = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
            return f"unasked (_meta.{unasked_if_meta}), ran: exit {done.returncode}"
        answer = await self.client.request_permission(
            session_id=session_id,
            tool_call=schema.ToolCallUpdate(
                tool_call_id=f"call-{os.getpid()}",
                title=command,
                kind="execute",
                status="pending",
                raw_input={"command": command},
            ),
            options=[
                schema.PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
                schema.PermissionOption(option_id="once", name="Allow", kind="allow_once"),
                schema.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        chosen = getattr(outcome, "option_id", None)
        if chosen in ("always", "once"):
            done = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
            return f"allowed ({chosen}), ran: exit {done.returncode}"
        return f"not allowed ({chosen or outcome.outcome}), did not run"

    async def _client_call(self, session_id: str, method: str, params: dict | None = None) -> str:
        got = await self.client._conn.send_request(method, {"sessionId": session_id, **(params or {})})
        return f"{method} answered {json.dumps(got)}"

    async def _report(self, session_id: str) -> str:
        return json.dumps(self.seen, sort_keys=True)

    async def _sleep(self, session_id: str, seconds: float) -> str:
        try:
            await asyncio.wait_for(self.cancelled[session_id].wait(), seconds)
            return "cancelled"
        except asyncio.TimeoutError:
            return "slept"

    async def _crash(self, session_id: str, status: int = 3) -> str:
        sys.stdout.flush()
        os._exit(status)

    async def _garble(self, session_id: str, line: str) -> str:
        os.write(1, (line + "\n").encode())
        return "garbled"


def _swap_later(swap: dict | None) -> None:
    """`{"after": S, "dir": D, "to": T}`: a process left behind (orphaned, as a background job would be) renames the
    folder D away after S seconds and puts a symlink to T in its place: what a process of the run can do to a path
    between the endpoint's judgement of a request and the client's act on it."""
    if not swap:
        return
    script = 'sleep "$1"; mv "$2" "$2.before-swap" && ln -s "$3" "$2"'
    subprocess.run(
        [
            "sh",
            "-c",
            f"(sh -c '{script}' swap \"$@\" >/dev/null 2>&1 &)",
            "orphan",
            str(swap["after"]),
            swap["dir"],
            swap["to"],
        ],
        check=True,
    )


def _holds(meta: dict, dotted: str) -> bool:
    value: object = meta
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def main() -> None:
    with open(sys.argv[1]) as f:
        steps = json.load(f)
    # the SDK looks each method up by name and answers method-not-found for those absent: the agent implements
    # only what the protocol test needs, not all of `acp.Agent`
    asyncio.run(acp.run_agent(cast(acp.Agent, ProtocolTestAgent(steps))))


if __name__ == "__main__":
    main()
