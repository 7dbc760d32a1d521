"""A harness on a pseudo-terminal, for TUI evidence and smokes.

pexpect 4.8 closes every descriptor above stderr in the child and does not forward ptyprocess's
`pass_fds`, so a run whose bwrap reads its seccomp program from an inherited descriptor fails with
"Can't read seccomp data: Bad file descriptor". And ptyprocess keeps the descriptors it is passed open but
leaves their close-on-exec flag as it is: Python opens every file with it set, so a held path bwrap binds from
`/proc/self/fd/N` was gone by the time bwrap ran ("Can't find source path /proc/self/fd/27", every
`host_executed` vector of the composed layer in the TUI). `spawn` keeps exactly the descriptors the run names,
each inherited across the exec, as subprocess's `pass_fds` does."""

from __future__ import annotations

import os
from functools import partial

import pexpect
import ptyprocess

from agentbox.sandbox.session import start_scoped

__all__ = ["spawn"]


class _Spawn(pexpect.spawn):
    def __init__(self, *args, pass_fds: tuple[int, ...] = (), **kwargs):
        self._pass_fds = tuple(pass_fds)
        super().__init__(*args, **kwargs)

    def _spawnpty(self, args, preexec_fn=None, **kwargs):
        return ptyprocess.PtyProcess.spawn(
            args, pass_fds=self._pass_fds, preexec_fn=partial(_inherit, self._pass_fds, preexec_fn), **kwargs
        )


def _inherit(fds: tuple[int, ...], then) -> None:
    """In the child, between its fork and its exec: the named descriptors survive the exec."""
    for fd in fds:
        os.set_inheritable(fd, True)
    if then is not None:
        then()


def spawn(argv: list[str], *, env: dict[str, str], cwd: str, pass_fds: tuple[int, ...] = (), **kwargs) -> pexpect.spawn:
    """`argv` on a new pty with exactly `env`, inheriting `pass_fds` (the sandbox's seccomp program), started as
    `launch` starts it (a run's Landlock scope entered on a thread, `session.start_scoped`)."""
    return start_scoped(argv, lambda a: _Spawn(a[0], list(a[1:]), env=env, cwd=cwd, pass_fds=pass_fds, **kwargs))
