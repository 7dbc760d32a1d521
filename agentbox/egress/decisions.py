"""The run's egress log: one JSON line per decision, appended as it happens.

A line is written once per client connection, when it ends (a denial ends it at once), so it can
carry the bytes moved each way. Each line is one write() on an O_APPEND descriptor: lines from
concurrent exchanges never interleave, and a reader tailing the file sees only whole lines.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime, timezone

from agentbox.egress.streams import Tally

__all__ = ["DecisionLog", "Exchange", "read_log"]


class Exchange:
    """What one client connection asked for and what became of it."""

    __slots__ = (
        "client",
        "method",
        "host",
        "port",
        "allowed",
        "reason",
        "detail",
        "address",
        "up",
        "down",
        "started",
        "time",
        "answered",
        "credentials",
        "final",
    )

    def __init__(self, client: str):
        self.client = client
        self.method: str | None = None
        self.host: str | None = None
        self.port: int | None = None
        self.address: str | None = None
        self.allowed, self.reason, self.detail = False, "incomplete", ""
        self.up, self.down = Tally(), Tally()
        self.started = time.monotonic()
        self.time = _now()
        self.answered = False  # the client has had its reply (a tunnel's 200): a refusal now only closes
        self.credentials: list[str] = []  # variables whose real value the proxy swapped in (names, never values)
        self.final = False  # a refusal that nothing after it may overwrite (see refuse_for_good)

    def decide(self, allowed: bool, reason: str, detail: str = "") -> None:
        if self.final:
            return
        self.allowed, self.reason, self.detail = allowed, reason, detail
        self.time = _now()

    def refuse_for_good(self, reason: str, detail: str) -> None:
        """A refusal decided mid-exchange (a secret on its way back): closing the connection makes the other
        direction fail or end too, and what it would decide then must not hide why."""
        self.decide(False, reason, detail)
        self.final = True

    def record(self) -> dict:
        return {
            "time": self.time,
            "client": self.client,
            "method": self.method,
            "host": self.host,
            "port": self.port,
            "allowed": self.allowed,
            "reason": self.reason,
            "detail": self.detail,
            "address": self.address,
            "bytes_up": self.up.n,
            "bytes_down": self.down.n,
            "duration_ms": round((time.monotonic() - self.started) * 1000, 1),
            **({"credentials": sorted(set(self.credentials))} if self.credentials else {}),
        }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class DecisionLog:
    def __init__(self, path: str):
        self.path = path
        self.error: OSError | None = None  # set by a failed write: the proxy then allows nothing more
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def write(self, exchange: Exchange) -> None:
        self._write(exchange.record())

    def write_request(self, record: dict) -> None:
        """One request of a connection that carries many (the model route logs each one it forwards)."""
        self._write({"time": _now(), **record})

    def _write(self, record: dict) -> None:
        if self._fd < 0:
            return
        try:
            os.write(self._fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
        except OSError as exc:
            self.error = exc
            print(f"agentbox egress: cannot write the decision log {self.path}: {exc}", file=sys.stderr)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_log(path: str | os.PathLike) -> list[dict]:
    """Every decision of a log (or a copy of one); a last line still being written is left out."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n") and line.strip()]
