"""The Landlock scope over abstract unix sockets (agentbox/sandbox/landlock_scope.py), as Agent-Box's own starts
enter it: on a thread of the launcher, not by exec'ing a second Python. The catalogue cannot prove it (seccomp
refuses every run a new unix socket first, so `no-abstract-scope` survives the mutation check): these tests take
the seccomp rule away and show the scope alone refusing, with the control (both taken away) connecting."""

from __future__ import annotations

import _thread
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentbox.sandbox import landlock_scope
from agentbox.sandbox.session import start_scoped

pytestmark = pytest.mark.skipif(
    not landlock_scope.supported() or shutil.which("bwrap") is None,
    reason="needs Landlock ABI 6 (Linux 6.12) and bubblewrap",
)

_CONNECT = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "try:\n"
    "    s.connect(chr(0) + sys.argv[1]); print('connected')\n"
    "except OSError as e:\n"
    "    print('refused', e.errno)\n"
)


@pytest.fixture
def abstract():
    """A host agent's abstract socket, and the clients it saw."""
    name = f"agentbox-scope-test-{secrets.token_hex(6)}"
    server = socket.socket(socket.AF_UNIX)
    server.bind("\0" + name)
    server.listen()
    seen: list[int] = []

    def serve():
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            seen.append(1)
            client.close()

    threading.Thread(target=serve, daemon=True).start()
    yield name, seen
    server.shutdown(socket.SHUT_RDWR)
    server.close()


def _sandboxed(tmp_path: Path, name: str, *weaken: str) -> str:
    """What `python3 -c _CONNECT name` prints inside a run that shares the host's network, with `weaken` removed."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    profile = tmp_path / "p.yaml"
    profile.write_text("name: p\nharness: codex\npermission_intent:\n  workspace: {access: read_only}\n")
    options = [f"--weaken={w}" for w in weaken]
    argv = [sys.executable, "-m", "agentbox.testing.weakened", *options, str(profile), "--cwd", str(ws), "--"]
    env = {**os.environ, "AGENTBOX_HOME": str(tmp_path / "abhome")}
    done = subprocess.run([*argv, "python3", "-c", _CONNECT, name], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_run_sharing_the_host_network_is_refused_an_abstract_socket_by_the_scope_alone(tmp_path, abstract):
    name, seen = abstract
    assert _sandboxed(tmp_path, name, "unix_sockets") == "refused 1"  # EPERM: Landlock's, seccomp's rule is gone
    assert not seen


def test_with_the_scope_taken_away_too_the_same_run_reaches_it(tmp_path, abstract):
    name, seen = abstract
    assert _sandboxed(tmp_path, name, "unix_sockets", "abstract_sockets") == "connected"
    assert seen


def test_what_a_scoped_start_starts_is_in_the_scope_and_the_launcher_is_not(abstract):
    name, seen = abstract
    child = landlock_scope.in_scope(
        lambda: subprocess.Popen([sys.executable, "-c", _CONNECT, name], stdout=subprocess.PIPE, text=True)
    )
    out, _ = child.communicate(timeout=30)
    assert out.strip() == "refused 1"
    probe = socket.socket(socket.AF_UNIX)
    probe.connect("\0" + name)  # this process, and this thread, are outside it
    probe.close()


def test_the_scope_is_entered_only_for_the_command_line_that_asks_for_it():
    asked = [sys.executable, "-I", "-S", landlock_scope.__file__, "true"]
    assert start_scoped(asked, lambda argv: argv) == ["true"]
    assert start_scoped(["true"], lambda argv: argv) == ["true"]


def test_a_scope_that_cannot_be_entered_starts_nothing_and_says_so(monkeypatch):
    def refused():
        raise OSError(1, "landlock_restrict_self: Operation not permitted")

    monkeypatch.setattr(landlock_scope, "restrict", refused)
    started: list[str] = []
    with pytest.raises(OSError, match="the run's Landlock scope \\(abstract unix sockets\\) cannot be applied"):
        landlock_scope.in_scope(lambda: started.append("started"))
    assert not started


def test_the_scope_is_decided_at_each_start_so_a_cached_plan_carries_no_kernels_answer(monkeypatch, tmp_path):
    """Red team: a plan compiled where Landlock was out of reach (a container, a parent's syscall filter) left the
    scope out, and the plan cache then gave that plan to launchers that have it. A plan now only wants it."""
    from agentbox.sandbox import session

    entry = {"argv": ["bwrap", "--ro-bind", "/", "/"], "landlock_scope": True}
    monkeypatch.setattr(landlock_scope, "supported", lambda: False)
    assert "-I" not in session.sandbox_argv(entry, str(tmp_path))  # this kernel, as met now: no scope to enter
    monkeypatch.setattr(landlock_scope, "supported", lambda: True)
    assert session.sandbox_argv(entry, str(tmp_path))[1:4] == ["-I", "-S", landlock_scope.__file__]


_LOCK = _thread.allocate_lock


class _InterruptedWait:
    """A lock whose wait for the start is interrupted (Ctrl-C) once: a signal itself would reach an xdist worker's
    other thread."""

    def __init__(self):
        self.lock, self.acquires = _LOCK(), 0

    def acquire(self):
        self.acquires += 1
        if self.acquires == 2:  # the first: made held; the second: the caller's wait for the thread
            raise KeyboardInterrupt
        return self.lock.acquire()

    def release(self):
        self.lock.release()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def test_a_start_interrupted_while_the_thread_makes_it_is_ended_not_left_unwatched(monkeypatch):
    monkeypatch.setattr(landlock_scope, "restrict", lambda: None)
    monkeypatch.setattr(_thread, "allocate_lock", _InterruptedWait)
    made: list[subprocess.Popen] = []

    def start():
        made.append(subprocess.Popen(["sleep", "30"]))
        return made[0]

    with pytest.raises(KeyboardInterrupt):
        landlock_scope.in_scope(start)
    assert made[0].wait(timeout=10) == -9
