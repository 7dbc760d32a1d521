"""Evidence records: what a conformance or negative test observed, append-only JSON Lines.

The pydantic model is the single source of truth; `agentbox/schemas/evidence.schema.json` is
exported from it (a test pins the two together); after changing the model, regenerate it with
`python -m agentbox.evidence --schema > agentbox/schemas/evidence.schema.json`. Records are written whole with one `write` per
line under an exclusive lock, so concurrent writers never interleave and a crash loses at most the
line being written. `read_records` is the full scan; a launch looks one build up through
`evidence_index`, which catches up with whatever was appended since it last looked.
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

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import __version__
from .errors import InputError

__all__ = ["SCHEMA_VERSION", "Mode", "MODES", "Privilege", "PrivilegeLevel", "privilege_level", "Provenance", "RunInfo",
           "EvidenceRecord", "append", "read_records", "EvidenceError", "host_facts", "json_schema"]

SCHEMA_VERSION = 1
Outcome = Literal["blocked", "escaped", "error", "skipped"]
Layer = Literal["sandbox", "harness", "composed"]


class EvidenceError(InputError, ValueError):
    """A store the reader cannot trust (another schema version, a torn line): exit 2, naming file:line."""


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

    @property
    def when(self) -> datetime:
        """The timestamp as a datetime, so records written with different precisions still compare."""
        return datetime.fromisoformat(self.timestamp)


def host_facts() -> dict[str, str]:
    return {"kernel": platform.release(), "agentbox_version": __version__}


def json_schema() -> dict:
    """The JSON Schema document of one line; `python -m agentbox.evidence --schema` prints it."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **EvidenceRecord.model_json_schema()}


def _file(directory: Path) -> Path:
    return directory / "evidence.jsonl"


def append(directory: str | os.PathLike, records: Iterable[EvidenceRecord]) -> int:
    """Append records to the store; returns how many were written."""
    path = _file(Path(directory))
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(r.model_dump_json() + "\n" for r in records)
    if not lines:
        return 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, lines.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return lines.count("\n")


def read_records(directory: str | os.PathLike) -> Iterator[EvidenceRecord]:
    """Every record of a store, oldest first. A record of another schema version is a clear error."""
    base = Path(directory)
    files = sorted(base.rglob("*.jsonl")) if base.is_dir() else [base]
    for path in files:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except ValueError:
                    raise EvidenceError("not JSON (a truncated write?)", file=f"{path}:{n}") from None
                version = data.get("schema_version") if isinstance(data, dict) else None
                if version != SCHEMA_VERSION:
                    raise EvidenceError(f"schema_version {version!r} is not {SCHEMA_VERSION}; "
                                        "this agent-box cannot read it", file=f"{path}:{n}")
                try:
                    yield EvidenceRecord.model_validate(data)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    loc = ".".join(str(p) for p in err["loc"])
                    raise EvidenceError(err["msg"], file=f"{path}:{n}", field=loc) from None


if __name__ == "__main__":
    from .schema_export import main

    # Regenerate the pinned schema file with:
    #   python -m agentbox.evidence --schema > agentbox/schemas/evidence.schema.json
    sys.exit(main("agentbox.evidence", json_schema, sys.argv[1:]))
