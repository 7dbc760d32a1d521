"""A small ACP client for tests: it spawns an agent, runs one prompt, and records what came back.

`RecordingClient` records every session update and permission request and answers each request
with a fixed policy (approve: the first allow option; approve_all: the widest one, "always" first;
deny: the first reject option). Asked to, it offers the file system and terminals and serves them on
the host, as an editor does: that is the bypass `agent-box acp` closes, so a test sees it when it is
open. `run_acp` spawns the agent with exactly the argv and environment given (the sandbox's), in its
own session, and bounds the whole exchange by one timeout; the process group is killed afterwards.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Literal, cast

__all__ = ["RecordingClient", "AcpRun", "run_acp", "Policy"]

Policy = Literal["approve", "approve_all", "deny"]
_ALLOW = ("allow_once", "allow_always")
_ALLOW_ALL = ("allow_always", "allow_once")
_REJECT = ("reject_once", "reject_always")
_GRACE = 1.0  # seconds an agent gets to exit after stdin closes, and again after SIGTERM


@dataclass
class PermissionRecord:
    session_id: str
    tool_call: Any  # acp.schema.ToolCallUpdate
    options: list[Any]  # acp.schema.PermissionOption
    chosen: str | None  # the option id answered, None: cancelled

    @property
    def title(self) -> str:
        return getattr(self.tool_call, "title", None) or ""

    @property
    def raw_input(self) -> Any:
        return getattr(self.tool_call, "raw_input", None)


class RecordingClient:
    """An `acp.Client`: records updates and permission requests; answers with `policy`."""

    def __init__(self, policy: Policy = "approve", *, fs: bool = False, terminal: bool = False, delay: float = 0.0):
        self.policy = policy
        self.fs, self.terminal = fs, terminal  # offered to the agent, and served on the host
        self.delay = delay  # seconds before a file request is served (an editor opening the buffer first)
        self.updates: list[tuple[str, Any]] = []
        self.permission_requests: list[PermissionRecord] = []
        self.calls: list[tuple[str, Any]] = []  # client methods the agent called: (method, path or command)

    def capabilities(self) -> Any:
        from acp.schema import ClientCapabilities, FileSystemCapabilities

        return ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=self.fs, write_text_file=self.fs), terminal=self.terminal
        )

    # -- what the agent calls ----------------------------------------------------------------------
    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        kinds = {"approve": _ALLOW, "approve_all": _ALLOW_ALL}.get(self.policy, _REJECT)
        chosen = next((o.option_id for k in kinds for o in options if o.kind == k), None)
        self.permission_requests.append(PermissionRecord(session_id, tool_call, list(options), chosen))
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> Any:
        from acp import RequestError
        from acp.schema import WriteTextFileResponse

        self.calls.append(("fs/write_text_file", path))
        if not self.fs:
            raise RequestError.method_not_found("fs/write_text_file")  # not advertised in our capabilities
        if self.delay:
            await asyncio.sleep(self.delay)
        with open(path, "w") as f:
            f.write(content)
        return WriteTextFileResponse()

    async def read_text_file(
        self, path: str, session_id: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> Any:
        from acp import RequestError
        from acp.schema import ReadTextFileResponse

        self.calls.append(("fs/read_text_file", path))
        if not self.fs:
            raise RequestError.method_not_found("fs/read_text_file")
        if self.delay:
            await asyncio.sleep(self.delay)
        with open(path) as f:
            return ReadTextFileResponse(content=f.read())

    async def create_terminal(
        self,
        command: str,
        session_id: str,
        args: list[str] | None = None,
        env: Any = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """As an editor does: the command runs on the host (which is why the endpoint never passes this on)."""
        import subprocess

        from acp import RequestError
        from acp.schema import CreateTerminalResponse

        self.calls.append(("terminal/create", [command, *(args or [])]))
        if not self.terminal:
            raise RequestError.method_not_found("terminal/create")
        subprocess.run([command, *(args or [])], cwd=cwd, capture_output=True, timeout=60)
        return CreateTerminalResponse(terminal_id="host-1")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None

    # -- reading the record --------------------------------------------------------------------------
    def kinds(self) -> list[str]:
        """The `sessionUpdate` discriminator of every update, in order."""
        return [getattr(u, "session_update", type(u).__name__) for _, u in self.updates]

    def agent_text(self) -> str:
        out = []
        for _, u in self.updates:
            if getattr(u, "session_update", None) == "agent_message_chunk":
                content = getattr(u, "content", None)
                out.append(getattr(content, "text", "") or "")
        return "".join(out)

    def tool_calls(self) -> list[Any]:
        return [u for _, u in self.updates if getattr(u, "session_update", None) in ("tool_call", "tool_call_update")]


@dataclass
class AcpRun:
    """What one ACP exchange gave: the protocol answers, the client's record, timings, stderr."""

    client: RecordingClient
    init: Any = None
    session: Any = None
    stop_reason: str | None = None
    error: str | None = None
    timed_out: bool = False
    elapsed: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)  # seconds since start when each stage ended
    returncode: int | None = None
    stopped_by: str | None = None  # None: the agent exited on its own when stdin closed
    stderr: str = ""

    def describe(self) -> str:
        stages = {k: round(v, 2) for k, v in self.stages.items()}
        return (
            f"stop={self.stop_reason} error={self.error} timed_out={self.timed_out} stages={stages} "
            f"exit={self.returncode} stopped_by={self.stopped_by} "
            f"updates={self.client.kinds()} permissions={[p.title for p in self.client.permission_requests]}\n"
            f"stderr: {self.stderr[-3000:]}"
        )


async def _exchange(
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    client: RecordingClient,
    prompt: str,
    session_cwd: str,
    mode: str | None,
    mcp_servers: list[Any],
    run: AcpRun,
    stderr_fd: int,
    pass_fds: tuple[int, ...],
    session_meta: dict | None = None,
    grace: float = _GRACE,
) -> None:
    import acp
    from acp.schema import Implementation

    start = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr_fd,
        env=env,
        cwd=cwd,
        start_new_session=True,
        limit=16 * 1024 * 1024,
        pass_fds=pass_fds,
    )
    run.stages["spawned"] = time.monotonic() - start
    # the SDK looks each method up by name and answers method-not-found for those absent: the client implements
    # only what the tests need, not all of `acp.Client`
    conn = acp.connect_to_agent(cast(acp.Client, client), proc.stdin, proc.stdout)
    try:
        try:
            run.init = await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=client.capabilities(),
                client_info=Implementation(name="agentbox-conformance", version="1"),
            )
            run.stages["initialized"] = time.monotonic() - start
            run.session = await conn.new_session(cwd=session_cwd, mcp_servers=mcp_servers, **(session_meta or {}))
            run.stages["session"] = time.monotonic() - start
            if mode is not None:
                await conn.set_session_mode(session_id=run.session.session_id, mode_id=mode)
            response = await conn.prompt(session_id=run.session.session_id, prompt=[acp.text_block(prompt)])
            run.stop_reason = response.stop_reason
            run.stages["prompted"] = time.monotonic() - start
        except asyncio.CancelledError:  # the overall timeout: stop the agent at once
            _kill_group(proc.pid)
            raise
        except Exception as exc:  # a protocol error is an outcome to report, not a crash of the helper
            detail = getattr(exc, "data", None)
            run.error = f"{type(exc).__name__}: {exc}" + (f" {detail}" if detail else "")
    finally:
        try:
            await conn.close()
        except Exception:
            pass
        if proc.stdin is not None:
            proc.stdin.close()
        # An agent may keep running after stdin closes (codex-acp 0.16.0 does): a short grace, then TERM, KILL.
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                _kill_group(proc.pid, sig)
                run.stopped_by = signal.Signals(sig).name
            try:
                run.returncode = await asyncio.wait_for(proc.wait(), timeout=grace)
                break
            except asyncio.TimeoutError:
                continue
        run.stages["stopped"] = time.monotonic() - start


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_acp(
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    prompt: str,
    *,
    session_cwd: str | None = None,
    policy: Policy = "approve",
    mode: str | None = None,
    mcp_servers: list[Any] | None = None,
    timeout: float = 120.0,
    stderr_path: str | None = None,
    pass_fds: tuple[int, ...] = (),
    client: RecordingClient | None = None,
    session_meta: dict | None = None,
    grace: float = _GRACE,
) -> AcpRun:
    """Spawn the agent (`argv`, exactly `env`, inheriting `pass_fds`: the sandbox's seccomp program),
    initialize, open a session (its `_meta`: `session_meta`), prompt once; all within `timeout`. `grace`: how
    long the agent gets to exit after its stdin closes (an `agent-box acp` endpoint ends its sandbox first)."""
    import tempfile

    client = client or RecordingClient(policy)
    run = AcpRun(client=client)
    with tempfile.TemporaryFile() if stderr_path is None else open(stderr_path, "w+b") as err:
        start = time.monotonic()

        async def bounded() -> None:
            try:
                await asyncio.wait_for(
                    _exchange(
                        argv,
                        env,
                        cwd,
                        client,
                        prompt,
                        session_cwd or cwd,
                        mode,
                        mcp_servers or [],
                        run,
                        err.fileno(),
                        pass_fds,
                        session_meta,
                        grace,
                    ),
                    timeout,
                )
            except asyncio.TimeoutError:
                run.timed_out = True

        asyncio.run(bounded())
        run.elapsed = time.monotonic() - start
        err.seek(0)
        run.stderr = err.read().decode(errors="replace")
    return run
