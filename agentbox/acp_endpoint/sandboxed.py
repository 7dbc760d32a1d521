"""The endpoint's sandbox: one run folder, one egress proxy, and every process it starts inside the plan.

The ACP agent is the first process; terminals the agent opens are more, in the same plan, run folder and
proxy, each carrying the run's marker, so ending the run (`close`) ends all of them, and a Run the endpoint
could not end (it was killed) is recovered by the next command that opens the Run store (`RunStore.reap`).
"""

from __future__ import annotations

import asyncio
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
        """Materialize the run folder and start the egress proxy; nothing runs in the sandbox yet. Problems with
        the profile's kept answers go to `note` (stderr)."""
        run = cls(entry, run_dir, run_id, cwd, state_dir=state_dir)
        materialize(entry, run_dir)
        run.env = environment(entry, run_id, extra=extra_env)
        run.started = Started(entry, run_dir, run_id, env=run.env)  # gives run.env the credentials' placeholders
        settle_key_approvals(entry, run_dir, run.env)  # of the key the agent is given: its placeholder
        if state_dir is not None:
            for problem in restore(entry, run_dir, state_dir):
                note(problem)
        return run

    async def spawn(self, command: list[str], *, pipes: bool = True) -> asyncio.subprocess.Process:
        """`command` inside the sandbox, in its own session; stdin/stdout piped (the agent) or merged (a terminal)."""
        assert self.started is not None
        argv, fd = list(self.started.argv), None
        if "--seccomp" in argv:
            # bubblewrap reads its filter program from a descriptor at start: each sandbox needs one of its own
            fd = filter_fd(self.entry)
            argv[argv.index("--seccomp") + 1] = str(fd)
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
    async def stop(proc: asyncio.subprocess.Process) -> int | None:
        """Close the agent's stdin, give it a moment, then TERM and KILL its process group; its exit status."""
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
