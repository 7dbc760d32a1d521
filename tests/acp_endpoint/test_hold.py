"""Holding every process of the run still (acp_endpoint/hold.py): what the endpoint does while a client acts on a path."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from agentbox.acp_endpoint.hold import CannotHold, Hold, HoldFailed, NoHold, _stat, descendants


@pytest.fixture
def tree():
    """A child with a busy grandchild and a sleeping one."""
    proc = subprocess.Popen(["sh", "-c", "sh -c 'while :; do :; done' & sleep 60 & wait"], start_new_session=True)
    until(lambda: len(descendants(proc.pid)) >= 2, "the child's two grandchildren started")
    yield proc
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def until(condition, what: str, seconds: float = 10.0) -> None:
    """Poll /proc until `condition` holds (a stopped or continued task changes state asynchronously)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        os.sched_yield()


def running(root: int) -> bool:
    return "T" not in states(root).values()


def states(root: int) -> dict[int, str]:
    return {pid: (_stat(pid) or (0, "gone"))[1] for pid in descendants(root)}


def test_a_hold_stops_every_descendant_and_resume_continues_them(tree):
    hold = Hold()
    hold.stop()
    try:
        held = states(os.getpid())
        assert tree.pid in held and len(held) >= 3 and set(held.values()) <= {"T", "t"}
        assert hold.held == len(held)
    finally:
        hold.resume()
    until(lambda: running(os.getpid()), "every held process continued")


def test_holds_nest_and_only_the_last_resume_continues(tree):
    hold = Hold()
    hold.stop()
    hold.stop()
    hold.resume()
    assert set(states(os.getpid()).values()) <= {"T", "t"}
    hold.resume()
    until(lambda: running(os.getpid()), "every held process continued")


def test_close_continues_everything_whatever_the_nesting(tree):
    hold = Hold()
    hold.stop()
    hold.stop()
    hold.close()
    until(lambda: running(os.getpid()), "every held process continued")
    assert hold.held == 0


def test_the_controls_stand_in_holds_nothing_and_a_shared_pid_namespace_refuses(tree):
    hold = NoHold()
    hold.stop()
    assert hold.held == 0 and "T" not in states(os.getpid()).values()
    hold.resume()
    with pytest.raises(HoldFailed, match="PID namespace"):
        CannotHold().stop()


def test_a_process_waiting_for_its_vfork_child_is_held_with_it():
    """dash starts each command with vfork: caught between the vfork and the child's exec, the parent waits in the
    kernel (it can neither run nor stop) for a child that is stopped; that is held, not a failure."""
    proc = subprocess.Popen(["sh", "-c", "while :; do /bin/true; done"], start_new_session=True)
    try:
        until(lambda: descendants(proc.pid), "the loop started its first /bin/true")
        for _ in range(100):
            hold = Hold()
            hold.stop()  # never HoldFailed
            assert set(states(os.getpid()).values()) <= {"T", "t", "D", "Z", "gone"}
            hold.close()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
