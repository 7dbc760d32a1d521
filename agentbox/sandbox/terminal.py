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
import re
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
# CSI ... t reports the terminal answers by typing into the input: 20 (icon label) and 21 (window title), whose
# text the run could have set (a command line typed into the user's shell). Other answers (device attributes, the
# cursor's position) carry nothing the run chose, and whatever is still unread when the run ends is drained.
_TYPED_REPORTS = (20, 21)
_LIMIT = 1 << 16  # a control string longer than this is dropped whole, never passed on in part
# Modes a run may switch on whose default is off (mouse and focus reports, bracketed paste, the alternate screen,
# synchronized output, application cursor keys): each one the run switched on is switched off again when it ends,
# since a run that left them on would leave the user's shell unusable. Only those it switched on: a reset of a mode
# that was never set is not harmless everywhere (tmux restores an old cursor on leaving an alternate screen it was
# not in).
_OFF_BY_DEFAULT = frozenset(
    {1, 9, 47, 66, 1000, 1002, 1003, 1004, 1005, 1006, 1007, 1015, 1016, 1047, 1049, 2004, 2026}
)
_PALETTE_RESETS = {4: b"\x1b]104\x1b\\", 10: b"\x1b]110\x1b\\", 11: b"\x1b]111\x1b\\", 12: b"\x1b]112\x1b\\"}
ESC, BEL, CAN, SUB = 0x1B, 0x07, 0x18, 0x1A
_DA_ANSWER = re.compile(rb"\x1b\[\?[0-9;]*c")  # a terminal's answer to a request for its device attributes


class ControlFilter:
    """The run's output with the control strings a terminal acts on beyond its screen dropped. Stateful: a
    sequence split across reads is judged whole. Whatever it passes, an ESC in its output only ever begins a
    sequence it read whole and kept, and no C1 control passes, 8-bit or UTF-8-encoded, as a UTF-8 terminal reads
    them (a terminal set to Latin-1 reads a UTF-8 character's continuation bytes as C1 controls: it is not
    supported). `asked` counts the requests for the device attributes it passed; `resets()` undoes the screen modes
    the run switched on."""

    def __init__(self) -> None:
        self._state = "text"
        self._held = bytearray()
        self._tail = 0  # UTF-8 continuation bytes still due to the character under way
        self.asked = 0  # requests for the device attributes passed on: the terminal owes that many answers
        self._resets: dict[bytes, None] = {}  # what undoes the screen modes the run switched on, in order

    def resets(self) -> bytes:
        """What switches off again the screen modes the run switched on (empty when it switched none)."""
        return b"".join(self._resets)

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
                elif b == 0x0E:  # shift out: the G1 character set until shift in
                    self._resets[b"\x0f"] = None
                    out.append(b)
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
                if b == ord("%"):  # a character-set switch (ESC % @ leaves UTF-8, where raw C1 bytes act): dropped
                    self._state = "esc%"
                    return
                self._state = "text"
                if 0x20 <= b <= 0x7E:  # a two-byte escape (a cursor save, a charset): the screen's own
                    out += held
                    out.append(b)
                    if b in b"()":  # a character set designated to G0 or G1: its final byte follows
                        self._state = "charset"
                        held[:] = bytes([b])
                    elif b == ord("="):  # the keypad's application mode
                        self._resets[b"\x1b>"] = None
                    return
                continue  # a lone ESC before a control or a non-ASCII byte: dropped, the byte judged afresh
            if state == "charset":
                self._state = "text"
                if 0x20 <= b <= 0x7E:
                    out.append(b)
                    if b != ord("B"):
                        self._resets[b"\x1b" + bytes(held) + b"B"] = None
                    return
                continue
            if state == "esc%":
                self._state = "text"
                if 0x20 <= b <= 0x7E:
                    return
                continue
            if state == "csi":
                if 0x20 <= b <= 0x3F:  # parameters and intermediates
                    held.append(b)
                    if len(held) > _LIMIT:
                        self._state = "text"
                    return
                self._state = "text"
                if 0x40 <= b <= 0x7E:
                    held.append(b)
                    params = bytes(held[2:-1])
                    if b == ord("t") and _first_number(params) in (*_TYPED_REPORTS, None):
                        return  # a report typed back, or one this cannot read: dropped
                    out += held
                    self._note_csi(params, b)
                    return
                continue  # anything else ends it unfinished, dropped; an ESC there starts a new sequence
            if state == "osc":
                if b == BEL and not self._tail:
                    self._end_osc(out)
                elif b == ESC and not self._tail:
                    self._state = "osc-esc"
                elif self._c1_or_control(b) or len(held) > _LIMIT:
                    self._state, self._tail = "string", 0  # a control inside (C1 included), or too long: dropped
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
            self._tail = 0
            return

    def _c1_or_control(self, b: int) -> bool:
        """Inside an OSC: whether `b` is a control, a C1 one included (raw, or UTF-8-encoded: a terminal that decodes
        UTF-8 first ends the string there and may start another), tracking the UTF-8 characters of a title."""
        if self._tail:
            lead_c2 = self._held[-1] == 0xC2
            self._tail -= 1
            return not 0x80 <= b <= 0xBF or (lead_c2 and b <= 0x9F)
        if b < 0x20 or b == 0x7F or 0x80 <= b <= 0xC1 or b >= 0xF5:
            return True
        if b >= 0xC2:  # a UTF-8 lead byte: its continuation bytes follow
            self._tail = 1 if b <= 0xDF else 2 if b <= 0xEF else 3
        return False

    def _end_osc(self, out: bytearray) -> None:
        number = _osc_number(bytes(self._held))
        if number in KEPT_OSC:
            out += self._held
            out += b"\x1b\\"
            payload = bytes(self._held[2:]).split(b";", 2)
            if number in _PALETTE_RESETS and not payload[-1].startswith(b"?"):
                self._resets[_PALETTE_RESETS[number]] = None
        self._state, self._tail = "text", 0

    def _note_csi(self, params: bytes, final: int) -> None:
        """Count a request for the device attributes, and keep what undoes a screen mode this CSI switched on."""
        if final == ord("c") and params in (b"", b"0"):
            self.asked += 1
        elif final == ord("h") and params.startswith(b"?"):
            modes = {int(p) for p in params[1:].split(b";") if p.isdigit()}
            self._resets.update({f"\x1b[?{m}l".encode(): None for m in sorted(modes & _OFF_BY_DEFAULT)})
        elif final == ord("l") and params.startswith(b"?"):
            modes = {int(p) for p in params[1:].split(b";") if p.isdigit()}
            self._resets.update({f"\x1b[?{m}h".encode(): None for m in sorted(modes & {7, 25})})  # on by default
        elif final == ord("u") and params[:1] in (b">", b"="):  # the kitty keyboard protocol
            self._resets[b"\x1b[=0;1u"] = None
        elif final == ord("m") and params.startswith(b">4"):  # xterm's modifyOtherKeys
            self._resets[b"\x1b[>4m"] = None
        elif final == ord("m") and params[:1] not in (b">", b"?", b"="):  # colours and attributes
            self._resets[b"\x1b[0m"] = None
        elif final == ord("r") and params:  # a scroll region
            self._resets[b"\x1b7\x1b[r\x1b8"] = None


def _first_number(params: bytes) -> int | None:
    """A CSI's first parameter as a terminal reads it (`021` is 21, an empty one 0)."""
    head = params.split(b";", 1)[0]
    return int(head or b"0") if head.isdigit() or not head else None


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
    has ended; `resize()` on SIGWINCH. The user's keystrokes are relayed, and the terminal set raw, only while this
    process is in the terminal's foreground: a launch in the background (`&`) leaves the terminal to the shell."""

    def __init__(self, ttys: tuple[int, ...], on_signal: Callable[[int], None]):
        self.ttys, self.on_signal = ttys, on_signal
        self.user_in = 0 if 0 in ttys and _in_foreground(0) else None
        self.user_out = next((fd for fd in (1, 2) if fd in ttys), None)
        self.master, self.slave = os.openpty()
        self.saved = termios.tcgetattr(ttys[0])
        termios.tcsetattr(self.slave, termios.TCSANOW, self.saved)  # the run starts in the user's own modes
        self.resize()
        self.screen = ControlFilter()
        self.answered = 0  # answers to the device-attributes requests the run passed, relayed to it
        self._wake_r, self._wake_w = os.pipe()  # tells `_copy` to give up, when the run's last output never ends
        self._thread: threading.Thread | None = None
        self._raw = False

    def file_actions(self) -> list[tuple]:
        return [(os.POSIX_SPAWN_DUP2, self.slave, fd) for fd in self.ttys]

    def resize(self) -> None:
        size = fcntl.ioctl(self.ttys[0], termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, size)

    def start(self) -> None:
        os.close(self.slave)  # the run holds it now: the master reads EIO once the run's last holder is gone
        self.slave = -1
        os.set_blocking(self.master, False)  # keystrokes wait in `_copy` while the run reads none, output still flows
        if self.user_in is not None:
            tty.setraw(self.user_in, termios.TCSANOW)  # what the user typed ahead stays, for the run
            self._raw = True
        self._thread = threading.Thread(target=self._copy, name="agentbox-terminal", daemon=True)
        self._thread.start()

    def stop(self, drain: float = 2.0) -> None:
        """Wait (at most `drain` seconds) for the run's last output, undo the screen modes it switched on, read away
        the terminal's answers still owed, then give the user's terminal its modes back. Best effort past the run's
        end: a terminal already gone (a hangup) fails none of it."""
        try:
            if self._thread is not None:
                self._thread.join(drain)
                if self._thread.is_alive():
                    os.write(self._wake_w, b"x")
                    self._thread.join(drain)
            elif self.slave >= 0:  # never started (the run could not be spawned)
                os.close(self.slave)
            if self._thread is not None and self.user_out is not None:
                _write_all(self.user_out, self.screen.resets())
                if self.user_in is not None:
                    self._drain_answers(max(0, self.screen.asked - self.answered) + 1)
        except OSError:
            pass
        finally:
            try:
                if self._raw:
                    # flushed: whatever the terminal typed back past the drain's bound is no command for the shell
                    termios.tcsetattr(self.ttys[0], termios.TCSAFLUSH, self.saved)
            except OSError:
                pass
            for fd in (self.master, self._wake_r, self._wake_w):
                os.close(fd)

    def _drain_answers(self, owed: int, bound: float = 0.5) -> None:
        """Read away what the terminal still owes the run (answers to its queries, typed into the input), so none
        reaches the user's shell: it is asked once more for its device attributes, and since a terminal answers in
        order, everything it owed is read once that many answers (`owed`, this one included) have come. Bounded: a
        terminal that never answers costs `bound` seconds."""
        user_in, user_out = self.user_in, self.user_out
        assert user_in is not None and user_out is not None  # `stop` asks only then
        _write_all(user_out, b"\x1b[c")
        seen = b""
        while len(_DA_ANSWER.findall(seen)) < owed:
            ready, _, _ = select.select([user_in], [], [], bound)
            if not ready:
                return
            seen += os.read(user_in, 4096)

    def _copy(self) -> None:
        keys = bytearray()  # the user's keystrokes the run has not read yet
        # the interrupt and quit keys typed, each sent once the keys typed before it are in the run's terminal, as a
        # terminal's own line discipline reads them in order: (how many keys precede it in all, the signal)
        signals: list[tuple[int, int]] = []
        queued = written = 0  # keys put in `keys`, and written from it, since the start
        user_in, user_out = self.user_in, self.user_out  # each None once it fails or ends
        typed = b""  # the tail of what the terminal typed, for answers split across reads
        while True:
            reading = [self.master, self._wake_r]
            if user_in is not None and len(keys) < _LIMIT * 16:
                reading.append(user_in)
            ready, writable, _ = select.select(reading, [self.master] if keys else [], [])
            if self._wake_r in ready:
                return
            if self.master in ready:
                try:
                    output: bytes | None = os.read(self.master, 65536)
                except BlockingIOError:
                    output = None
                except OSError:  # EIO: no process of the run holds its terminal any more
                    return
                if output == b"":
                    return
                if output and user_out is not None:
                    try:
                        _write_all(user_out, self.screen.feed(output))
                    except OSError:  # the user's terminal is gone: the run's output is still read, and dropped
                        user_out = None
            if user_in is not None and user_in in ready:
                try:
                    data = os.read(user_in, 4096)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    user_in = None
                    continue
                if data:
                    typed = typed[-64:] + data
                    self.answered += len(_DA_ANSWER.findall(typed)) - len(_DA_ANSWER.findall(typed[: -len(data)]))
                    for part in self._keys(data):
                        if isinstance(part, int):
                            signals.append((queued, part))
                        else:
                            keys += part
                            queued += len(part)
            if keys and self.master in writable:
                try:
                    n = os.write(self.master, keys)
                    del keys[:n]
                    written += n
                except BlockingIOError:  # the run reads none of its input: an interrupt must not wait behind it
                    written = queued
                except OSError:
                    return
            while signals and signals[0][0] <= written:
                self.on_signal(signals.pop(0)[1])

    def _keys(self, data: bytes) -> list[bytes | int]:
        """The user's keystrokes for the run, in order: bytes, and a signal for each interrupt or quit key while the
        run's terminal makes them signals (no terminal driver can: the pseudo-terminal controls no session)."""
        attrs = termios.tcgetattr(self.master)
        if not attrs[3] & termios.ISIG:
            return [data]
        keys = {attrs[6][termios.VINTR]: signal.SIGINT, attrs[6][termios.VQUIT]: signal.SIGQUIT}
        keys.pop(b"\0", None)  # a key set to NUL is switched off (_POSIX_VDISABLE)
        out: list[bytes | int] = []
        start = 0
        for i, b in enumerate(data):
            sig = keys.get(bytes([b]))
            if sig is not None:
                out += [data[start:i], sig]
                start = i + 1
        return [*out, data[start:]]


def _in_foreground(fd: int) -> bool:
    """Whether setting the terminal's modes and reading it leaves this process running: it is in the terminal's
    foreground, or the terminal is not its controlling one (SIGTTOU and SIGTTIN stop only a background job of the
    terminal that controls it)."""
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:  # not this process's controlling terminal
        return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
