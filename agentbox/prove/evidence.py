"""Evidence records: what a conformance or negative test observed, append-only JSON Lines.

The pydantic model is the single source of truth; `agentbox/schemas/evidence.schema.json` is
exported from it (a test pins the two together); after changing the model, regenerate it with
`python -m agentbox.prove.evidence --schema > agentbox/schemas/evidence.schema.json`. Records are written whole with one `write` per
line under an exclusive lock, so concurrent writers never interleave and a crash loses at most the
line being written. `read_records` is the full scan; a launch looks one build up through
`evidence_index`, which catches up with whatever was appended since it last looked.

The torn-line rule, which every reader keeps: a line is a record once its newline is written. A last line
without one that is no JSON is a write cut short (or one still under way): readers skip it with a warning,
and `append` moves it to the file's quarantine (`<file>.quarantine`, which no reader reads: they read
`*.jsonl`) before appending, so no record is ever glued onto it. A bad line anywhere else is an error
naming file and line; `agent-box evidence repair` (`evidence_repair`) moves such lines aside.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentbox import __version__
from agentbox.errors import InputError
from agentbox.harnesses.agent_build import AgentBuild

__all__ = [
    "SCHEMA_VERSION",
    "Outcome",
    "KernelFeature",
    "Mode",
    "MODES",
    "Privilege",
    "AgentBuild",
    "PrivilegeLevel",
    "privilege_level",
    "Provenance",
    "RunInfo",
    "EvidenceRecord",
    "append",
    "read_records",
    "EvidenceError",
    "host_facts",
    "json_schema",
    "scan_lines",
    "parse_line",
    "is_torn",
    "warn_torn",
    "bad_line",
    "quarantine_path",
    "quarantine",
    "store_files",
    "wrong_schema",
]

SCHEMA_VERSION = 1
# `inapplicable`: the attack cannot exist on this kernel (it lacks what the vector needs, `run_info.kernel_lacks`),
# shown by the attack's own system call answered ENOSYS where nothing of Agent-Box's stood in between: neither a
# block nor a gap, it makes a claim hold only where the kernel lacks the same feature (`claims`, `gate`)
Outcome = Literal["blocked", "escaped", "error", "skipped", "inapplicable"]
# Kernel features an attack may need to exist at all (a vector's `kernel_needs`)
KernelFeature = Literal["modules"]
# `acp`: an attempt through the `agent-box acp` endpoint's client surfaces (what a client would do for the agent
# outside the sandbox), judged by the endpoint's policy over the composed plan
Layer = Literal["sandbox", "harness", "composed", "acp"]


class EvidenceError(InputError, ValueError):
    """A store the reader cannot trust (another schema version, a bad line): exit 2, naming file:line.

    `reason` is what is wrong without where or what to do (`evidence verify` lists it beside file and line)."""

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None, reason: str | None = None):
        super().__init__(message, file=file, field=field)
        self.reason = reason or message


class Privilege(BaseModel):
    """Who the suite ran as and what the layer's processes held: evidence taken as root proves nothing for an
    unprivileged launch (other capabilities, other kernel paths), and the reverse."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    uid: int  # the effective uid that started the layer (the test run's)
    user_namespace: bool | None = None  # its processes had their own user namespace (None: not observed)
    capabilities: str | None = None  # CapEff observed inside the layer's processes, hex as /proc shows it

    @property
    def level(self) -> PrivilegeLevel:
        return "root" if self.uid == 0 else "user"


PrivilegeLevel = Literal["root", "user"]
Provenance = Literal["observed", "synthetic"]


def privilege_level(uid: int | None = None) -> PrivilegeLevel:
    """This process's level (what a launch from here would run as)."""
    return "root" if (os.geteuid() if uid is None else uid) == 0 else "user"


Mode = Literal["headless", "tui", "acp"]
MODES: tuple[str, ...] = ("headless", "tui", "acp")


class RunInfo(BaseModel):
    """What the observation depends on, after web-platform-tests' run_info."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    harness: str | None  # None for the sandbox-alone layer, which no harness takes part in
    version: str | None
    binary_sha256: str | None
    dialect: str | None
    sandbox_backend: str | None
    sandbox_version: str | None
    kernel: str
    agentbox_version: str
    suite_revision: str
    catalogue_digest: str
    privilege: Privilege | None = None  # None: recorded before privilege was recorded; matches no launch
    # Where the record came from: "observed" by this package's negative suite running a real binary, or
    # "synthetic" (made up by a generator for tests, the report or a benchmark). None: recorded before
    # records said (or by a producer that did not); only "observed" ever counts as proof at the gate.
    provenance: Provenance | None = None
    # How the harness was driven: its one-shot headless run, its interactive TUI on a pseudo-terminal, or as an
    # ACP agent. Permission handling differs by mode (Claude Code's TUI modes, Codex's TUI approvals, which
    # `codex exec` forces to never), so a harness's enforcement is proven only for the mode it ran in. Records
    # written before the field existed came from headless runs.
    mode: Mode = "headless"
    # The ACP agent that made an `acp`-layer attempt when no harness did: the protocol test agent, which stands in
    # for no harness (`harness` is None) and on which no harness's claim rests.
    agent: str | None = None
    # The ACP adapter that ran, in an `acp`-mode record of a harness an adapter package drives (agentbox/data/acp.yaml):
    # the program under test is the adapter as much as the harness (codex-acp embeds its own codex core), so a record
    # speaks for that adapter build only. None in every other record, and in acp records written before the field
    # existed: those match no launch (`adapter_unrecorded`), as a record without `privilege` matches none.
    adapter: AgentBuild | None = None
    # Of the kernel features the vector needs (`kernel_needs`), those this host's kernel lacked when it ran
    # (`vectors.kernel_lacks_here`): the kernel facts an `inapplicable` outcome rests on. Empty for a vector that
    # needs none, or on a kernel that has them all.
    kernel_lacks: tuple[KernelFeature, ...] = ()

    @property
    def level(self) -> str:
        return self.privilege.level if self.privilege is not None else "?"


class EvidenceRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: int = SCHEMA_VERSION
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    run_info: RunInfo
    vector_id: str
    capability: str
    layer: Layer
    outcome: Outcome
    observation: str
    control_outcome: Literal["passed", "failed", "not_run"] = "not_run"
    duration: float = 0.0
    nodeid: str = ""
    # Milliseconds: records of one run often share a second, and "latest" must still be well defined.
    timestamp: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="milliseconds"))

    @model_validator(mode="after")
    def _inapplicable_names_the_kernel(self) -> "EvidenceRecord":
        if self.outcome == "inapplicable" and not self.run_info.kernel_lacks:
            raise ValueError(
                "an inapplicable outcome names the kernel features the host lacked (run_info.kernel_lacks)"
            )
        return self

    @property
    def when(self) -> datetime:
        """The timestamp as a datetime, so records written with different precisions still compare."""
        return datetime.fromisoformat(self.timestamp)


def host_facts() -> dict[str, str]:
    return {"kernel": platform.release(), "agentbox_version": __version__}


def json_schema() -> dict:
    """The JSON Schema document of one line; `python -m agentbox.prove.evidence --schema` prints it."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **EvidenceRecord.model_json_schema()}


def _file(directory: Path) -> Path:
    return directory / "evidence.jsonl"


def quarantine_path(path: Path) -> Path:
    """Where a file's bad lines are moved: beside it, under a name no reader reads (they read `*.jsonl`)."""
    return path.with_name(path.name + ".quarantine")


def quarantine(path: Path, lines: Iterable[bytes]) -> Path:
    """Append `lines` verbatim, each ended by a newline, to the quarantine of `path`; return its path.

    Verbatim, so that a line fixed by hand can be appended back; synced before the caller removes the lines
    from the store, so a crash between the two leaves a line in both places, never in neither."""
    target = quarantine_path(path)
    data = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise EvidenceError(f"cannot write the quarantine: {exc.strerror or exc}", file=str(target)) from None
    return target


def _open_locked(path: Path) -> int:
    """The store file, opened for appending under the writers' exclusive lock.

    `evidence repair` replaces a file with a rewritten one under this lock: a writer that waited for it holds
    the replaced file's lock, so it opens the new file and locks again rather than append where no reader looks."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def _last_line_start(fd: int, size: int) -> int:
    """The offset just past the file's last newline (0 without one), read backwards in blocks."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def _line_number(fd: int, offset: int) -> int:
    """The number of the line that starts at `offset`."""
    count, done = 0, 0
    while done < offset:
        block = os.pread(fd, min(65536, offset - done), done)
        count, done = count + block.count(b"\n"), done + len(block)
    return count + 1


def _end_the_last_line(fd: int, path: Path) -> bytes:
    """What must precede new lines so that none is glued onto the file's last line (called under the lock).

    A last line without its newline is either a whole record that lost it (a hand edit): it is ended; or
    a write cut short (no writer holds the lock, so none is under way): it is quarantined and cut off."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return b""
    start = _last_line_start(fd, size)
    tail = os.pread(fd, size - start, start)
    if not tail.strip() or not is_torn(tail):
        return b"\n"
    where = f"{path}:{_line_number(fd, start)}"
    target = quarantine(path, [tail])
    os.ftruncate(fd, start)
    print(
        f"agent-box: warning: {where}: an incomplete last line (a write cut short) was moved to {target} "
        "before appending",
        file=sys.stderr,
    )
    return b""


def append(directory: str | os.PathLike, records: Iterable[EvidenceRecord]) -> int:
    """Append records to the store; returns how many were written."""
    path = _file(Path(directory))
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(r.model_dump_json() + "\n" for r in records)
    if not lines:
        return 0
    fd = _open_locked(path)
    try:
        os.write(fd, _end_the_last_line(fd, path) + lines.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return lines.count("\n")


def is_torn(line: bytes) -> bool:
    """Whether a last line without its newline is a write cut short: it is no JSON (a whole record is)."""
    try:
        json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError too: a write cut inside a character
        return True
    return False


_warned: set[tuple[str, int]] = set()


def warn_torn(path: Path, n: int) -> None:
    """Every reader's word for the torn line it skips: where it is, and what to do once no suite is writing.
    Once per line and process: a launch reads the store twice (its claims, and the runs they left out)."""
    if (str(path), n) in _warned:
        return
    _warned.add((str(path), n))
    print(
        f"agent-box: warning: {path}:{n}: an incomplete last line (a write cut short, or one still under way) "
        f"is ignored; once no suite is writing, move it aside with: agent-box evidence repair --evidence {path}",
        file=sys.stderr,
    )


def bad_line(reason: str, path: Path, n: int, field: str | None = None) -> EvidenceError:
    """The error of a bad line: file and line, why, and the command that moves such lines aside."""
    return EvidenceError(
        f"{reason}; move bad lines aside with: agent-box evidence repair --evidence {path}",
        file=f"{path}:{n}",
        field=field,
        reason=reason,
    )


def wrong_schema(version, path: Path, n: int) -> EvidenceError:
    """A line of another schema version (or none): what every reader says of it."""
    return bad_line(f"schema_version {version!r} is not {SCHEMA_VERSION}; this agent-box cannot read it", path, n)


def scan_lines(f) -> Iterator[tuple[int, bytes, bool]]:
    """(number, line, torn) of each non-blank line of a file open in binary; torn marks a last line that is
    a write cut short (`is_torn`). Bytes, split on newlines only: as the index splits what it reads."""
    for n, raw in enumerate(f, 1):
        if raw.strip():
            yield n, raw, not raw.endswith(b"\n") and is_torn(raw)


def parse_line(raw: bytes, path: Path, n: int) -> EvidenceRecord:
    """One line as a record; a line of another schema version, or no record at all, is a `bad_line`."""
    try:
        text = raw.decode("utf-8")  # explicitly: json.loads would take a byte-order mark for UTF-16
    except UnicodeDecodeError:
        raise bad_line("not UTF-8 text (is this an evidence file?)", path, n) from None
    try:
        data = json.loads(text)
    except ValueError:
        raise bad_line("not JSON (a write cut short?)", path, n) from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version != SCHEMA_VERSION:
        raise wrong_schema(version, path, n)
    try:
        return EvidenceRecord.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise bad_line(err["msg"], path, n, field=".".join(str(p) for p in err["loc"])) from None


def store_files(store: Path) -> list[Path]:
    """The files of a store: a folder's `*.jsonl` at any depth (a folder so named is walked, not read), or the
    one file given."""
    if store.is_dir():
        return sorted(p for p in store.rglob("*.jsonl") if p.is_file())
    return [store]


def read_records(directory: str | os.PathLike) -> Iterator[EvidenceRecord]:
    """Every record of a store, oldest first. A bad line is a clear error; a torn last line is skipped."""
    for path in store_files(Path(directory)):
        with open(path, "rb") as f:
            for n, raw, torn in scan_lines(f):
                if torn:
                    warn_torn(path, n)
                else:
                    yield parse_line(raw, path, n)


if __name__ == "__main__":
    from agentbox.core.schema_export import main

    # Regenerate the pinned schema file with:
    #   python -m agentbox.prove.evidence --schema > agentbox/schemas/evidence.schema.json
    sys.exit(main("agentbox.prove.evidence", json_schema, sys.argv[1:]))
