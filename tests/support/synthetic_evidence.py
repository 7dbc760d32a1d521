"""Synthetic evidence for one exact harness build: what the launch gate's tests and benchmark feed it.

`proving_records` makes the records the negative suite would write if every applicable vector of the
given capabilities were blocked in the composed layer with a passing control; `filler_lines` makes
many records of other builds, the bulk a long-lived store accumulates. Every record says it is
`synthetic` (`RunInfo.provenance`), so none of them ever counts as proof at the launch gate: a test or
benchmark that needs an allowed launch relabels them itself, visibly, as a stand-in for a suite run.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from typing import Iterable, Iterator

from agentbox.prove.evidence import EvidenceRecord, Privilege, RunInfo, host_facts
from agentbox.sandbox.bwrap import backend_version
from agentbox.prove.vectors import Catalogue

__all__ = ["proving_records", "filler_lines", "posing_as_observed"]


def _info(catalogue: Catalogue, harness: str, version: str, sha: str, backend: str, mode: str = "tui") -> RunInfo:
    """As this host would record it: its kernel, its bubblewrap, its user, in the mode `launch` drives the harness
    in (what a launch from here matches)."""
    facts = host_facts()
    return RunInfo(
        harness=harness,
        version=version,
        binary_sha256=sha,
        dialect=None,
        sandbox_backend=backend,
        sandbox_version=backend_version() or "0.8.0",
        kernel=facts["kernel"],
        agentbox_version=facts["agentbox_version"],
        suite_revision="synthetic",
        catalogue_digest=catalogue.digest,
        provenance="synthetic",
        mode=mode,
        privilege=Privilege(uid=os.geteuid(), user_namespace=True, capabilities="0000000000000000"),
    )


def proving_records(
    catalogue: Catalogue,
    harness: str,
    version: str,
    sha: str,
    capabilities: Iterable[str],
    outcome: str = "blocked",
    control: str = "passed",
    backend: str = "bwrap",
    mode: str = "tui",
) -> list[EvidenceRecord]:
    """One composed record per applicable vector of each capability, taken in `mode`."""
    info = _info(catalogue, harness, version, sha, backend, mode)
    out = []
    for cap in sorted(set(capabilities)):
        for v in catalogue.for_capability(cap, harness, None, version):
            if "composed" in v.run_layers():
                out.append(
                    EvidenceRecord(
                        run_info=info,
                        vector_id=v.id,
                        capability=cap,
                        layer="composed",
                        outcome=outcome,
                        observation="synthetic",
                        control_outcome=control,
                    )
                )
    return out


def filler_lines(catalogue: Catalogue, harness: str, count: int, start: datetime | None = None) -> Iterator[str]:
    """`count` JSON lines of other builds of `harness` (other versions and binaries), oldest first."""
    start = start or datetime(2025, 1, 1, tzinfo=timezone.utc)
    template = _info(catalogue, harness, "0.0.0", "0" * 64, "bwrap").model_dump(mode="json")
    vectors = [v for v in catalogue.vectors if "composed" in v.run_layers()]
    for n in range(count):
        v = vectors[n % len(vectors)]
        info = {**template, "version": f"0.{n % 97}.{n % 13}", "binary_sha256": f"{n % 211:064x}"}
        record = {
            "schema_version": 1,
            "id": f"{n:032x}",
            "run_info": info,
            "vector_id": v.id,
            "capability": v.capability,
            "layer": "composed",
            "outcome": "blocked",
            "observation": "filler",
            "control_outcome": "passed",
            "duration": 0.0,
            "nodeid": "",
            "timestamp": (start + timedelta(milliseconds=n)).isoformat(timespec="milliseconds"),
        }
        yield json.dumps(record)


def posing_as_observed(records: Iterable[EvidenceRecord]) -> list[EvidenceRecord]:
    """Synthetic records relabelled as observed by a run of this very suite, so the gate weighs them. Made
    up all the same: only a test or benchmark of the gate's own logic may do this, in its own temporary store."""
    from agentbox.core.revision import suite_revision

    update = {"provenance": "observed", "suite_revision": suite_revision()}
    return [r.model_copy(update={"run_info": r.run_info.model_copy(update=update)}) for r in records]
