"""A harness on a pseudo-terminal, for TUI evidence and smokes.

pexpect 4.8 closes every descriptor above stderr in the child and does not forward ptyprocess's
`pass_fds`, so a run whose bwrap reads its seccomp program from an inherited descriptor fails with
"Can't read seccomp data: Bad file descriptor". `spawn` keeps exactly the descriptors the run names."""

from __future__ import annotations

import pexpect
import ptyprocess

from agentbox.sandbox.session import start_scoped

__all__ = ["spawn"]


class _Spawn(pexpect.spawn):
    def __init__(self, *args, pass_fds: tuple[int, ...] = (), **kwargs):
        self._pass_fds = tuple(pass_fds)
        super().__init__(*args, **kwargs)

    def _spawnpty(self, args, **kwargs):
        return ptyprocess.PtyProcess.spawn(args, pass_fds=self._pass_fds, **kwargs)


def spawn(argv: list[str], *, env: dict[str, str], cwd: str, pass_fds: tuple[int, ...] = (), **kwargs) -> pexpect.spawn:
    """`argv` on a new pty with exactly `env`, inheriting `pass_fds` (the sandbox's seccomp program), started as
    `launch` starts it (a run's Landlock scope entered on a thread, `session.start_scoped`)."""
    return start_scoped(argv, lambda a: _Spawn(a[0], list(a[1:]), env=env, cwd=cwd, pass_fds=pass_fds, **kwargs))
