"""The endpoint's sandbox: one run folder, one egress proxy, and every process it starts inside the plan.

The ACP agent is the first process; terminals the agent opens are more, in the same plan, run folder and
proxy, each carrying the run's marker, so ending the run (`close`) ends all of them, and a Run the endpoint
could not end (it was killed) is recovered by the next command that opens the Run store (`RunStore.reap`).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field

from ..profile_state import keep, restore
from ..sandbox.session import cleanup, environment, kill_marked, materialize, settle_key_approvals
from ..sandbox.startup import Started, filter_fd
from .notes import note

__all__ = ["SandboxedRun", "STDIO_LIMIT"]

STDIO_LIMIT = 50 * 1024 * 1024  # one ACP message may carry a whole file; the SDK's own default
_GRACE = 1.0  # seconds the agent gets to exit after its stdin closes, and again after SIGTERM


@dataclass
class SandboxedRun:
    entry: dict  # the plan's sandbox, as launch.execute takes it
    run_dir: str
    run_id: str
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    started: Started | None = None
    state_dir: str | None = None  # the profile's kept answers (`profile_state`), as for `launch`

    @classmethod
    def open(cls, entry: dict, run_dir: str, run_id: str, cwd: str, extra_env: dict[str, str],
             state_dir: str | None = None) -> "SandboxedRun":
        """Materialize the run folder and bind the egress proxy's sockets; nothing runs in the sandbox yet, and the
        proxy serves from `serve_proxy` (which may run while the agent starts: startup.Started, `serve_later`).
        Problems with the profile's kept answers go to `note` (stderr)."""
        run = cls(entry, run_dir, run_id, cwd, state_dir=state_dir)
        materialize(entry, run_dir)
        run.env = environment(entry, run_id, extra=extra_env)
        # gives run.env the credentials' placeholders (and the ports the proxy's sockets were bound on)
        run.started = Started(entry, run_dir, run_id, env=run.env, serve_later=True)
        settle_key_approvals(entry, run_dir, run.env)  # of the key the agent is given: its placeholder
        if state_dir is not None:
            for problem in restore(entry, run_dir, state_dir):
                note(problem)
        return run

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
            return subprocess.Popen([*argv, *command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env,
                                    cwd=self.cwd, start_new_session=True, pass_fds=(fd,) if fd is not None else ())
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
                *argv, *command, stdin=asyncio.subprocess.PIPE if pipes else asyncio.subprocess.DEVNULL, stdout=out,
                stderr=None if pipes else asyncio.subprocess.STDOUT, env=self.env, cwd=self.cwd,
                start_new_session=True, limit=STDIO_LIMIT, pass_fds=(fd,) if fd is not None else ())
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

    def proxy_notes(self) -> list[str]:
        return list(self.started.notes) if self.started is not None else []

    def close(self, egress_copy: str | None) -> str:
        """End every process of the run, stop the proxy, keep its log, remove the run folder; what was done."""
        if self.state_dir is not None:  # the agent has stopped: keep what it answered that widens nothing
            kill_marked(self.run_id)
            for line in keep(self.entry, self.run_dir, self.state_dir):
                note(line)
        return cleanup(self.run_id, self.run_dir, self.started, egress_copy=egress_copy)


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
