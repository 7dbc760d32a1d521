"""Messages for people on stderr: how much to say (`-q`, `-v`) and whether in colour.

Standard library only and import-free beyond os and sys: the hot paths (`sandbox run`, `launch` from
their caches) import it too. stdout is for the command's output (tables, JSON) and is never touched here.

Colour only on a terminal and never under NO_COLOR (https://no-color.org): a pipe, a log file or a
test runner always gets plain text, so a script can match the same words a person reads.
"""

from __future__ import annotations

import os
import sys

# `typing` itself is not imported: it costs ~3 ms of the measured hot paths (benchmarks/sandbox_run.py)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

__all__ = [
    "QUIET",
    "NORMAL",
    "VERBOSE",
    "FLAGS",
    "set_level",
    "take_flag",
    "colour",
    "paint",
    "error",
    "warn",
    "note",
    "detail",
    "detail_argv",
    "deprecated",
    "printable",
    "plain",
]

QUIET, NORMAL, VERBOSE = -1, 0, 1

# the spellings every command accepts; `take_flag` reads them where argparse is not used (the hot paths)
FLAGS = {"-q": QUIET, "--quiet": QUIET, "-v": VERBOSE, "--verbose": VERBOSE, "-vv": VERBOSE + 1}

_level = [NORMAL]


def set_level(quiet: bool = False, verbose: int = 0) -> None:
    """-q wins over -v: a script that asks for silence gets it whatever else it passed."""
    _level[0] = QUIET if quiet else NORMAL + verbose


def take_flag(arg: str) -> bool:
    """Whether `arg` is -q/-v (then applied); for the hot paths' own argument scanners."""
    if arg not in FLAGS:
        return False
    value = FLAGS[arg]
    if value == QUIET:
        _level[0] = QUIET
    elif _level[0] != QUIET:  # -q wins, as in set_level
        _level[0] = max(_level[0], value)
    return True


def _terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def colour(stream: TextIO | None = None) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return _terminal(sys.stderr if stream is None else stream)


def paint(text: str, code: str, stream: TextIO | None = None) -> str:
    """`text` in the SGR colour `code` ("31" red, "33" yellow, "2" dim) when `stream` shows colour."""
    return f"\033[{code}m{text}\033[0m" if colour(stream) else text


def printable(text: str, keep: str = "\n\t", escape: str = "") -> str:
    """`text` with what a terminal would act on (escapes, a carriage return), what hides or reorders text (bidi and
    zero-width controls) and the characters of `escape` written as `\\xNN` / `\\uNNNN`: a name a run chose (a path
    it left, a key it wrote) is shown as seen, never obeyed."""
    return "".join(
        c
        if (c.isprintable() or c in keep) and c not in escape
        else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        for c in text
    )


def _say(prefix: str, message: str) -> None:
    # on a terminal, attributes a run's own output left set (concealed text, say) are reset first: the line is seen
    # (SGR reset, the ASCII character set back in G0 and shifted in, an open hyperlink closed)
    reset = "\033[0m\033(B\017\033]8;;\033\\" if _terminal(sys.stderr) else ""
    print(f"{reset}{prefix}{printable(message)}", file=sys.stderr)


def plain(message: str) -> None:
    """Always printed, as `agent-box: MESSAGE` without colour: a line about a run for whoever started it."""
    _say("agent-box: ", message)


def error(message: str) -> None:
    """Always printed: why the command failed."""
    _say(paint("agent-box:", "1;31") + " ", message)


def warn(message: str) -> None:
    """Something the user should know but may silence with -q."""
    if _level[0] > QUIET:
        _say(paint("agent-box: warning:", "33") + " ", message)


def note(message: str) -> None:
    """Progress and summaries that are not the command's output; silenced by -q."""
    if _level[0] > QUIET:
        _say("", message)


def detail(message: str) -> None:
    """What -v adds: where things were read from, what was decided and run."""
    if _level[0] >= VERBOSE:
        _say(paint("agent-box: ", "2"), message)


def detail_argv(label: str, argv: list[str]) -> None:
    """With -v, the exact command line started, quoted so that it can be pasted into a shell."""
    if _level[0] >= VERBOSE:
        import shlex  # only when asked: the hot paths do not pay for it

        detail(f"{label}: {shlex.join(argv)}")


def deprecated(old: str, new: str) -> None:
    """An old spelling that still works. Said only to a person at a terminal: scripts (and the negative
    suite, which reads any `agent-box:` line on stderr as a refusal) keep working without a new stderr line."""
    if _terminal(sys.stderr):
        warn(f"{old} is deprecated; write {new}")
