"""Many evidence stores into one: `agent-box evidence merge DIR... -o DIR`, and the reader the report uses.

CI jobs each write their own store (one per matrix cell, several `*.jsonl` files each); the report
and the launch gate want one. A record's id is its identity: the same id twice with the same content
is one record seen twice (a store copied into another, a re-run merge) and is kept once; the same id
with different content means a store was edited or two writers collided, and nothing can tell which
is true, so the merge stops and names both files. Everything is read and checked before anything is
written, and the output replaces `DIR/evidence.jsonl` atomically, so a refused merge writes nothing.
A store is meant to be merged once its writers are done: a record appended to the output store
while it is being replaced would land in the replaced file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel, ConfigDict

from agentbox.prove.evidence import EvidenceError, EvidenceRecord, read_records, store_files

__all__ = ["Collected", "MergeSummary", "collect", "merge"]


class MergeSummary(BaseModel):
    """What `evidence merge --json` prints."""

    model_config = ConfigDict(extra="forbid")
    inputs: list[str]
    files: int
    read: int
    written: int
    duplicates: int
    output: str | None = None


@dataclass(frozen=True)
class Collected:
    records: list[EvidenceRecord]  # unique by id, oldest first (ties keep reading order)
    inputs: list[str]
    files: int
    read: int
    duplicates: int


def _files(source: Path) -> list[Path]:
    if not source.exists():
        raise EvidenceError("no such evidence store", file=str(source))
    return store_files(source)


def collect(sources: Iterable[str | os.PathLike]) -> Collected:
    """Every record of every store, each id once, ordered by timestamp; EvidenceError on any doubt."""
    seen: dict[str, tuple[EvidenceRecord, Path]] = {}
    inputs = [str(s) for s in sources]
    files = read = duplicates = 0
    for source in inputs:
        for path in _files(Path(source)):
            files += 1
            try:
                for record in read_records(path):
                    read += 1
                    first = seen.get(record.id)
                    if first is None:
                        seen[record.id] = (record, path)
                    elif first[0] == record:
                        duplicates += 1
                    else:
                        raise EvidenceError(
                            f"record {record.id} differs from the record with the same id in "
                            f"{first[1]}; one of the two stores was altered",
                            file=str(path),
                        )
            except OSError as exc:
                raise EvidenceError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    # Dicts keep insertion order, so equal timestamps stay in reading order.
    records = sorted((r for r, _ in seen.values()), key=lambda r: r.when)
    return Collected(records=records, inputs=inputs, files=files, read=read, duplicates=duplicates)


def _check_output(output: Path, target: Path) -> None:
    if output.exists() and not output.is_dir():
        raise EvidenceError("the output must be a folder (the merged store)", file=str(output))
    # Any other *.jsonl under the output would be read with the merged file: every record twice.
    others = [p for p in (sorted(output.rglob("*.jsonl")) if output.is_dir() else []) if p != target]
    if others:
        raise EvidenceError(
            f"already holds other evidence files ({', '.join(str(p) for p in others[:3])}), "
            "which would be read again beside the merged one; merge into an empty folder",
            file=str(output),
        )


def _covered(target: Path, inputs: list[str]) -> bool:
    resolved = target.resolve()
    return any(Path(i).resolve() in (resolved, *resolved.parents) for i in inputs)


def merge(sources: Iterable[str | os.PathLike], output: str | os.PathLike) -> MergeSummary:
    """Merge `sources` into `output/evidence.jsonl`; on any error raise before writing anything.

    Records already in the output store are kept (it is merged as one more input), so a merge into
    the same folder can be repeated as new stores arrive and never loses what it gathered before.
    """
    from agentbox.core.atomic import write_files

    out = Path(output)
    target = out / "evidence.jsonl"
    _check_output(out, target)
    inputs = [str(s) for s in sources]
    if target.exists() and not _covered(target, inputs):
        inputs.append(str(target))
    collected = collect(inputs)
    if not collected.records:
        raise EvidenceError("no evidence records to merge", file=", ".join(collected.inputs))
    write_files({target: "".join(r.model_dump_json() + "\n" for r in collected.records)}, make_dirs=True)
    return MergeSummary(
        inputs=collected.inputs,
        files=collected.files,
        read=collected.read,
        written=len(collected.records),
        duplicates=collected.duplicates,
        output=str(target),
    )
