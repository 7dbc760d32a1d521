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
    time.sleep(0.3)
    yield proc
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


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
    time.sleep(0.1)
    assert "T" not in states(os.getpid()).values()


def test_holds_nest_and_only_the_last_resume_continues(tree):
    hold = Hold()
    hold.stop()
    hold.stop()
    hold.resume()
    assert set(states(os.getpid()).values()) <= {"T", "t"}
    hold.resume()
    time.sleep(0.1)
    assert "T" not in states(os.getpid()).values()


def test_close_continues_everything_whatever_the_nesting(tree):
    hold = Hold()
    hold.stop()
    hold.stop()
    hold.close()
    time.sleep(0.1)
    assert "T" not in states(os.getpid()).values() and hold.held == 0


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
        time.sleep(0.2)
        for _ in range(100):
            hold = Hold()
            hold.stop()  # never HoldFailed
            assert set(states(os.getpid()).values()) <= {"T", "t", "D", "Z", "gone"}
            hold.close()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
