"""The canary's log format: the writer the server uses and the reader tests use.

Two files per log:
- FILE: one JSON object per line per tool invocation; created empty when the server starts.
- FILE.started: one JSON line per server start-up (pid, name), so "started but never called"
  (marker present, FILE empty) differs from "never started" (no marker).
Several server processes may share one log (a harness can spawn the server more than once), so
every line goes out in a single O_APPEND write under an exclusive flock, then fsync.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVER_NAME = "canary"
DEFAULT_SECRET = "AGENTBOX-CANARY-SECRET-7f3a9c"
TOOL_NAMES = ("allowed_echo", "denied_write", "read_path", "fetch_url", "call_api", "secret_read")

# Sync tools run on worker threads inside one server, flock covers other processes.
_thread_lock = threading.Lock()


def started_marker(log: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(log)}.started")


def append_line(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append one JSON line durably; concurrent writers never interleave."""
    data = (json.dumps(record, sort_keys=True) + "\n").encode()
    with _thread_lock:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            view = memoryview(data)
            while view:  # a short write must not leave half a line for another writer to split
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)  # closing releases the flock


def announce_start(log: str | os.PathLike[str], name: str) -> None:
    """Create the (empty) invocation log, then record this start-up in the marker file."""
    # Never truncate: another server process (or an earlier spawn) may already have logged calls.
    os.close(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
    append_line(started_marker(log), {"event": "started", "pid": os.getpid(), "name": name, "time": time.time()})


def canary_command(
    log: str | os.PathLike[str],
    *,
    name: str | None = None,
    secret: str | None = None,
    python: str | None = None,
) -> list[str]:
    """argv that starts the canary server, for tests and harness configs."""
    argv = [python or sys.executable, "-m", "agentbox.canary_mcp", "--log", os.fspath(log)]
    if name is not None:
        argv += ["--name", name]
    if secret is not None:
        argv += ["--secret", secret]
    return argv


class CanaryLog:
    """Read side of a canary log; every method re-reads the files, so it sees the latest calls."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.marker = started_marker(self.path)

    def started(self) -> bool:
        """True once any server process started with this log (even if it was never called)."""
        return bool(self.starts())

    def starts(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.marker)

    def invocations(self) -> list[dict[str, Any]]:
        """Every invocation in order: {"tool", "arguments", "server", "pid", "time"}."""
        return _read_jsonl(self.path)

    def calls(self, tool: str) -> list[dict[str, Any]]:
        """The arguments of every call to `tool`, in order."""
        return [rec["arguments"] for rec in self.invocations() if rec["tool"] == tool]

    def __repr__(self) -> str:
        return f"CanaryLog({str(self.path)!r})"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]
