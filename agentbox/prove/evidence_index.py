"""An index over an evidence store: the latest record per build and (vector, layer), in SQLite.

A launch needs the claims of one exact build (harness, version, binary sha256, backend) on this host
(its kernel: namespaces and seccomp are the kernel's, so evidence from another kernel proves nothing
here, however many CI machines were merged into the store); reading
every record of a store that has grown to 100,000 lines would cost it seconds. The index keeps, per
build key, provenance and (vector, layer), only the record `claims.reconcile` would pick as latest
(newest timestamp; a tie goes to the later line), so a lookup reads a few dozen rows. A lookup gives
only records observed by a suite run: synthetic records, and records written before records said
where they came from, never reach the gate (`unproven` counts them, so a refusal can say why).

It lives under `$AGENTBOX_HOME/index/`, named by a digest of the store's resolved path, never in the
store: reading a store writes nothing into it, so a read-only store (a CI artifact, a shared folder)
keeps its index across launches like any other, and each store has its own. It is caught up on every
lookup, whoever wrote the store: the stores are append-only JSON Lines, so each file is indexed up to a
byte offset and only its new tail is parsed; a file that shrank or was replaced (`evidence repair`
rewrites one) makes the index rebuild from scratch. It keeps the torn-line rule of `evidence.read_records`:
a line counts once its newline is written, a last line without one that is no JSON is skipped with a
warning, and a bad line anywhere else is an error naming file and line. `read_records` stays the
full-scan reader.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from agentbox.harnesses.agent_build import build_key
from agentbox.hot import store_files, store_signature
from agentbox.sandbox import DEFAULT_BACKEND

__all__ = ["lookup", "unproven", "observed", "sync", "signature", "index_path"]

_FORMAT = "6"  # bump when the tables change: an old index is then rebuilt (6: the ACP adapter's build)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, ino INTEGER NOT NULL, size INTEGER NOT NULL, "
    "mtime_ns INTEGER NOT NULL, offset INTEGER NOT NULL, lines INTEGER NOT NULL)",
    # harness-layer rows have backend '' (they join every backend); sandbox-alone rows have harness ''
    # provenance is part of the key: a synthetic record must never shadow an observed one of its run; so is the
    # mode a harness was driven in (a TUI run never shadows a headless one); sandbox-alone rows have mode ''; and
    # so is the ACP adapter that ran (`AgentBuild.key`; '' where none did, or an acp record predates the field): a
    # run of one adapter build never shadows another's
    "CREATE TABLE IF NOT EXISTS latest (harness TEXT NOT NULL, version TEXT NOT NULL, sha TEXT NOT NULL, "
    "backend TEXT NOT NULL, kernel TEXT NOT NULL, privilege TEXT NOT NULL, sversion TEXT NOT NULL, "
    "provenance TEXT NOT NULL, mode TEXT NOT NULL, adapter TEXT NOT NULL, vector TEXT NOT NULL, "
    "layer TEXT NOT NULL, t INTEGER NOT NULL, ord TEXT NOT NULL, line TEXT NOT NULL, "
    "PRIMARY KEY (harness, version, sha, backend, kernel, privilege, sversion, provenance, mode, adapter, vector, "
    "layer)) WITHOUT ROWID",
)
_UPSERT = (
    "INSERT INTO latest VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT (harness, version, sha, backend, kernel, privilege, sversion, provenance, mode, adapter, vector, "
    "layer) "
    "DO UPDATE SET t=excluded.t, ord=excluded.ord, line=excluded.line "
    "WHERE excluded.t > latest.t OR (excluded.t = latest.t AND excluded.ord > latest.ord)"
)


def _files(store: Path) -> list[Path]:
    return [Path(p) for p in store_files(str(store))]


def index_path(store: str | os.PathLike) -> Path:
    """The store's index: one per store under $AGENTBOX_HOME, keyed by its resolved path (so another
    spelling of the same store finds the same index)."""
    import hashlib  # here: a cached launch only asks for `signature`

    from agentbox.core.home import index_dir

    key = hashlib.sha256(str(Path(store).resolve()).encode()).hexdigest()
    return index_dir() / f"{key}.sqlite"


def signature(store: str | os.PathLike) -> list[list]:
    """What the store's content depends on, cheaply: [path, inode, size, mtime] per file (a cache key); the launch
    cache reads it through `hot.store_signature`, which this is."""
    return store_signature(os.fspath(store))


def _connect(path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=30, isolation_level=None)
    con.execute("PRAGMA busy_timeout=30000")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    for statement in _SCHEMA:
        con.execute(statement)
    return con


def _micros(stamp: str) -> int:
    """Timestamps of any precision and offset compare as instants (EvidenceRecord.when does the same)."""
    # imported here: a cached launch only asks for `signature`, and datetime is one more module to load
    from datetime import datetime, timedelta, timezone

    when = datetime.fromisoformat(stamp)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (when - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)


def _key(data: dict) -> tuple[str, str, str, str, str, str, str, str, str, str]:
    info = data["run_info"]
    kernel = info.get("kernel") or ""
    privilege = info.get("privilege") or {}
    level = ("root" if privilege["uid"] == 0 else "user") if "uid" in privilege else "?"
    sversion = "" if data["layer"] == "harness" else info.get("sandbox_version") or "?"
    provenance = info.get("provenance") or ""
    if info.get("harness") is None:
        return "", "", "", info.get("sandbox_backend") or DEFAULT_BACKEND, kernel, level, sversion, provenance, "", ""
    backend = "" if data["layer"] == "harness" else info.get("sandbox_backend") or DEFAULT_BACKEND
    adapter = info.get("adapter")
    return (
        info["harness"],
        info.get("version") or "?",
        info.get("binary_sha256") or "",
        backend,
        kernel,
        level,
        sversion,
        provenance,
        info.get("mode") or "headless",
        build_key(adapter["name"], adapter.get("version"), adapter["sha256"]) if adapter else "",
    )


def _row(raw: bytes, path: Path, n: int) -> tuple:
    """The upsert row of one line; a line that is no record of this schema is a `bad_line`."""
    from agentbox.prove.evidence import SCHEMA_VERSION, EvidenceError, bad_line, wrong_schema

    try:
        text = raw.decode("utf-8")
        record = json.loads(text)
        if record.get("schema_version") != SCHEMA_VERSION:
            raise wrong_schema(record.get("schema_version"), path, n)
        return (
            *_key(record),
            record["vector_id"],
            record["layer"],
            _micros(record["timestamp"]),
            f"{path}\0{n:012d}",
            text,
        )
    except EvidenceError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError):
        raise bad_line("not a readable evidence record (a write cut short?)", path, n) from None


def _rows(path: Path, start: int, first_line: int):
    """Parse the complete lines after byte `start`; yield upsert rows, then (end offset, lines read)."""
    from agentbox.prove.evidence import is_torn, warn_torn

    with open(path, "rb") as f:
        f.seek(start)
        data = f.read()
        st = os.fstat(f.fileno())
    end = data.rfind(b"\n") + 1
    n = first_line
    rows = []
    for raw in data[:end].split(b"\n")[:-1]:  # on newlines only, as `read_records` splits
        n += 1
        if raw.strip():
            rows.append(_row(raw, path, n))
    tail = data[end:]
    if tail.strip():
        # the indexed offset stays before the last line until its newline comes, so it is read again
        # next time: a torn line (or one still being written) is skipped, as `read_records` skips it;
        # a whole record that only lacks its newline (a hand edit) counts, as it does there
        if is_torn(tail):
            warn_torn(path, n + 1)
        else:
            rows.append(_row(tail, path, n + 1))
    # the size recorded is what was read up to; its mtime only when that was the whole file, so a torn
    # tail (or a line appended meanwhile) makes the next call read on, not rebuild
    return rows, (st.st_ino, start + end, st.st_mtime_ns if start + end == st.st_size else -1), n


def _open(store: Path) -> sqlite3.Connection:
    try:
        path = index_path(store)
        path.parent.mkdir(parents=True, exist_ok=True)
        return _connect(path)
    except (OSError, sqlite3.OperationalError):  # a home that cannot be written: index in memory, once
        return _connect(":memory:")


def sync(store: str | os.PathLike) -> int:
    """Catch the index up with the store; return how many lines were parsed (0 when it was current)."""
    store = Path(store)
    files = _files(store)
    if not files:
        return 0
    con = _open(store)
    try:
        return _catch_up(con, files)
    finally:
        con.close()


def _stale(con: sqlite3.Connection, files: list[Path]) -> tuple[bool, bool]:
    """(anything to do, must rebuild)."""
    meta = dict(con.execute("SELECT key, value FROM meta"))
    if meta.get("format") != _FORMAT:
        return True, True
    known = {
        p: (ino, size, mtime) for p, ino, size, mtime in con.execute("SELECT path, ino, size, mtime_ns FROM files")
    }
    todo = rebuild = False
    for path in files:
        st = path.stat()
        seen = known.pop(str(path), None)
        if seen is None:
            todo = True
        elif (
            seen[0] != st.st_ino
            or st.st_size < seen[1]
            or (st.st_size == seen[1] and seen[2] != -1 and st.st_mtime_ns != seen[2])
        ):
            return True, True  # replaced, truncated or rewritten in place: not an append
        elif st.st_size != seen[1]:
            todo = True
    if known:
        return True, True  # a file went away: its records must leave the index too
    return todo, rebuild


def _catch_up(con: sqlite3.Connection, files: list[Path]) -> int:
    if not _stale(con, files)[0]:
        return 0
    con.execute("BEGIN IMMEDIATE")  # one catcher-up at a time; the others wait, then find it current
    try:
        todo, rebuild = _stale(con, files)
        if rebuild:
            # DROP, not DELETE: an index of an older format has other columns
            con.execute("DROP TABLE IF EXISTS latest")
            con.execute(_SCHEMA[2])
            con.execute("DELETE FROM files")
            con.execute("INSERT OR REPLACE INTO meta VALUES ('format', ?)", (_FORMAT,))
        parsed = 0
        if todo or rebuild:
            state = {p: (off, lines) for p, off, lines in con.execute("SELECT path, offset, lines FROM files")}
            for path in files:
                offset, lines = state.get(str(path), (0, 0))
                rows, (ino, end, mtime), lines_after = _rows(path, offset, lines)
                con.executemany(_UPSERT, rows)
                parsed += lines_after - lines
                con.execute(
                    "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?)", (str(path), ino, end, mtime, end, lines_after)
                )
        con.execute("COMMIT")
        return parsed
    except BaseException:
        con.execute("ROLLBACK")
        raise


# One build's rows: its composed rows on the backend, its harness-layer rows, the backend's sandbox-alone rows and
# the ACP endpoint's own rows over that backend (the protocol test agent's `acp` layer, no harness).
_BUILD = (
    "kernel=? AND privilege=? AND (layer='harness' OR sversion=?) AND ("
    "(harness=? AND version=? AND sha=? AND (backend=? OR layer='harness')) "
    "OR (harness='' AND backend=? AND layer IN ('sandbox', 'acp')))"
)
# Of those, the harness's acp rows of another ACP adapter build than the one started ('' for none), or of none
# recorded: they speak for another program, or for one nobody knows
_OTHER_ADAPTER = "(harness!='' AND mode='acp' AND adapter!=?)"


def _select(store: Path, sql: str, params: tuple) -> list[tuple]:
    files = _files(store)
    if not files:
        return []
    con = _open(store)
    try:
        _catch_up(con, files)
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _query(
    store: Path,
    sql: str,
    harness: str,
    version: str | None,
    sha: str | None,
    backend: str,
    kernel: str | None,
    privilege: str,
    backend_version: str | None,
    *after: str,
) -> list[tuple]:
    """`sql` with `_BUILD`'s parameters, then those of what follows it (`after`)."""
    return _select(
        store,
        sql,
        (
            kernel or os.uname().release,
            privilege,
            backend_version or "?",
            harness,
            version or "?",
            sha or "",
            backend,
            backend,
            *after,
        ),
    )


def lookup(
    store: str | os.PathLike,
    harness: str,
    version: str | None,
    sha: str | None,
    backend: str = DEFAULT_BACKEND,
    kernel: str | None = None,
    *,
    privilege: str,
    backend_version: str | None,
    adapter: str = "",
) -> list[dict]:
    """The records that decide one build's claims: its composed records on `backend`, its harness-layer
    records, and the sandbox-alone records of `backend`, each the latest of its (vector, layer), all
    recorded on `kernel` (default: this host's) at `privilege` ("root" or "user": what the launch runs as),
    the sandbox layers on `backend_version` (another bubblewrap is another sandbox). Its acp records only of
    `adapter`, the ACP adapter build an `agent-box acp` start drives (`AgentBuild.key`; '' for none).

    Only records observed by a suite run count (`RunInfo.provenance`): a synthetic record, or one that
    does not say where it came from, is never proof; `unproven` counts what was left out.
    An absent or empty store writes nothing and gives nothing.
    """
    rows = _query(
        Path(store),
        f"SELECT line FROM latest WHERE provenance='observed' AND {_BUILD} AND NOT {_OTHER_ADAPTER}",
        harness,
        version,
        sha,
        backend,
        kernel,
        privilege,
        backend_version,
        adapter,
    )
    return [json.loads(line) for (line,) in rows]


def unproven(
    store: str | os.PathLike,
    harness: str,
    version: str | None,
    sha: str | None,
    backend: str = DEFAULT_BACKEND,
    kernel: str | None = None,
    *,
    privilege: str,
    backend_version: str | None,
    adapter: str = "",
) -> dict[str, int]:
    """The (vector, layer) runs of the same build that `lookup` leaves out, per provenance ("synthetic",
    or "" for a record that does not say: written before records said where they came from); and, of an
    `agent-box acp` start's (`adapter` given), its observed acp runs of another adapter build ("another adapter") or
    of none recorded ("adapter unrecorded": written before records named the adapter)."""
    rows = _query(
        Path(store),
        "SELECT CASE WHEN provenance!='observed' THEN provenance WHEN adapter='' THEN 'adapter unrecorded' "
        f"ELSE 'another adapter' END, count(*) FROM latest WHERE {_BUILD} "
        f"AND (provenance!='observed' OR (?!='' AND {_OTHER_ADAPTER})) GROUP BY 1",
        harness,
        version,
        sha,
        backend,
        kernel,
        privilege,
        backend_version,
        adapter,
        adapter,
    )
    return dict(rows)


def observed(
    store: str | os.PathLike,
    backend: str = DEFAULT_BACKEND,
    kernel: str | None = None,
    *,
    privilege: str,
    backend_version: str | None,
) -> list[dict]:
    """What `lookup` gives for one build, for every build of every harness in the store: a refused launch
    reads it for the harness versions on which its items are proven (`gate.proven_elsewhere`)."""
    rows = _select(
        Path(store),
        "SELECT line FROM latest WHERE provenance='observed' AND kernel=? AND privilege=? "
        "AND (layer='harness' OR (sversion=? AND backend=?))",
        (kernel or os.uname().release, privilege, backend_version or "?", backend),
    )
    return [json.loads(line) for (line,) in rows]
