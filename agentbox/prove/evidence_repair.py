"""`agent-box evidence verify` and `agent-box evidence repair`: find the lines a reader refuses, move them aside.

A crash mid-append leaves a torn line. Readers skip a torn last line with a warning (the torn-line rule,
see `evidence`), but a bad line anywhere else (a torn line that records were appended after, an edit
gone wrong, a record of a newer schema) stops every read of the store with exit 2. `verify` lists every
such line with its file, number and reason; `repair` moves them, verbatim, to the quarantine beside their
file (`<file>.quarantine`, which no reader reads) and rewrites the file with every good record in its
order. Each file is read under the writers' lock (shared to verify, so a line being written is not taken
for a torn one; exclusive to repair, so no record appended meanwhile is lost), and rewritten atomically:
a crash leaves the old file or the new one, and a bad line in the quarantine, the store or both.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentbox.prove.evidence import EvidenceError, parse_line, quarantine, scan_lines, store_files

__all__ = ["BadLine", "Verified", "Repaired", "verify", "repair"]


class BadLine(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    line: int
    reason: str
    torn_tail: bool  # a last line cut short: readers skip it with a warning; any other bad line stops them
    quarantine: str | None = None  # where `repair` moved it


class Verified(BaseModel):
    """What `evidence verify --json` prints."""

    model_config = ConfigDict(extra="forbid")
    store: str
    files: int
    records: int
    bad: list[BadLine]


class Repaired(BaseModel):
    """What `evidence repair --json` prints: the lines moved, and the records every file kept."""

    model_config = ConfigDict(extra="forbid")
    store: str
    files: int
    kept: int
    moved: list[BadLine]


def _scan(path: Path, fd: int) -> tuple[list[bytes], list[tuple[BadLine, bytes]]]:
    """The good lines of the open file, in order, and its bad ones with what is wrong with each."""
    good: list[bytes] = []
    bad: list[tuple[BadLine, bytes]] = []
    with os.fdopen(os.dup(fd), "rb") as f:
        for n, raw, torn in scan_lines(f):
            if torn:
                bad.append(
                    (
                        BadLine(
                            file=str(path), line=n, reason="an incomplete last line (a write cut short)", torn_tail=True
                        ),
                        raw,
                    )
                )
                continue
            try:
                parse_line(raw, path, n)
            except EvidenceError as exc:
                reason = f"{exc.field}: {exc.reason}" if exc.field else exc.reason
                bad.append((BadLine(file=str(path), line=n, reason=reason, torn_tail=False), raw))
                continue
            good.append(raw if raw.endswith(b"\n") else raw + b"\n")
    return good, bad


def _locked(path: Path, lock: int) -> int:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise EvidenceError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    fcntl.flock(fd, lock)
    return fd


def _each_file(store: Path, *, move: bool) -> tuple[int, int, list[BadLine]]:
    """(files, good records, bad lines) of the store; with `move`, each file's bad lines are moved aside."""
    from agentbox.core.atomic import write_files

    files = store_files(store) if store.exists() else []  # the default store is empty until a suite writes it
    kept, bad = 0, []
    for path in files:
        fd = _locked(path, fcntl.LOCK_EX if move else fcntl.LOCK_SH)
        try:
            good, wrong = _scan(path, fd)
            kept += len(good)
            if move and wrong:
                target = quarantine(path, [raw for _, raw in wrong])
                write_files({path: b"".join(good).decode()})  # each good line parsed as UTF-8 JSON: no byte changes
                wrong = [(b.model_copy(update={"quarantine": str(target)}), raw) for b, raw in wrong]
            bad += [b for b, _ in wrong]
        finally:
            os.close(fd)  # after the rename: a writer that waited finds the new file (`evidence._open_locked`)
    return len(files), kept, bad


def verify(store: str | os.PathLike) -> Verified:
    """Every bad line of the store; nothing is written."""
    files, records, bad = _each_file(Path(store), move=False)
    return Verified(store=str(store), files=files, records=records, bad=bad)


def repair(store: str | os.PathLike) -> Repaired:
    """Move every bad line of the store to its file's quarantine; a file without one is left untouched."""
    files, kept, moved = _each_file(Path(store), move=True)
    return Repaired(store=str(store), files=files, kept=kept, moved=moved)
