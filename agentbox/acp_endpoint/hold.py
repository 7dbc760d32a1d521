"""Every process of the run held still while the client performs a file request on the host.

The endpoint judges a client file request (`fs/write_text_file`, `fs/read_text_file`) by the path it resolves
on the host, then the client acts on that path, later and outside the sandbox. In between, a process of the
run (the agent, a background process it left, a terminal) could swap a folder of the path for a symlink (the
workspace is writable to it), and the client's write would follow the symlink out of the workspace, or its
read into the hidden home. Re-checking afterwards cannot undo a write, so the endpoint closes the window
instead: it stops every process of the run (SIGSTOP), judges the path, hands the request to the client, and
continues them (SIGCONT) once the client has answered. Nothing that could change the path runs meanwhile.

Every process of the run descends from the endpoint: the agent's sandbox and each terminal's are its
children, and inside a sandbox (its own PID namespace, whose first process never leaves) an orphan is
re-parented to that namespace's first process, not to the host's. So the run is the endpoint's descendants,
read from /proc. A process forked while they are being stopped is found by the next pass; the hold stands
once a pass finds nothing new and every process found is stopped (or waits for a vfork child that is). A
process that cannot be stopped in time refuses the request (fail closed).
"""

from __future__ import annotations

import errno
import os
import signal
import time

__all__ = ["Hold", "NoHold", "CannotHold", "HoldFailed", "descendants"]

_TIMEOUT = 2.0  # seconds to get every process stopped


class HoldFailed(Exception):
    """The run's processes could not all be stopped."""


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of a process; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rfind(b")") + 2 :].split()  # the command name may hold spaces and parentheses
    return int(rest[1]), rest[0].decode()


# where a vfork parent waits for its child to exec or exit, by kernel (wait_for_vfork_done inlined or not)
_VFORK_WAITS = ("wait_for_vfork_done", "kernel_clone", "_do_fork", "do_fork")


def _in_vfork(pid: int) -> bool:
    """Whether a process (in uninterruptible sleep) waits for its vfork child (dash starts commands so, Python's
    subprocess too): it cannot run before the child execs or exits."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f.read().strip() in _VFORK_WAITS
    except OSError:
        return False


def _describe(pid: int) -> str:
    """`pid (command) state, waiting in kernel function`: why a process did not stop."""
    out = [str(pid)]
    for name in ("comm", "wchan"):
        try:
            with open(f"/proc/{pid}/{name}") as f:
                out.append(f.read().strip())
        except OSError:
            out.append("?")
    st = _stat(pid)
    return f"{out[0]} ({out[1]}) state {st[1] if st else 'gone'}, in {out[2] or '-'}"


def descendants(root: int) -> dict[int, int]:
    """pid -> parent pid of every process below `root` (not `root` itself)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry))
    out: dict[int, int] = {}
    todo = [root]
    while todo:
        parent = todo.pop()
        for child in children.get(parent, ()):
            if child not in out:
                out[child] = parent
                todo.append(child)
    return out


def _signal(pid: int, parent: int, sig: int) -> str:
    """Send `sig` to `pid` if it is still the child of `parent` (a pidfd pins it: a recycled pid is never hit):
    "sent", "gone", or "denied" (another user's process: a setuid bwrap's own, never the agent's)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError) as exc:
        if not isinstance(exc, AttributeError) and exc.errno != errno.ENOSYS:
            return "gone"
        fd = None  # no pidfds on this kernel: the parent check and the signal, as close as they get
    try:
        st = _stat(pid)
        if st is None or st[0] != parent:
            return "gone"
        if fd is None:
            os.kill(pid, sig)
        else:
            signal.pidfd_send_signal(fd, sig)
        return "sent"
    except PermissionError:
        return "denied"
    except OSError:
        return "gone"
    finally:
        if fd is not None:
            os.close(fd)


class Hold:
    """`stop()` every process below `root` (the endpoint), `resume()` them; nested holds count (the last resume
    continues them)."""

    def __init__(self, root: int | None = None, timeout: float = _TIMEOUT):
        self.root = os.getpid() if root is None else root
        self.timeout = timeout
        self._depth = 0
        self._stopped: dict[int, int] = {}
        self._denied: set[int] = set()

    def stop(self) -> None:
        self._depth += 1
        if self._depth > 1:
            return
        try:
            self._stop_all()
        except BaseException:
            self._depth -= 1
            self._resume_all()
            raise

    def resume(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._resume_all()

    @property
    def held(self) -> int:
        """How many processes are stopped now."""
        return len(self._stopped)

    def close(self) -> None:
        """Continue whatever is stopped, whatever the nesting (the relay's end)."""
        self._depth = 0
        self._resume_all()

    def _stop_all(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            found = descendants(self.root)
            new = {pid: parent for pid, parent in found.items() if pid not in self._stopped and pid not in self._denied}
            for pid, parent in new.items():
                sent = _signal(pid, parent, signal.SIGSTOP)
                if sent == "sent":
                    self._stopped[pid] = parent
                elif sent == "denied":
                    self._denied.add(pid)
            # stopped means stopped: a signal is only pending until the process next leaves the kernel
            while True:
                running = [
                    pid
                    for pid in self._stopped
                    if (st := _stat(pid)) is not None
                    and st[1] not in "TtZX"
                    and not (st[1] == "D" and _in_vfork(pid) and self._child_stopped(pid))
                ]
                if not running:
                    break
                if time.monotonic() > deadline:
                    raise HoldFailed(
                        f"{len(running)} process(es) of the run did not stop within {self.timeout:g}s: "
                        + ", ".join(_describe(pid) for pid in running[:3])
                    )
                time.sleep(0.0005)
            if not new:
                return  # a pass found nothing new, and everything found is stopped: nothing of the run can run
            if time.monotonic() > deadline:
                raise HoldFailed(f"the run kept starting processes for {self.timeout:g}s")

    def _child_stopped(self, pid: int) -> bool:
        """A child of `pid` is among the stopped ones, and stopped: a vfork parent waiting for it is held too."""
        return any(
            parent == pid and (st := _stat(child)) is not None and st[1] in "Tt"
            for child, parent in self._stopped.items()
        )

    def _resume_all(self) -> None:
        stopped, self._stopped = self._stopped, {}
        self._denied.clear()
        for pid, parent in stopped.items():
            _signal(pid, parent, signal.SIGCONT)


class NoHold(Hold):
    """Holds nothing: a control of the `acp` layer (`weaken: [acp_hold]`), which must see the swap land."""

    def _stop_all(self) -> None:
        pass


class CannotHold(Hold):
    """For a sandbox that shares the host's PID namespace, whose orphans leave the endpoint's tree: a hold could
    miss one, so every file request is refused."""

    def _stop_all(self) -> None:
        raise HoldFailed("the sandbox shares the host's PID namespace, so its processes cannot all be found")
