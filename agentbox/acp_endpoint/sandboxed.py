"""The endpoint's processes in its run: the ACP agent first, then the terminals it opens, all in one sandbox.

The run itself (its folder, the egress proxy, the kept answers, the cleanup) is the one lifecycle every run has
(`run.lifecycle`); this is how the endpoint drives it: each process in the same plan, run folder and proxy,
carrying the run's marker, so ending the run ends all of them, and a Run the endpoint could not end (it was killed)
is recovered by the next command that opens the Run store (`RunStore.reap`).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentbox.run.lifecycle import SandboxedRun as Run
from agentbox.sandbox.startup import filter_fd

if TYPE_CHECKING:  # both load lazily: the relay's start is the measured path (benchmarks/acp_endpoint.py)
    import asyncio
    import subprocess

__all__ = ["SandboxedRun", "STDIO_LIMIT"]

STDIO_LIMIT = 50 * 1024 * 1024  # one ACP message may carry a whole file; the SDK's own default
_GRACE = 1.0  # seconds the agent gets to exit after its stdin closes, and again after SIGTERM


@dataclass
class SandboxedRun:
    run: Run  # made with `serve_later`: the proxy's sockets are bound, and it serves from `serve_proxy`
    cwd: str

    @property
    def entry(self) -> dict:
        return self.run.entry

    @property
    def started(self):
        return self.run.started

    @property
    def env(self) -> dict[str, str]:
        return self.run.env

    def serve_proxy(self) -> None:
        """Start the egress proxy on its bound sockets (blocking: run it in a thread); a failure is a note on the
        run (it then ends `failed`, exit 4) and raises ProxyStartError."""
        assert self.started is not None
        try:
            self.started.serve()
        except Exception as exc:
            self.started.notes.append(f"the egress proxy did not start: {exc}")
            raise

    def _argv(self) -> tuple[list[str], int | None]:
        """The sandbox's argv up to the command, with a seccomp descriptor of its own (the caller closes it):
        bubblewrap reads its filter program from a descriptor at start, so each sandbox needs one."""
        assert self.started is not None
        argv, fd = list(self.started.argv), None
        if "--seccomp" in argv:
            fd = filter_fd(self.entry)
            argv[argv.index("--seccomp") + 1] = str(fd)
        return argv, fd

    def start(self, command: list[str]) -> "subprocess.Popen":
        """The agent inside the sandbox, in its own session, stdin/stdout piped: without asyncio, which loads while
        the agent starts (`adopt` hands its pipes to the event loop)."""
        import subprocess

        argv, fd = self._argv()
        try:
            return subprocess.Popen(
                [*argv, *command],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                pass_fds=(*((fd,) if fd is not None else ()), *self.started.guard_fds),
            )
        finally:
            if fd is not None:
                os.close(fd)

    @staticmethod
    async def adopt(popen: "subprocess.Popen") -> "Agent":
        """The started agent's pipes as asyncio streams, its exit as an awaitable."""
        import asyncio

        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=STDIO_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), popen.stdout)
        transport, protocol = await loop.connect_write_pipe(lambda: asyncio.streams.FlowControlMixin(), popen.stdin)
        return Agent(popen, reader, asyncio.StreamWriter(transport, protocol, None, loop))

    async def spawn(self, command: list[str], *, pipes: bool = True) -> "asyncio.subprocess.Process":
        """`command` inside the sandbox, in its own session; stdin/stdout piped (the agent) or merged (a terminal)."""
        import asyncio

        argv, fd = self._argv()
        try:
            out = asyncio.subprocess.PIPE
            return await asyncio.create_subprocess_exec(
                *argv,
                *command,
                stdin=asyncio.subprocess.PIPE if pipes else asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=None if pipes else asyncio.subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                limit=STDIO_LIMIT,
                pass_fds=(*((fd,) if fd is not None else ()), *self.started.guard_fds),
            )
        finally:
            if fd is not None:
                os.close(fd)

    @staticmethod
    async def stop(proc) -> int | None:
        """Close the agent's stdin, give it a moment, then TERM and KILL its process group; its exit status."""
        import asyncio

        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                return await asyncio.wait_for(proc.wait(), timeout=_GRACE)
            except asyncio.TimeoutError:
                continue
        return proc.returncode


class Agent:
    """A started agent as the relay uses an asyncio subprocess: `pid`, `returncode`, `stdin` and `stdout` streams,
    `await wait()` (its exit status, -N for signal N)."""

    def __init__(self, popen, stdout, stdin):
        self._popen = popen
        self.pid = popen.pid
        self.stdout, self.stdin = stdout, stdin
        self._exit = None

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        import asyncio

        if self._exit is None:  # one waiter thread, however many wait
            self._exit = asyncio.get_running_loop().run_in_executor(None, self._popen.wait)
        return await asyncio.shield(self._exit)
