"""`terminal/*`, served by the endpoint inside the sandbox instead of by the client on the host.

A client's terminal runs its command on the host, past every layer of the plan. The endpoint therefore
never passes `terminal/*` on: it runs the command itself, in the run's sandbox (same plan, proxy and
marker as the agent), and answers the agent as a client would. Whether it may run at all is the policy's
call (`shell: deny` refuses, `ask` asks the client first).
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from acp.exceptions import RequestError

__all__ = ["Terminals"]

_DEFAULT_LIMIT = 1024 * 1024


@dataclass
class _Terminal:
    proc: asyncio.subprocess.Process
    limit: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task | None = None

    async def pump(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(65536):
            self.output += chunk
            if len(self.output) > self.limit:
                # keep the newest bytes, cut at a character boundary (ACP: truncate from the beginning)
                cut = len(self.output) - self.limit
                while cut < len(self.output) and (self.output[cut] & 0xC0) == 0x80:
                    cut += 1
                del self.output[:cut]
                self.truncated = True

    def exit_status(self) -> dict | None:
        code = self.proc.returncode
        if code is None:
            return None
        return {"exitCode": code, "signal": None} if code >= 0 else {"exitCode": None, "signal": _signal_name(-code)}


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


class Terminals:
    """The run's terminals by id. `spawn(argv)` starts a command in the sandbox (stdout and stderr merged)."""

    def __init__(self, spawn: Callable[[list[str]], Awaitable[asyncio.subprocess.Process]]):
        self._spawn = spawn
        self._ids = itertools.count(1)
        self._open: dict[str, _Terminal] = {}

    async def create(self, params: dict) -> dict:
        command = [params["command"], *(params.get("args") or [])]
        env = [f"{e['name']}={e['value']}" for e in params.get("env") or []]
        cwd = params.get("cwd")
        # env(1) inside the sandbox sets the directory and variables: the sandbox's own environment is the base
        argv = ["env", *(["-C", cwd] if cwd else []), *env, "--", *command] if (env or cwd) else command
        proc = await self._spawn(argv)
        term = _Terminal(proc, int(params.get("outputByteLimit") or _DEFAULT_LIMIT))
        term.reader = asyncio.create_task(term.pump())
        terminal_id = f"agentbox-{next(self._ids)}"
        self._open[terminal_id] = term
        return {"terminalId": terminal_id}

    def _get(self, params: dict) -> _Terminal:
        terminal_id = params.get("terminalId")  # a string once the schema accepted the request
        term = self._open.get(terminal_id) if isinstance(terminal_id, str) else None
        if term is None:
            raise RequestError.invalid_params({"terminalId": params.get("terminalId"), "details": "no such terminal"})
        return term

    async def output(self, params: dict) -> dict:
        term = self._get(params)
        out: dict[str, Any] = {"output": term.output.decode("utf-8", errors="replace"), "truncated": term.truncated}
        status = term.exit_status()
        if status is not None:
            if term.reader is not None:
                await term.reader  # every byte read before saying it exited
                out["output"] = term.output.decode("utf-8", errors="replace")
            out["exitStatus"] = status
        return out

    async def wait_for_exit(self, params: dict) -> dict:
        term = self._get(params)
        await term.proc.wait()
        if term.reader is not None:
            await term.reader
        return term.exit_status() or {}

    async def kill(self, params: dict) -> dict:
        term = self._get(params)
        _kill(term.proc)
        return {}

    async def release(self, params: dict) -> dict:
        terminal_id = params.get("terminalId")  # a string once the schema accepted the request
        term = self._open.pop(terminal_id, None) if isinstance(terminal_id, str) else None
        if term is None:
            raise RequestError.invalid_params({"terminalId": params.get("terminalId"), "details": "no such terminal"})
        _kill(term.proc)
        return {}

    async def close(self) -> None:
        for term in self._open.values():
            _kill(term.proc)
            try:
                await asyncio.wait_for(term.proc.wait(), 2)
            except asyncio.TimeoutError:
                pass
            if term.reader is not None:
                term.reader.cancel()
        self._open.clear()


def _kill(proc: asyncio.subprocess.Process) -> None:
    import os
    import signal

    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
