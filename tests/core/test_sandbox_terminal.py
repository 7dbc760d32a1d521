"""A run started on a terminal never gets that terminal: its control strings, modes and keystrokes stay its own
(`sandbox.terminal`). Observed on a real pseudo-terminal, with real bubblewrap; each attack's control is the same
commands on the same kind of terminal without Agent-Box, whose effect the same oracle must see."""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import sys
import termios

import pytest

from agentbox.sandbox.terminal import ControlFilter

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

CLIPBOARD = rb"\033]52;c;QUdFTlRCT1g=\a"  # OSC 52: the terminal sets its clipboard to "AGENTBOX"
# what a model's command could do with the terminal the run was started on: write to it through /dev/console
# (bubblewrap binds its stdout's terminal there) and through another process's descriptor (/proc/1/fd/1, bwrap's
# own init), set a title, and turn the terminal's echo off
ATTACK = (
    rf'printf "{CLIPBOARD.decode()}" > /dev/console; printf "{CLIPBOARD.decode()}" > /proc/1/fd/1; '
    r'printf "\033]0;agentbox-title\a"; stty -echo < /dev/console; echo finished'
)


def reaped(pid: int, within: float = 60, shown: bytes = b"") -> int:
    """The exit status of `pid` once it has ended, failing (and killing it) when it has not within `within` s;
    `shown`: what the terminal showed, for the failure to say how far the run got."""
    pidfd = os.pidfd_open(pid)
    try:
        if not select.select([pidfd], [], [], within)[0]:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail(f"the run had not ended after {within} s; the terminal showed: {shown[-400:]!r}")
    finally:
        os.close(pidfd)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def on_a_terminal(
    argv: list[str], env: dict[str, str], typed: tuple[tuple[bytes, bytes], ...] = ()
) -> tuple[bytes, bool, int]:
    """What the terminal received, whether its echo was still on at the end, and the exit status. `typed`: keys the
    user types once the terminal shows a text ((text, keys), ...), each after the one before."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: its stdio is the terminal
        os.execvpe(argv[0], argv, env)
    seen, shown = b"", 0
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the child side is closed
            break
        if not data:
            break
        seen += data
        if typed and typed[0][0] in seen[shown:]:  # shown since the keys before were typed
            os.write(fd, typed[0][1])
            shown, typed = len(seen), typed[1:]
    echo = bool(termios.tcgetattr(fd)[3] & termios.ECHO)
    unsent = b" ".join(keys for _, keys in typed)
    status = reaped(pid, shown=seen + (b" [keys never typed: " + unsent + b"]" if typed else b""))
    os.close(fd)
    return seen, echo, status


@needs_bwrap
def test_a_command_in_the_run_cannot_set_the_terminals_clipboard_or_turn_its_echo_off(tmp_path, env, ws):
    prof = tmp_path / "t.yaml"
    prof.write_text("name: t\nharness: codex\npermission_intent:\n  shell: {access: allow}\n")
    argv = [sys.executable, "-m", "agentbox.cli", "sandbox", "run", str(prof), "--cwd", str(ws), "--"]
    seen, echo, status = on_a_terminal([*argv, "sh", "-c", ATTACK], env)
    assert status == 0 and b"finished" in seen, seen
    assert b"]52;" not in seen and echo
    assert b"\x1b]0;agentbox-title" in seen  # the screen's own control strings pass
    # the control: the same commands in bubblewrap started on the terminal itself, as a run was before
    bare = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--new-session"]
    seen, echo, _ = on_a_terminal([shutil.which("bwrap") or "bwrap", *bare[1:], "sh", "-c", ATTACK], env)
    assert seen.count(b"]52;") == 2 and not echo


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        (b"plain \xe2\x80\x94 caf\xc3\xa9", b"plain \xe2\x80\x94 caf\xc3\xa9"),
        (b"\x1b[1;31mred\x1b[0m\x1b(B", b"\x1b[1;31mred\x1b[0m\x1b(B"),
        (b"\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\", b"\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\"),
        (b"\x1b]0;title\x07", b"\x1b]0;title\x1b\\"),
        (b"\x1b]52;c;QUdF\x07after", b"after"),
        (b"\x1bP$q\x1b\\\x1b_apc\x1b\\\x1b^pm\x1b\\after", b"after"),
        (b"\x1b[21t\x1b[20t", b""),
        # an ESC inside a sequence ends it and starts another, as a terminal reads it: each judged on its own
        (b"\x1b\x1b]52;c;x\x07", b""),
        (b"\x1b[\x1b]52;c;x\x07", b""),
        (b"\x1b]0;a\x1b]52;c;x\x07", b""),
        (b"\xc2\x1b]52;c;x\x07", b""),
        # C1 controls, UTF-8-encoded or raw, never pass: what follows them is plain text
        (b"\xc2\x9d52;c;x\x07", b"52;c;x\x07"),
        (b"\x9d52;c;x\x07", b"52;c;x\x07"),
        (b"\x1b]0;t\nx\x1b]52;c;y\x07z", b"z"),
    ],
)
def test_the_screen_gets_the_runs_text_and_its_own_control_strings_only(written, shown):
    assert ControlFilter().feed(written) == shown
    one_at_a_time = ControlFilter()
    assert b"".join(one_at_a_time.feed(bytes([b])) for b in written) == shown  # split anywhere, judged whole


def test_an_overlong_control_string_is_dropped_whole():
    assert ControlFilter().feed(b"\x1b]0;" + b"x" * 70000 + b"\x07after") == b"after"


@needs_bwrap
def test_the_interrupt_key_still_ends_a_run_whose_terminal_makes_it_a_signal(tmp_path, env, ws):
    prof = tmp_path / "t.yaml"
    prof.write_text("name: t\nharness: codex\npermission_intent:\n  shell: {access: allow}\n")
    argv = [sys.executable, "-m", "agentbox.cli", "sandbox", "run", str(prof), "--cwd", str(ws), "--"]
    seen, echo, status = on_a_terminal(
        [*argv, "sh", "-c", "echo ready; cat; echo not-interrupted"], env, ((b"ready", b"typed\r"), (b"typed", b"\x03"))
    )
    assert b"typed" in seen and b"not-interrupted" not in seen and status != 0 and echo, seen


class AnsweringTerminal:
    """A terminal that answers every request for its device attributes as a terminal does: by typing the answer
    into the input, where the next program to read it (the user's shell, once the run is over) finds it."""

    def __init__(self, argv: list[str], env: dict[str, str]):
        import subprocess

        self.master, self.slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, env=env, stdin=self.slave, stdout=self.slave, stderr=self.slave, start_new_session=True
        )
        self.screen = b""

    def run(self, within: float = 60) -> int:
        import time

        deadline = time.monotonic() + within
        while self.proc.poll() is None or select.select([self.master], [], [], 0.2)[0]:
            if time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"the run had not ended after {within} s")
            if not select.select([self.master], [], [], 0.2)[0]:
                continue
            data = os.read(self.master, 4096)
            self.screen += data
            os.write(self.master, b"\x1b[?64;1c" * data.count(b"\x1b[c"))
        return self.proc.wait()

    def typed_for_the_shell(self) -> bytes:
        """What is still waiting to be read from the terminal now that the run is over."""
        import tty

        tty.setraw(self.slave, termios.TCSANOW)  # as a shell's line editor reads it: a pending answer needs no newline
        os.set_blocking(self.slave, False)
        try:
            return os.read(self.slave, 4096)
        except BlockingIOError:
            return b""


@needs_bwrap
def test_no_answer_the_run_asked_of_the_terminal_reaches_the_shell_after_it(tmp_path, env, ws):
    prof = tmp_path / "t.yaml"
    prof.write_text("name: t\nharness: codex\npermission_intent:\n  shell: {access: allow}\n")
    argv = [sys.executable, "-m", "agentbox.cli", "sandbox", "run", str(prof), "--cwd", str(ws), "--"]
    # the run asks for the terminal's attributes and ends at once, leaving the answer unread
    terminal = AnsweringTerminal([*argv, "sh", "-c", r'printf "\033]2;id #\007\033[021t\033[c\033[?1000h"'], env)
    assert terminal.run() == 0
    assert terminal.typed_for_the_shell() == b""
    assert b"\x1b[021t" not in terminal.screen  # a title report, read as 21: never asked
    assert terminal.screen.rfind(b"\x1b[?1000l") > terminal.screen.rfind(b"\x1b[?1000h")  # mouse reports off again
    # the control: the same run in bubblewrap on the terminal itself leaves the answer for the shell
    bare = [
        shutil.which("bwrap") or "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--new-session",
    ]
    control = AnsweringTerminal([*bare, "sh", "-c", r'printf "\033[c"'], env)
    assert control.run() == 0 and control.typed_for_the_shell() == b"\x1b[?64;1c"


@needs_bwrap
def test_output_still_flows_while_keystrokes_wait_for_a_run_that_reads_none(tmp_path, env, ws):
    prof = tmp_path / "t.yaml"
    prof.write_text(
        "name: t\nharness: codex\npermission_intent:\n  workspace: {access: read_write}\n  shell: {access: allow}\n"
    )
    argv = [sys.executable, "-m", "agentbox.cli", "sandbox", "run", str(prof), "--cwd", str(ws), "--"]
    # the user pastes far more than a terminal holds while the run reads nothing; then it writes and ends
    script = f"stty raw -echo < /dev/console; echo ready; while [ ! -e {ws}/go ]; do :; done; echo after-the-paste"
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], [*argv, "sh", "-c", script], env)
    seen = b""
    while b"ready" not in seen:
        seen += os.read(fd, 4096)
    paste = memoryview(b"x" * 200_000)  # taken by Agent-Box as it comes: it waits there, not in the terminal
    while paste and select.select([], [fd], [], 10)[1]:
        paste = paste[os.write(fd, paste) :]
    (ws / "go").write_text("")
    while select.select([fd], [], [], 30)[0]:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        seen += data
    assert reaped(pid) == 0 and b"after-the-paste" in seen and not paste


@needs_bwrap
def test_a_run_started_in_the_background_leaves_the_terminal_to_the_shell_and_is_not_stopped(tmp_path, env, ws):
    prof = tmp_path / "t.yaml"
    prof.write_text("name: t\nharness: codex\npermission_intent:\n  shell: {access: allow}\n")
    argv = [sys.executable, "-m", "agentbox.cli", "sandbox", "run", str(prof), "--cwd", str(ws), "--", "true"]
    pid, fd = pty.fork()
    if pid == 0:  # a shell's job control: the run in a process group of its own, not the terminal's foreground
        job = os.fork()
        if job == 0:
            os.setpgid(0, 0)
            os.execvpe(argv[0], argv, env)
        _, status = os.waitpid(job, os.WUNTRACED)
        if os.WIFSTOPPED(status):  # stopped for touching the terminal's modes from the background (SIGTTOU)
            os.kill(job, 9)
            os._exit(3)
        os._exit(os.waitstatus_to_exitcode(status))
    while select.select([fd], [], [], 60)[0]:
        try:
            if not os.read(fd, 4096):
                break
        except OSError:
            break
    assert reaped(pid) == 0


def test_the_keys_typed_before_an_interrupt_key_go_to_the_run_before_its_signal():
    from agentbox.sandbox.terminal import Relay

    relay = Relay.__new__(Relay)  # only the reading of keys, on a pseudo-terminal in its default (signalling) modes
    relay.master, slave = pty.openpty()
    try:
        assert relay._keys(b"typed\r\x03more\x1c") == [b"typed\r", signal.SIGINT, b"more", signal.SIGQUIT, b""]
    finally:
        os.close(relay.master)
        os.close(slave)
