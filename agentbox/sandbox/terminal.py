"""The user's terminal stays outside the sandbox: a run started on it gets a pseudo-terminal of its own.

bubblewrap's `--dev` binds the terminal on its stdout into the sandbox as /dev/console, and any process inside can
reopen another's descriptors through /proc/PID/fd. So a run started on the user's terminal (`agent-box launch`,
`sandbox run` at a prompt) handed that terminal to every command the model ran, whose stdio the harness had sent
elsewhere (red team, 2026-12-07): it could write control strings the terminal acts on beyond its screen (OSC 52
sets the clipboard the user pastes from later), change the terminal's modes (echo off, still off after the run),
and read the user's keystrokes.

Here the run's stdio that was a terminal is the slave of a pseudo-terminal Agent-Box holds instead, so /dev/console
and every reopened descriptor lead to it. Agent-Box copies the user's keystrokes in and the run's output out, and
the output passes `ControlFilter`, which drops every operating-system command but the screen's own (titles,
colours, hyperlinks, the working folder, prompt marks), every device-control, privacy and application string, the
window reports a terminal would answer by typing, and UTF-8-encoded C1 controls. The user's terminal is in raw mode
for the run and gets back its own modes at the end, whatever the run did to its pseudo-terminal. Since bubblewrap
starts the run in a session of its own, the pseudo-terminal is nobody's controlling terminal: the interrupt and
quit keys, while the run's terminal is in a mode that makes them signals, are sent as signals by `on_signal`
(as the user's own terminal would), and reach a run in raw mode as the bytes they are.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import termios
import threading
import tty
from typing import Callable

__all__ = ["ControlFilter", "Relay", "attached_ttys"]

# operating-system commands that only change or ask about the screen: window titles (0-2), palette and default
# colours (4, 10-19 and their resets 104, 110-119), hyperlinks (8), the working folder (7), notifications (9), prompt
# marks (133). Every other one (52: the clipboard; 50: fonts; 1337, 5113: file transfers; ...) is dropped.
KEPT_OSC = frozenset({0, 1, 2, 4, 7, 8, 9, *range(10, 20), 104, *range(110, 120), 133})
# CSI ... t reports the terminal answers by typing into the input: 20 (icon label) and 21 (window title)
_TYPED_REPORTS = (b"20", b"21")
_LIMIT = 1 << 16  # a control string longer than this is dropped whole, never passed on in part
ESC, BEL, CAN, SUB = 0x1B, 0x07, 0x18, 0x1A


class ControlFilter:
    """The run's output with the control strings a terminal acts on beyond its screen dropped. Stateful: a
    sequence split across reads is judged whole. Whatever it passes, an ESC in its output only ever begins a
    sequence it read whole and kept, and no C1 control (8-bit, or UTF-8-encoded) passes at all."""

    def __init__(self) -> None:
        self._state = "text"
        self._held = bytearray()
        self._tail = 0  # UTF-8 continuation bytes still due to the character under way

    def feed(self, data: bytes) -> bytes:
        if self._state == "text" and not self._tail and data.isascii() and ESC not in data:
            return data  # the common case: plain text
        out = bytearray()
        for b in data:
            self._step(b, out)
        return bytes(out)

    def _step(self, b: int, out: bytearray) -> None:
        while True:  # `continue`: the byte is judged afresh in the state just set
            state, held = self._state, self._held
            if state == "text":
                if self._tail and 0x80 <= b <= 0xBF:
                    self._tail -= 1
                    out.append(b)
                    return
                self._tail = 0
                if b == ESC:
                    held[:], self._state = b"\x1b", "esc"
                elif b == 0xC2:  # U+0080-U+009F are the C1 controls: wait for the next byte
                    self._state = "c2"
                elif 0x80 <= b <= 0x9F:  # a raw C1 control (a terminal in an 8-bit mode acts on it)
                    pass
                else:
                    self._tail = 1 if 0xC3 <= b <= 0xDF else 2 if 0xE0 <= b <= 0xEF else 3 if 0xF0 <= b <= 0xF4 else 0
                    out.append(b)
                return
            if state == "c2":
                self._state = "text"
                if 0x80 <= b <= 0x9F:
                    return  # a UTF-8-encoded C1 control: dropped with its lead byte
                if 0xA0 <= b <= 0xBF:
                    out += bytes([0xC2, b])
                    return
                continue  # no character after all: the lead byte is dropped, the byte judged afresh
            if b in (CAN, SUB):  # cancels any sequence under way
                self._state = "text"
                return
            if state == "esc":
                if b in b"[]":
                    held.append(b)
                    self._state = "csi" if b == ord("[") else "osc"
                    return
                if b in b"P_^X":  # a device-control, start-of-string, privacy or application string
                    self._state = "string"
                    return
                self._state = "text"
                if 0x20 <= b <= 0x7E:  # a two-byte escape (a cursor save, a charset): the screen's own
                    out += held
                    out.append(b)
                    return
                continue  # a lone ESC before a control or a non-ASCII byte: dropped, the byte judged afresh
            if state == "csi":
                if 0x20 <= b <= 0x3F:  # parameters and intermediates
                    held.append(b)
                    if len(held) > _LIMIT:
                        self._state = "text"
                    return
                self._state = "text"
                if 0x40 <= b <= 0x7E:
                    held.append(b)
                    if not (b == ord("t") and bytes(held[2:-1]).split(b";")[0] in _TYPED_REPORTS):
                        out += held
                    return
                continue  # anything else ends it unfinished, dropped; an ESC there starts a new sequence
            if state == "osc":
                if b == BEL:
                    self._end_osc(out)
                elif b == ESC:
                    self._state = "osc-esc"
                elif b < 0x20 or b == 0x7F or len(held) > _LIMIT:
                    self._state = "string"  # a control inside, or too long: dropped whole, to its end
                else:
                    held.append(b)
                return
            if state == "osc-esc":
                if b == ord("\\"):
                    self._end_osc(out)
                    return
                held[:], self._state = b"\x1b", "esc"  # ESC and anything else ends the string unfinished
                continue
            # "string", "string-esc": dropped to its end; an ESC there starting something else is dropped too
            self._state = (
                "text"
                if b == BEL or (state == "string-esc" and b == ord("\\"))
                else "string-esc"
                if b == ESC
                else "string"
            )
            return

    def _end_osc(self, out: bytearray) -> None:
        if _osc_number(bytes(self._held)) in KEPT_OSC:
            out += self._held
            out += b"\x1b\\"
        self._state = "text"


def _osc_number(sequence: bytes) -> int | None:
    """An OSC's number, from its held bytes (ESC ] and its payload, no terminator)."""
    head = sequence[2:].split(b";", 1)[0]
    return int(head) if head.isdigit() and len(head) < 6 else None


def attached_ttys() -> tuple[int, ...]:
    """Which of this process's stdin, stdout and stderr are terminals: what a run started from here would get."""
    return tuple(fd for fd in (0, 1, 2) if os.isatty(fd))


class Relay:
    """The run's own pseudo-terminal, standing in for the user's terminal on the stdio descriptors `ttys` (the
    module's docstring). `file_actions()` for posix_spawn, then `start()` once the run is spawned and `stop()` when it
    has ended; `resize()` on SIGWINCH."""

    def __init__(self, ttys: tuple[int, ...], on_signal: Callable[[int], None]):
        self.ttys, self.on_signal = ttys, on_signal
        self.user_in = 0 if 0 in ttys else None
        self.user_out = next((fd for fd in (1, 2) if fd in ttys), None)
        self.master, self.slave = os.openpty()
        self.saved = termios.tcgetattr(ttys[0])
        termios.tcsetattr(self.slave, termios.TCSANOW, self.saved)  # the run starts in the user's own modes
        self.resize()
        self._thread: threading.Thread | None = None

    def file_actions(self) -> list[tuple]:
        return [(os.POSIX_SPAWN_DUP2, self.slave, fd) for fd in self.ttys]

    def resize(self) -> None:
        size = fcntl.ioctl(self.ttys[0], termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, size)

    def start(self) -> None:
        os.close(self.slave)  # the run holds it now: the master reads EIO once the run's last holder is gone
        if self.user_in is not None:
            tty.setraw(self.user_in)
        self._thread = threading.Thread(target=self._copy, name="agentbox-terminal", daemon=True)
        self._thread.start()

    def stop(self, drain: float = 2.0) -> None:
        """Wait (at most `drain` seconds) for the run's last output, then give the user's terminal its modes back."""
        try:
            if self._thread is not None:
                self._thread.join(drain)
            else:  # never started (the run could not be spawned)
                os.close(self.slave)
        finally:
            termios.tcsetattr(self.ttys[0], termios.TCSAFLUSH, self.saved)
            os.close(self.master)

    def _copy(self) -> None:
        screen = ControlFilter()
        watched = [self.master] + ([self.user_in] if self.user_in is not None else [])
        while True:
            ready, _, _ = select.select(watched, [], [])
            if self.master in ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # EIO: no process of the run holds its terminal any more
                    return
                if not data:
                    return
                if self.user_out is not None:
                    _write_all(self.user_out, screen.feed(data))
            if self.user_in is not None and self.user_in in ready:
                data = os.read(self.user_in, 4096)
                if not data:
                    watched.remove(self.user_in)
                    continue
                _write_all(self.master, self._keys(data))

    def _keys(self, data: bytes) -> bytes:
        """The user's keystrokes for the run: the interrupt and quit keys sent as signals while the run's terminal
        makes them signals (no terminal driver can: the pseudo-terminal controls no session)."""
        attrs = termios.tcgetattr(self.master)
        if not attrs[3] & termios.ISIG:
            return data
        keys = {attrs[6][termios.VINTR]: signal.SIGINT, attrs[6][termios.VQUIT]: signal.SIGQUIT}
        out = bytearray()
        for b in data:
            sig = keys.get(bytes([b]))
            if sig is None:
                out.append(b)
            else:
                self.on_signal(sig)
        return bytes(out)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
