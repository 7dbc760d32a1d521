"""A harness on a pseudo-terminal (agentbox/testing/terminal.py) gets exactly the descriptors its run names."""

from __future__ import annotations

import os

import pexpect

from agentbox.testing import terminal


def _child_reads(fd: int, pass_fds: tuple[int, ...]) -> str:
    child = terminal.spawn(
        ["/bin/sh", "-c", f"cat /proc/self/fd/{fd} 2>&1 || echo gone"],
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        pass_fds=pass_fds,
        encoding="utf-8",
        timeout=20,
    )
    child.expect(pexpect.EOF)
    child.close()
    return child.before


def test_a_descriptor_the_run_names_reaches_the_child_though_python_opened_it_close_on_exec(tmp_path):
    held = tmp_path / "held.txt"
    held.write_text("held-content")
    fd = os.open(held, os.O_RDONLY)
    try:
        assert not os.get_inheritable(fd)  # as Python opens every file: the exec would close it
        assert "held-content" in _child_reads(fd, (fd,))
    finally:
        os.close(fd)


def test_a_descriptor_the_run_does_not_name_stays_out_of_the_child(tmp_path):
    held = tmp_path / "held.txt"
    held.write_text("held-content")
    fd = os.open(held, os.O_RDONLY)
    os.set_inheritable(fd, True)  # even one left inheritable by mistake
    try:
        said = _child_reads(fd, ())
        assert "held-content" not in said and "gone" in said
    finally:
        os.close(fd)
