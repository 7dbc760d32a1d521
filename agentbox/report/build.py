"""Evidence + catalogue + declarations -> the report model.

Every verdict comes from `claims.reconcile`, the same function the launch gate and `evidence claims`
use; this module only arranges its claims into a matrix and attaches, per cell, the records that
decided it. Those are picked as reconcile picks them, with its own helpers (`latest_by_run`, `backend_of`,
`declared_report`) and its grouping: the claim's build of the harness version, harness-alone records joining
every backend, and the newest sandbox-alone run of the same backend. A test holds every drill-down
to its claim's counts, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from agentbox import __version__
from agentbox.core.capability import CapabilityReport, load_declarations
from agentbox.prove.claims import (
    NO_HARNESS,
    UNKNOWN,
    Claim,
    DeclarationSource,
    backend_of,
    declared_report,
    latest_by_run,
    reconcile,
)
from agentbox.prove.claims_diff import claim_state, diff_claims
from agentbox.prove.evidence import EvidenceRecord, Layer
from agentbox.prove.vectors import Catalogue, Vector, lacking_text
from agentbox.report.model import (
    Cell,
    Column,
    HostFacts,
    Observation,
    Recorded,
    Report,
    VectorInfo,
    VectorRow,
    VersionDiff,
    load_states,
)

__all__ = ["build_report"]

Latest = dict[tuple[str, str], EvidenceRecord]


def _column_key(c: Claim) -> str:
    return f"{c.harness} {c.version} {c.backend} {c.privilege} {c.mode}"


def _decisive(c: Claim) -> Layer:
    """The layer a column's verdicts come from: the composed run for a harness, else the row's own layer alone."""
    if c.harness != NO_HARNESS:
        return "composed"
    return "acp" if c.mode == "acp" else "sandbox"


def _evidence_by_column(records: list[EvidenceRecord], claims: list[Claim]) -> dict[str, Latest]:
    """Per column, the newest record of each (vector, layer) that reconcile set against its claims."""
    indexed = list(enumerate(records))
    # as reconcile groups them: by who ran the suite, and a harness's records by the mode it was driven in
    sandbox: dict[tuple[str, str], list] = defaultdict(list)  # (backend, privilege) -> sandbox-alone, any version
    harnessed: dict[tuple[str, str, str, str], list] = defaultdict(list)
    for i, r in indexed:
        ri = r.run_info
        if ri.harness is None:
            sandbox[(backend_of(r), ri.level)].append((i, r))
        else:
            harnessed[(ri.harness, ri.version or UNKNOWN, ri.level, ri.mode)].append((i, r))
    out: dict[str, Latest] = {}
    for c in claims:
        key = _column_key(c)
        if key in out:
            continue
        if c.harness == NO_HARNESS:
            mine = [
                (i, r)
                for i, r in sandbox[(c.backend, c.privilege)]
                if (r.run_info.sandbox_version or UNKNOWN) == c.version
            ]
        else:
            # The claim's build only, its harness-alone records, and the sandbox alone for its backend.
            mine = [
                (i, r)
                for i, r in harnessed[(c.harness, c.version, c.privilege, c.mode)]
                if r.run_info.binary_sha256 == c.binary_sha256
                and r.run_info.adapter == c.adapter
                and (r.layer == "harness" or backend_of(r) == c.backend)
            ]
            mine += sandbox[(c.backend, c.privilege)]
        out[key] = latest_by_run(mine)
        if c.mode != "headless":  # the headless composed records the column's claims carried (`Claim.carried`)
            carried = {vid for other in claims if _column_key(other) == key for vid in other.carried}
            headless = [
                (i, r)
                for i, r in harnessed[(c.harness, c.version, c.privilege, "headless")]
                if r.vector_id in carried
                and r.layer == "composed"
                and r.run_info.binary_sha256 == c.binary_sha256
                and backend_of(r) == c.backend
            ]
            out[key] = {**latest_by_run(headless), **out[key]}
    return out


def _verdict(claim: Claim, v: Vector, decisive: str, latest: Latest) -> str:
    if v.id in claim.escaped:
        return "escaped"
    if v.id in claim.unverified:
        return claim.unverified[v.id]
    if v.id in claim.inapplicable:
        return f"inapplicable ({lacking_text(claim.inapplicable[v.id])} on the recording kernel)"
    if decisive not in v.run_layers():
        return "not judged"
    if v.id in claim.carried:
        return "blocked (its headless run, carried: the sandbox alone blocks it)"
    record = latest[(v.id, decisive)]
    return "blocked" if record.outcome == "blocked" else "escaped as declared"


def _declared_layers(claim: Claim, declarations: DeclarationSource) -> dict[str, CapabilityReport]:
    layers = {}
    if claim.harness != NO_HARNESS:
        report = declared_report(
            declarations, claim.harness, claim.capability, None if claim.version == UNKNOWN else claim.version
        )
        if report is not None:
            layers["harness"] = report
    # at the version the claim was judged against: a backend's declaration outside its tested range is weaker
    report = declared_report(declarations, claim.backend, claim.capability, claim.backend_version)
    if report is not None:
        layers["sandbox"] = report
    return layers


def _cell(
    claim: Claim,
    catalogue: Catalogue,
    latest: Latest,
    declarations: DeclarationSource,
    observations: dict[str, EvidenceRecord],
) -> Cell:
    backend_column = claim.harness == NO_HARNESS
    decisive = _decisive(claim)
    vectors = (
        [v for v in catalogue.for_capability(claim.capability, None, claim.privilege) if decisive in v.run_layers()]
        if backend_column
        else catalogue.for_capability(claim.capability, claim.harness, claim.privilege, claim.version)
    )
    rows = []
    for v in vectors:
        used = {layer: latest[(v.id, layer)] for layer in v.run_layers() if (v.id, layer) in latest}
        if backend_column:
            used = {k: r for k, r in used.items() if k == decisive}
        observations.update({r.id: r for r in used.values()})
        rows.append(
            VectorRow(
                vector_id=v.id,
                verdict=_verdict(claim, v, decisive, latest),
                records={layer: r.id for layer, r in used.items()},
                drift=tuple(d for d in claim.drift if d.vector_id == v.id),
            )
        )
    layers = _declared_layers(claim, declarations)
    # The layers whose own declaration is as strong as the closure: the ones that enforce it.
    enforced = (
        ()
        if claim.declared == "unsupported"
        else tuple(name for name, r in layers.items() if r.support == claim.declared)
    )
    return Cell(
        column=_column_key(claim),
        capability=claim.capability,
        state=claim_state(claim),
        drift=claim.label.endswith("+drift"),
        label=claim.label,
        declared=claim.declared,
        layers={name: r.support for name, r in layers.items()},
        enforced_by=enforced,
        decisive_layer=decisive,
        blocked=claim.blocked,
        total=claim.total,
        run=claim.run,
        as_declared=claim.as_declared,
        note=claim.note_text(),
        vectors=tuple(rows),
    )


def _diffs(claims: list[Claim]) -> list[VersionDiff]:
    """Adjacent versions of each harness (and of each backend alone), in reconcile's version order."""
    by_version: dict[str, dict[str, list[Claim]]] = defaultdict(dict)
    for c in claims:  # reconcile sorts by harness, then numerically by version
        by_version[c.harness].setdefault(c.version, []).append(c)
    out = []
    for harness, versions in by_version.items():
        ordered = list(versions)
        for old, new in zip(ordered, ordered[1:]):
            out.append(
                VersionDiff(
                    harness=harness,
                    old_version=old,
                    new_version=new,
                    changes=tuple(diff_claims(versions[old], versions[new])),
                )
            )
    return out


def _observation(r: EvidenceRecord) -> Observation:
    return Observation(
        layer=r.layer,
        outcome=r.outcome,
        control_outcome=r.control_outcome,
        observation=r.observation,
        duration=r.duration,
        nodeid=r.nodeid,
        timestamp=r.timestamp,
        sandbox_version=r.run_info.sandbox_version,
    )


def _host(records: list[EvidenceRecord]) -> HostFacts:
    def distinct(field: str) -> tuple[str, ...]:
        return tuple(sorted({getattr(r.run_info, field) for r in records}))

    return HostFacts(
        kernels=distinct("kernel"),
        agentbox_versions=distinct("agentbox_version"),
        suite_revisions=distinct("suite_revision"),
        catalogue_digests=distinct("catalogue_digest"),
    )


def build_report(
    records: Iterable[EvidenceRecord],
    catalogue: Catalogue,
    declarations: DeclarationSource = load_declarations,
    notes: Iterable[str] = (),
) -> Report:
    records = list(records)
    table = reconcile(records, catalogue, declarations)
    latest = _evidence_by_column(records, table.claims)
    used: dict[str, EvidenceRecord] = {}
    cells = [_cell(c, catalogue, latest[_column_key(c)], declarations, used) for c in table.claims]
    columns = {
        _column_key(c): Column(
            key=_column_key(c),
            harness=c.harness,
            version=c.version,
            backend=c.backend,
            binary_sha256=c.binary_sha256,
            privilege=c.privilege,
            mode=c.mode,
            adapter=c.adapter,
        )
        for c in table.claims
    }
    shown = {row.vector_id for cell in cells for row in cell.vectors}
    stamps = sorted(records, key=lambda r: r.when)
    return Report(
        generator=__version__,
        catalogue_digest=catalogue.digest,
        recorded=Recorded(
            records=len(records),
            first=stamps[0].timestamp if stamps else None,
            last=stamps[-1].timestamp if stamps else None,
        ),
        host=_host(records),
        states=load_states(),
        capabilities=tuple(cap for cap in catalogue.capabilities if any(c.capability == cap for c in table.claims)),
        columns=tuple(columns.values()),
        cells=tuple(cells),
        vectors={
            v.id: VectorInfo(capability=v.capability, surface=v.surface, description=v.description)
            for v in catalogue.vectors
            if v.id in shown
        },
        observations={rid: _observation(r) for rid, r in sorted(used.items(), key=lambda kv: kv[1].when)},
        diffs=tuple(_diffs(table.claims)),
        notes=(*notes, *table.notes),
    )
