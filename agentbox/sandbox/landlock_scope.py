"""Keeps every process of a run away from abstract unix sockets made outside it (Landlock scoping).

An abstract unix socket (a name starting with a NUL byte: a D-Bus session bus, an X server, some
agents') is not a file: no mount hides it, and it belongs to the network namespace. A run that shares
the host's network (`unrestricted`) could otherwise reach every one of them. Landlock's
`LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET` (ABI 6, Linux 6.12) refuses connecting to one made outside the
process's Landlock domain, and the domain is inherited by everything the process starts. The ruleset
handles no file system or network access, so it leaves bubblewrap's own mounts alone (Landlock refuses
mounts only to domains that restrict the file system).

Run as a script it applies the scope and execs its arguments: `python3 -I -S landlock_scope.py bwrap ...`; that
command line is how a plan says the scope is wanted. Agent-Box's own starts (`sandbox run`, `launch`, a harness
run, a TUI) do not exec a second Python for it (~10 ms of the launch hot path, benchmarks/sandbox_run.py): they
start the rest of the command line from a thread that entered the scope first (`in_scope`); any other caller
still gets the scope from the script. Standard library only: it runs on the launch hot path, before bubblewrap.
"""

from __future__ import annotations

import ctypes
import os
import sys

TYPE_CHECKING = False  # `typing` is not imported on the launch hot path
if TYPE_CHECKING:
    from typing import Callable, TypeVar

    T = TypeVar("T")

__all__ = ["abi_version", "supported", "restrict", "in_scope", "ABI_SCOPED"]

# The generic syscall table: x86_64 and aarch64 (and every architecture since 5.13) number them alike.
_CREATE_RULESET, _RESTRICT_SELF = 444, 446
_CREATE_RULESET_VERSION = 1 << 0
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
_PR_SET_NO_NEW_PRIVS = 38
ABI_SCOPED = 6  # the first ABI with `scoped`


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI (0: no Landlock, or disabled at boot)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    got = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(got), 0)


def supported() -> bool:
    return abi_version() >= ABI_SCOPED


def restrict() -> None:
    """Put this process (and all it will start) in a domain that cannot reach outside abstract sockets."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    attr = _RulesetAttr(0, 0, _SCOPE_ABSTRACT_UNIX_SOCKET)
    fd = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        # Landlock asks for no_new_privs from anyone without CAP_SYS_ADMIN; bubblewrap sets it anyway
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def in_scope(start: "Callable[[], T]") -> "T":
    """What `start()` returns (a pid, or an object with a `.pid`), called on a thread of its own that entered the
    scope first: the process it starts is in the scope, and this process is not (a Landlock domain and
    no_new_privs belong to a thread, and a child inherits its parent thread's). The thread stays until that
    process has ended, unreaped: bubblewrap's --die-with-parent takes the thread that started it for its parent.
    OSError, naming the scope, when the scope cannot be applied: nothing is started then (fail closed)."""
    import _thread  # the thread module itself: `threading` is not on the hot path, and nothing here needs it

    ready = _thread.allocate_lock()
    ready.acquire()
    box: list = []

    def body() -> None:
        try:
            try:
                restrict()
            except OSError as exc:
                raise OSError(exc.errno, f"the run's Landlock scope (abstract unix sockets) cannot be applied: {exc}")
            made = start()
        except BaseException as exc:
            box.append(exc)
            ready.release()
            return
        box.append(made)
        ready.release()
        pid = _pid(made)
        try:
            if pid is not None:
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass  # reaped already by whoever waits for it

    _thread.start_new_thread(body, ())
    try:
        ready.acquire()
    except BaseException:
        # interrupted (Ctrl-C) while the thread starts it: what it starts is ended, never left running unwatched
        with ready:
            pid = _pid(box[0])
        if pid is not None:
            os.kill(pid, 9)
        raise
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def _pid(made) -> int | None:
    """The process `start()` made: a pid, or a Popen's (a pexpect spawn's) `.pid`; None for anything else."""
    if isinstance(made, BaseException):
        return None
    return made if isinstance(made, int) else getattr(made, "pid", None)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: landlock_scope.py COMMAND [ARGS...]", file=sys.stderr)
        return 2
    try:
        restrict()
    except OSError as exc:
        # fail closed: the plan counted on the scope
        print(
            f"agent-box: the run's Landlock scope (abstract unix sockets) cannot be applied ({exc}); "
            "refusing to start the sandbox",
            file=sys.stderr,
        )
        return 4
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"agent-box: cannot start {argv[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
