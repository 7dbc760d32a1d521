"""Run records: one row per launch in SQLite (`$AGENTBOX_HOME/agentbox.db`), migrated from the start.

SQLite because launches run at once: WAL and a busy timeout keep concurrent writers whole, and a
reader never blocks a launch. The schema is a list of migrations (data, below); `PRAGMA user_version`
says how many are applied and `schema_migrations` when each was, so a newer agent-box upgrades an
older store in place and an older one refuses a newer store instead of misreading it.

A launch killed with SIGKILL cannot record its end. Its row keeps the launcher's pid and that
process's start time (boot id + start tick, so a reused pid does not count), and the next command
that opens the store marks it `interrupted`, removes its private config and kills what is left.
Imports only the standard library: the launch hot path records a Run on every start.
"""

from __future__ import annotations

import os
import sqlite3
import time

try:  # the C escaper json.dumps uses, without json's own imports
    from _json import encode_basestring_ascii as _quoted
except ImportError:  # an interpreter without json's accelerator
    from json.encoder import py_encode_basestring_ascii as _quoted

__all__ = ["MIGRATIONS", "STATUSES", "RunStore", "process_identity", "now", "egress_log"]

STATUSES = ("running", "finished", "failed", "refused", "interrupted")

# Append only: never edit an applied migration, add the next one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE runs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            status TEXT NOT NULL CHECK (status IN ('running','finished','failed','refused','interrupted')),
            profile TEXT NOT NULL,
            profile_digest TEXT NOT NULL,
            profile_source TEXT,
            project_root TEXT NOT NULL,
            harness TEXT NOT NULL,
            version TEXT,
            binary TEXT,
            binary_sha256 TEXT,
            backend TEXT,
            intent_hash TEXT,
            plan_hash TEXT,
            claims TEXT NOT NULL DEFAULT '{}',
            evidence_ids TEXT NOT NULL DEFAULT '[]',
            overrides TEXT NOT NULL DEFAULT '[]',
            accept_unverified INTEGER NOT NULL DEFAULT 0,
            harness_args TEXT NOT NULL DEFAULT '[]',
            refusal TEXT,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            exit_status INTEGER,
            cleanup TEXT,
            launcher_pid INTEGER,
            launcher_start TEXT,
            run_dir TEXT
        )""",
        "CREATE INDEX runs_status ON runs (status)",
    ),
    # which required items `--accept-unverified ITEM` let through unproven, by name
    ("ALTER TABLE runs ADD COLUMN accepted_items TEXT NOT NULL DEFAULT '[]'",),
    # how the harness was started (`launch`: its TUI; `acp`: as an ACP agent for an editor), and the ACP
    # session ids an `agent-box acp` endpoint opened, in order
    (
        "ALTER TABLE runs ADD COLUMN mode TEXT NOT NULL DEFAULT 'launch'",
        "ALTER TABLE runs ADD COLUMN acp_sessions TEXT NOT NULL DEFAULT '[]'",
    ),
)
_JSON = ("claims", "evidence_ids", "overrides", "harness_args", "accepted_items", "acp_sessions")
_FIELDS = (
    "profile",
    "profile_digest",
    "profile_source",
    "project_root",
    "harness",
    "version",
    "binary",
    "binary_sha256",
    "backend",
    "intent_hash",
    "plan_hash",
    *_JSON,
    "accept_unverified",
    "refusal",
    "run_dir",
    "mode",
)


def json_text(value) -> str:
    """`json.dumps(value, sort_keys=True)` for the plain data a Run's columns hold, without importing json: a launch
    records its Run before the harness starts, and json's import of re and enum was ~5 ms of it (benchmarks/launch.py).
    Strings are escaped by json's own C escaper (ASCII only, as json.dumps gives them)."""
    if isinstance(value, str):
        return _quoted(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float) and value - value == 0:  # finite: json writes a float as its repr
        return float.__repr__(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return "{" + ", ".join(f"{_quoted(k)}: {json_text(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(json_text(v) for v in value) + "]"
    raise TypeError(f"a Run's column holds plain data (strings, numbers, lists, string-keyed maps), not {value!r}")


def egress_log(home: str, run_id: str) -> str:
    """Where a launch keeps its egress proxy's decisions once the run folder is gone."""
    return os.path.join(home, "runs", run_id, "egress.jsonl")


def now() -> str:
    """UTC, milliseconds, ISO 8601 (as datetime.isoformat gives it; time is already imported, datetime not)."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}+00:00"


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "?"


def process_identity(pid: int) -> str | None:
    """`boot id:start tick` of a live process, None when it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    return f"{_boot_id()}:{fields[19]}"


class RunStore:
    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        self._con: sqlite3.Connection | None = None

    # -- connection and schema --------------------------------------------------------------------
    @property
    def con(self) -> sqlite3.Connection:
        if self._con is None:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            con.row_factory = sqlite3.Row
            con.execute("PRAGMA busy_timeout=30000")
            con.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash may lose the last commit, never corrupt
            if con.execute("PRAGMA user_version").fetchone()[0] != len(MIGRATIONS):
                self._migrate(con)
            self._con = con
        return self._con

    def _migrate(self, con: sqlite3.Connection) -> None:
        from agentbox.errors import InputError

        con.execute("PRAGMA journal_mode=WAL")  # persistent in the file; not allowed inside a transaction
        con.execute("BEGIN IMMEDIATE")  # concurrent first launches: one migrates, the others then see it done
        try:
            done = con.execute("PRAGMA user_version").fetchone()[0]
            if done > len(MIGRATIONS):
                raise InputError(
                    f"the run store has schema {done}, newer than this agent-box knows "
                    f"({len(MIGRATIONS)}); upgrade agent-box",
                    file=self.path,
                )
            con.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            for version in range(done + 1, len(MIGRATIONS) + 1):
                for statement in MIGRATIONS[version - 1]:
                    con.execute(statement)
                con.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, now()))
            con.execute(f"PRAGMA user_version={len(MIGRATIONS)}")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    # -- writes -----------------------------------------------------------------------------------
    def _insert(self, status: str, fields: dict, **extra) -> str:
        run_id = os.urandom(6).hex()  # secrets would import hashlib and random
        row = {k: fields.get(k) for k in _FIELDS}
        row["mode"] = row["mode"] or "launch"
        for k in _JSON:
            row[k] = json_text(row[k] if row[k] is not None else ({} if k == "claims" else []))
        row["accept_unverified"] = int(bool(row["accept_unverified"]))
        row.update(id=run_id, status=status, started_at=now(), **extra)
        cols = ", ".join(row)
        self.con.execute(f"INSERT INTO runs ({cols}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        return run_id

    def start(self, fields: dict) -> str:
        """A running Run owned by this process; returns its id."""
        pid = os.getpid()
        return self._insert("running", fields, launcher_pid=pid, launcher_start=process_identity(pid))

    def refuse(self, fields: dict, message: str, exit_status: int = 3) -> str:
        stamp = now()
        return self._insert(
            "refused",
            {**fields, "refusal": message},
            ended_at=stamp,
            exit_status=exit_status,
            cleanup="nothing was written",
        )

    def finish(self, run_id: str, exit_status: int | None, cleanup: str, status: str = "finished") -> None:
        self.con.execute(
            "UPDATE runs SET status=?, ended_at=?, exit_status=?, cleanup=? WHERE id=?",
            (status, now(), exit_status, cleanup, run_id),
        )

    def add_session(self, run_id: str, session_id: str) -> None:
        """Record an ACP session the Run's endpoint opened (once, in order)."""
        import json  # a read: only the writes are on a launch's hot path (json_text)

        row = self.con.execute("SELECT acp_sessions FROM runs WHERE id=?", (run_id,)).fetchone()
        sessions = json.loads(row["acp_sessions"]) if row else []
        if session_id not in sessions:
            self.con.execute("UPDATE runs SET acp_sessions=? WHERE id=?", (json_text([*sessions, session_id]), run_id))

    def reap(self) -> list[str]:
        """Mark running Runs whose launcher is gone as interrupted (and clean up after them)."""
        rows = self.con.execute(
            "SELECT id, launcher_pid, launcher_start, run_dir FROM runs WHERE status='running'"
        ).fetchall()
        gone = []
        for row in rows:
            if row["launcher_pid"] is not None and process_identity(row["launcher_pid"]) == row["launcher_start"]:
                continue
            cleanup = _recover(row["id"], row["run_dir"])
            cur = self.con.execute(
                "UPDATE runs SET status='interrupted', cleanup=? WHERE id=? AND status='running'", (cleanup, row["id"])
            )
            if cur.rowcount:
                gone.append(row["id"])
        return gone

    # -- reads ------------------------------------------------------------------------------------
    def list(self, limit: int | None = None) -> list[dict]:
        self.reap()
        sql = "SELECT * FROM runs ORDER BY seq DESC" + (f" LIMIT {int(limit)}" if limit else "")
        return [_decode(r) for r in self.con.execute(sql)]

    def get(self, run_id: str) -> dict:
        """One Run by id or unique id prefix."""
        from agentbox.errors import InputError

        self.reap()
        rows = self.con.execute(
            "SELECT * FROM runs WHERE id LIKE ? ORDER BY seq", (run_id.replace("%", "") + "%",)
        ).fetchall()
        if not rows:
            raise InputError(f"no run {run_id!r}; see agent-box runs list")
        exact = [r for r in rows if r["id"] == run_id]
        if len(rows) > 1 and not exact:
            raise InputError(f"run id prefix {run_id!r} is ambiguous: {', '.join(r['id'] for r in rows[:5])}")
        return _decode(exact[0] if exact else rows[0])


def _decode(row: sqlite3.Row) -> dict:
    import json  # a read: only the writes are on a launch's hot path (json_text)

    out = dict(row)
    for k in _JSON:
        out[k] = json.loads(out[k])
    out["accept_unverified"] = bool(out["accept_unverified"])
    del out["seq"]
    return out


def _recover(run_id: str, run_dir: str | None) -> str:
    """After a launcher died: kill what carries its marker, remove its private config folder."""
    import shutil

    from agentbox.hot import run_root
    from agentbox.sandbox.session import kill_marked

    notes = []
    leftovers = kill_marked(run_id)
    if leftovers:
        notes.append(f"killed {len(leftovers)} leftover process(es)")
    # only a folder that is ours: under the temp dir and named by launch
    if run_dir and os.path.dirname(run_dir) == run_root() and os.path.basename(run_dir).startswith("agentbox-launch-"):
        shutil.rmtree(run_dir, ignore_errors=True)
        notes.append("private config removed" if not os.path.exists(run_dir) else f"could not remove {run_dir}")
    return "recovered after the launcher died: " + (", ".join(notes) or "nothing was left")
