"""Claims: what the evidence says about each declaration, per harness version x backend x capability.

A declaration is a claim to be tested. This module sets the latest record of every applicable
vector against what the declarations predict (`vectors.expected_outcome`) and names the verdict:

- `exact`: declared exact, and every vector ran in the composed layer, was blocked, and its
  positive control passed;
- `partial`: declared partial or unsupported, and every composed outcome is the predicted one;
- `refuted`: a composed run escaped where the declarations predicted a block (the vectors are named);
- `unverified`: a vector is missing, errored, skipped, stale (recorded by another suite revision or
  against another catalogue), or was "blocked" without a passing control (a block whose control failed
  proves nothing). A vector the catalogue cannot run on a harness (`skip_harnesses`) still counts: the
  capability is unverified there, never exact on what was left.

A capability no vector of the catalogue tests in a row's layer (none applies to the harness or privilege,
or none runs in the sandbox alone) still gets its row, `unverified` with 0 of 0 run: a table that left
it out would read as if nothing were claimed there, while the declarations do claim something.

An `inapplicable` record (the kernel lacked what the attack needs, shown by the attack's own system call
answered ENOSYS: `run_info.kernel_lacks`) is neither a block nor a gap: it counts as run, not as blocked, and
leaves the verdict to the other vectors; the claim then carries the condition (`Claim.inapplicable`,
`Claim.kernel_lacks`, a note "exact only where the kernel has no module loader"), which the gate checks against the
launching machine's kernel. A claim whose every vector was inapplicable observed nothing: `unverified`.

Refuted outranks unverified: one real escape is a finding however much else is missing. Apart from
the verdict, `drift` lists every observation in any layer that differs from the prediction, so a
declaration that is too weak shows up as well as one that is too strong.

Sandbox-layer records (no harness) also make rows of their own, with harness "-"; so do the `acp`-layer records of
the ACP endpoint's client-surface vectors (harness "-", mode `acp`), which no harness's row reads.

A row of the `tui` or `acp` mode reads its own records, and for a vector it has none of, one carried from the
same build's headless run (`Claim.carried`): when the sandbox alone blocked that vector's attack, with a passing
control, and the build's headless composed run blocked it too, with a passing control. The harness runs inside
that sandbox in every mode, and what it blocks no mode's permission handling can open (the same reason
`gate.carried_by_sandbox` lets a whole item stand on headless runs). A record of the mode's own always decides,
an escape included. An `acp` row of a harness whose ACP agent is an adapter carries nothing (`carries_into`).

Such a row is also one adapter build's (`Claim.adapter`, `RunInfo.adapter`): the adapter is the program that ran,
so, as with the harness binary, the newest record's adapter build makes the row and records of another are set
aside with a note; a row whose records name no adapter (written before records did) has every vector unverified,
"recorded before the adapter was recorded".
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, computed_field

from agentbox.core.capability import CapabilityReport, Declarations, Support, load_declarations
from agentbox.harnesses.agent_build import UNRECORDED, AgentBuild
from agentbox.prove.evidence import EvidenceRecord, Layer
from agentbox.prove.observed import Observed, by_layer
from agentbox.sandbox import DEFAULT_BACKEND
from agentbox.prove.vectors import Catalogue, Vector, condition_text, expected_outcome

__all__ = [
    "ClaimState",
    "Drift",
    "Claim",
    "ClaimsTable",
    "reconcile",
    "default_catalogue_dir",
    "NO_HARNESS",
    "KEY",
    "UNTESTED",
    "ENDPOINT",
]

ClaimState = Literal["exact", "partial", "refuted", "unverified"]
NO_HARNESS = "-"
ENDPOINT = "acp-endpoint"  # the declaration file of `agent-box acp`'s client-surface policy
# Harness-layer records involve no sandbox; when no composed record names a backend either, the harness rows are
# judged against the one backend Agent-Box ships (DEFAULT_BACKEND).
UNKNOWN = "?"  # a version no record stated
UNTESTED = "no vector of the catalogue tests it here"  # the note of a row with 0 of 0 run


def default_catalogue_dir() -> Path:
    return Path(__file__).parents[1] / "data" / "vectors"


class Drift(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    vector_id: str
    layer: Layer
    expected: Literal["blocked", "escaped"]
    observed: Literal["blocked", "escaped"]
    nodeid: str = ""  # the test that observed it


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    harness: str  # NO_HARNESS for a backend row
    version: str  # the harness version, or the backend version on a backend row
    binary_sha256: str | None = None
    # on an acp row of a harness an ACP adapter drives: the adapter build its records ran (the newest one's, as
    # with the binary; None: recorded before records named it, and then no record of the row proves anything)
    adapter: AgentBuild | None = None
    backend: str
    # the backend version its declaration was read at (its tested range applies): the sandbox-alone runs' on a
    # backend row, the newest composed run's on a harness row; None: no record said. The report reads it too.
    backend_version: str | None = None
    privilege: str = "?"  # root | user: who ran the suite ("?": recorded before that was recorded)
    # how the harness was driven (headless, tui, acp): its own permission handling differs by mode; "-" on a
    # backend row, which no harness takes part in
    mode: str = "headless"
    capability: str
    declared: Support
    claim: ClaimState
    blocked: int
    total: int  # the vectors that bear on the claim, run or not
    run: int = 0  # of those, observed (blocked or escaped) by current records: the table's "n of m run"
    # of `total`, the vectors observed as the declarations predict (blocked, or escaped through a declared
    # bypass): the table's "as declared n/m", which reads right for partial claims too, where `blocked` does not
    as_declared: int = 0
    escaped: tuple[str, ...] = ()  # unpredicted composed escapes: what refutes the declaration
    unverified: dict[str, str] = {}  # vector id -> missing | error | skipped | control failed | ...
    # vector id -> the kernel features the recording host lacked, which made the attack impossible there (an
    # `inapplicable` record): the claim's condition, which the gate checks against the launching kernel
    inapplicable: dict[str, tuple[str, ...]] = {}
    drift: tuple[Drift, ...] = ()
    # on a tui or acp row: the vectors judged on this build's headless composed record, because the sandbox alone
    # blocks them (the module's docstring); none on a headless row
    carried: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # Run layer -> vector id -> what its newest record there showed: the layers under the verdict, which
    # the upgrade canary compares version to version (a harness layer can weaken while the claim holds).
    layers: dict[Layer, dict[str, Observed]] = {}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def label(self) -> str:
        """The verdict as printed: drift is appended so it cannot be missed.

        The escapes that refute a claim are drift too, but saying so twice tells nothing, so
        `refuted+drift` means drift beyond the refuting escapes.
        """
        return f"{self.claim}+drift" if self._other_drift() else self.claim

    def _other_drift(self) -> list[Drift]:
        return [d for d in self.drift if not (d.layer == "composed" and d.vector_id in self.escaped)]

    @property
    def kernel_lacks(self) -> tuple[str, ...]:
        """The condition the claim holds under: kernel features the launching machine must lack too (empty: none)."""
        return tuple(sorted({f for features in self.inapplicable.values() for f in features}))

    def condition(self) -> str:
        """The claim's condition in words ("" when it has none): `exact only where the kernel has no module loader`."""
        if not self.inapplicable:
            return ""
        vids = ", ".join(sorted(self.inapplicable))
        if self.claim == "exact":
            return f"exact only {condition_text(self.kernel_lacks)} (inapplicable: {vids})"
        return f"inapplicable {condition_text(self.kernel_lacks)}: {vids}"

    def tested(self) -> str:
        """What the row tested, as the table names it: the harness version (and the ACP adapter build that drove
        it), or the backend version alone."""
        return f"{self.backend if self.harness == NO_HARNESS else self.harness} {self.version_text()}"

    def version_text(self) -> str:
        """The version, with the ACP adapter build that drove it: `0.171.0 via codex-acp 0.16.0`."""
        return self.version + (f" via {self.adapter.label}" if self.adapter is not None else "")

    def note_text(self) -> str:
        parts = []
        if self.escaped:
            parts.append("escaped: " + ", ".join(self.escaped))
        by_reason: dict[str, list[str]] = {}
        for vid, why in self.unverified.items():
            by_reason.setdefault(why, []).append(vid)
        parts += [f"{why}: {', '.join(vids)}" for why, vids in by_reason.items()]
        if self._other_drift():
            parts.append(
                "drift: "
                + ", ".join(
                    f"{d.vector_id}[{d.layer}] expected {d.expected} saw {d.observed}" for d in self._other_drift()
                )
            )
        if self.inapplicable:
            parts.append(self.condition())
        if self.carried:
            parts.append(f"{len(self.carried)} carried from headless runs (the sandbox alone blocks them)")
        return "; ".join([*parts, *self.notes])


class ClaimsTable(BaseModel):
    model_config = ConfigDict(extra="forbid")
    catalogue_digest: str
    claims: list[Claim]
    notes: list[str] = []

    def only(self, records: Iterable[EvidenceRecord]) -> "ClaimsTable":
        """The rows these records belong to: their harness versions and their sandbox-alone backend versions."""
        keys = {_row_key(r) for r in records}
        keep = [c for c in self.claims if (c.harness, c.backend if c.harness == NO_HARNESS else "", c.version) in keys]
        return self.model_copy(update={"claims": keep})

    def lines(self) -> list[str]:
        head = ("tested", "sandbox", "ran as", "mode", "capability", "declared", "claim", "run", "as declared", "notes")
        rows = [
            (
                c.tested(),
                "alone" if c.harness == NO_HARNESS else c.backend,
                c.privilege,
                c.mode,
                c.capability,
                c.declared,
                c.label,
                f"{c.run} of {c.total}",
                f"{c.as_declared}/{c.total}",
                c.note_text(),
            )
            for c in self.claims
        ]
        widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head) - 1)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
        return (
            [fmt.format(*r).rstrip() for r in (head, *rows)]
            + [f"note: {n}" for n in self.notes]
            + (list(KEY) if rows else [])
        )

    def markdown(self) -> list[str]:
        """The same rows as a Markdown table, for a documentation page or a pull-request comment. A backend row
        names no harness (`-`), its version is the backend's and its backend reads `bwrap (alone)`."""
        head = (
            "harness",
            "version",
            "backend",
            "ran as",
            "mode",
            "capability",
            "declared",
            "claim",
            "vectors blocked / run",
            "as declared",
            "notes",
        )
        rows = [
            (
                c.harness,
                c.version_text(),
                f"{c.backend} (alone)" if c.harness == NO_HARNESS else c.backend,
                c.privilege,
                c.mode,
                c.capability,
                c.declared,
                c.label,
                f"{c.blocked} / {c.run} of {c.total}",
                f"{c.as_declared}/{c.total}",
                c.note_text(),
            )
            for c in self.claims
        ]
        # Under the table, as in `lines()`: the store's notes, then the key, one list item each.
        below = [f"note: {n}" for n in self.notes] + (key_entries() if rows else [])
        return [_md_row(head), "|" + "---|" * len(head), *(_md_row(r) for r in rows)] + (
            [""] + [f"- {_md_cell(entry)}" for entry in below] if below else []
        )


def _md_cell(text: str) -> str:
    # A `|` would end the cell, a newline the row; `blocked / run` counts hold neither, notes might.
    return " ".join(text.replace("\\", "\\\\").replace("|", "\\|").split())


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(_md_cell(c) for c in cells) + " |"


def key_entries() -> list[str]:
    """KEY's entries with their continuation lines joined: one entry a line, as a Markdown list wants them."""
    entries: list[str] = []
    for line in KEY:
        if line.startswith("  ") and entries:
            entries[-1] += " " + line.strip()
        else:
            entries.append(line)
    return entries


# Printed under the table, so that it reads without the README.
KEY = (
    "run n of m: of the m vectors bearing on the claim (skipped ones included), n were observed",
    "as declared n/m: of those m, n behaved as declared (blocked, or escaped through a declared bypass)",
    "claim: exact = every vector blocked after a passing control; partial = as declared, bypasses included;",
    "  unverified = a vector missing, errored, skipped or uncontrolled (0 of 0: no vector tests it);",
    "  refuted = an undeclared escape; +drift = some layer behaved otherwise than declared",
    "inapplicable: the recording kernel lacked what the attack needs (its own call answered ENOSYS); run, not",
    '  blocked: the claim holds only where the kernel lacks it too ("exact only where ..."), as the gate checks',
)


# -- reconciliation ---------------------------------------------------------------------------------

DeclarationSource = Callable[[str], Declarations]


def declared_report(
    source: DeclarationSource,
    layer: str,
    capability: str,
    version: str | None,
    in_layer: str | None = None,
    mode: str | None = None,
) -> CapabilityReport | None:
    try:
        decl = source(layer)
    except FileNotFoundError:
        return None  # a layer without a declaration file declares nothing: every vector escapes it
    try:
        return decl.report(capability, version, in_layer, mode)
    except ValueError:
        return decl.report(capability, None, in_layer, mode)  # an unparsable version is an unknown one: never exact


def _declared(harness: CapabilityReport | None, sandbox: CapabilityReport | None) -> Support:
    """The coverage closure the compiler would compute: the strongest declaring layer wins."""
    from agentbox.compile.compiler import closure
    from agentbox.core.plan import LayerCoverage

    named: tuple[tuple[Literal["harness", "sandbox"], CapabilityReport | None], ...] = (
        ("harness", harness),
        ("sandbox", sandbox),
    )
    layers = [LayerCoverage(layer=name, support=r.support, mechanism="declared") for name, r in named if r is not None]
    return closure(tuple(layers))


def backend_of(r: EvidenceRecord) -> str:
    return r.run_info.sandbox_backend or DEFAULT_BACKEND


def _row_key(r: EvidenceRecord) -> tuple[str, str, str]:
    """Which rows a record feeds: a harness version's (any backend), or a sandbox-alone backend version's."""
    ri = r.run_info
    if ri.harness is None:
        return NO_HARNESS, backend_of(r), ri.sandbox_version or UNKNOWN
    return ri.harness, "", ri.version or UNKNOWN


def latest_by_run(records: Iterable[tuple[int, EvidenceRecord]]) -> dict[tuple[str, str], EvidenceRecord]:
    """The newest record per (vector, layer); ties in time go to the later line."""
    out: dict[tuple[str, str], EvidenceRecord] = {}
    for _, r in sorted(records, key=lambda ir: (ir[1].when, ir[0])):
        out[(r.vector_id, r.layer)] = r
    return out


class _Judged(NamedTuple):
    state: ClaimState
    blocked: int
    run: int
    as_declared: int
    escaped: list[str]
    unverified: dict[str, str]
    inapplicable: dict[str, tuple[str, ...]]


def _judge(
    vectors: list[Vector],
    layer: str,
    latest: dict[tuple[str, str], EvidenceRecord],
    predict: Callable[[Vector], str],
    declared: Support,
    fresh: Callable[[EvidenceRecord], str | None],
    skipped: dict[str, str],
) -> _Judged:
    """`fresh(record)`: None when the record is current, else why not; `skipped`: vector id -> why the
    catalogue cannot run it here (counted as unverified, never left out)."""
    blocked, run, as_declared = 0, 0, 0
    escaped: list[str] = []
    unverified: dict[str, str] = {}
    inapplicable: dict[str, tuple[str, ...]] = {}
    for v in vectors:
        r = latest.get((v.id, layer))
        if r is None:
            unverified[v.id] = "missing"
        elif (why := fresh(r)) is not None:
            unverified[v.id] = why
        elif r.outcome in ("error", "skipped"):
            unverified[v.id] = r.outcome
        elif r.outcome == "inapplicable" and not set(r.run_info.kernel_lacks) & set(v.kernel_needs):
            unverified[v.id] = "inapplicable, but the vector needs no kernel feature the record names"
        elif r.outcome == "inapplicable":
            run += 1  # it ran, and its own call showed the kernel lacks what it needs: neither blocked nor a gap
            inapplicable[v.id] = tuple(f for f in r.run_info.kernel_lacks if f in v.kernel_needs)
        elif r.outcome == "escaped":
            run += 1
            if predict(v) == "blocked":
                escaped.append(v.id)
            else:
                as_declared += 1
        elif r.control_outcome != "passed":
            unverified[v.id] = f"control {r.control_outcome}"
        else:
            run += 1
            blocked += 1
            if predict(v) == "blocked":
                as_declared += 1
    unverified.update({vid: "skipped" for vid in skipped})
    if escaped:
        state: ClaimState = "refuted"
    elif unverified or len(inapplicable) == len(vectors):  # no vector, or none observed a mechanism: nothing
        state = "unverified"  # verifies the declaration
    else:
        state = "exact" if declared == "exact" else "partial"
    return _Judged(state, blocked, run, as_declared, escaped, unverified, inapplicable)


def carries_into(harness: str, mode: str) -> bool:
    """Whether a `mode` row of `harness` may carry vectors from its headless run (`_carried`): the tui, where the
    harness binary runs in the headless run's sandbox; an acp row only where the ACP agent is that binary itself.
    An ACP adapter (agentbox/data/acp.yaml) is another program, with an install of its own bound into its sandbox,
    which the headless records never met."""
    return mode == "tui" or (mode == "acp" and not through_adapter(harness, mode))


def through_adapter(harness: str, mode: str) -> bool:
    """Whether a `mode` row of `harness` is of an ACP adapter's runs (agentbox/data/acp.yaml): then it is per adapter
    build too (`RunInfo.adapter`), since the adapter is the program that ran."""
    from agentbox.harnesses.acp_entries import acp_adapter

    return mode == "acp" and acp_adapter(harness) is not None


def _carried(
    vectors: list[Vector],
    latest: dict[tuple[str, str], EvidenceRecord],
    headless: dict[tuple[str, str], EvidenceRecord],
    fresh: Callable[[EvidenceRecord], str | None],
) -> dict[str, EvidenceRecord]:
    """Vector id -> the headless composed record that stands for it on a tui or acp row (`headless` is empty on a
    headless row): for each vector the row has no composed record of its own whose sandbox-alone record and
    headless composed record are both current blocks with passing controls, or `inapplicable` (the kernel lacks
    what the attack needs, as it does in every mode: the carried record keeps the condition). Anything less carries
    nothing and the vector stays missing."""

    def held(v: Vector, r: EvidenceRecord | None) -> bool:
        if r is None or fresh(r) is not None:
            return False
        if r.outcome == "inapplicable":
            return bool(set(r.run_info.kernel_lacks) & set(v.kernel_needs))
        return r.outcome == "blocked" and r.control_outcome == "passed"

    return {
        v.id: headless[(v.id, "composed")]
        for v in vectors
        if (v.id, "composed") not in latest
        and held(v, latest.get((v.id, "sandbox")))
        and held(v, headless.get((v.id, "composed")))
    }


def _uncarried(unverified: dict[str, str], vectors: list[Vector]) -> dict[str, str]:
    """A tui or acp row's missing vectors that the sandbox alone runs, said so: their headless and sandbox-alone
    records could carry them and did not (absent, stale, or not both blocks)."""
    alone = {v.id for v in vectors if "sandbox" in v.run_layers()}
    return {
        vid: "missing, not carried" if why == "missing" and vid in alone else why for vid, why in unverified.items()
    }


def _freshness(catalogue: Catalogue, suite_revision: str | None) -> Callable[[EvidenceRecord], str | None]:
    """Stale records never count toward a claim: another catalogue, or (when the caller knows the running
    suite's revision) another suite revision observed something else."""

    def fresh(r: EvidenceRecord) -> str | None:
        if r.run_info.catalogue_digest != catalogue.digest:
            return "stale (another catalogue)"
        if suite_revision is not None and r.run_info.suite_revision != suite_revision:
            return "stale (another suite revision)"
        return None

    return fresh


def _unrecorded(fresh: Callable[[EvidenceRecord], str | None]) -> Callable[[EvidenceRecord], str | None]:
    """`fresh`, for a row whose adapter no record names: the harness's records are never current there."""
    return lambda r: UNRECORDED if r.run_info.harness is not None else fresh(r)


def _drift(
    vectors: list[Vector],
    latest: dict[tuple[str, str], EvidenceRecord],
    predict: Callable[[Vector, Layer], Literal["blocked", "escaped"]],
) -> tuple[Drift, ...]:
    out = []
    for v in vectors:
        for layer in v.run_layers():
            r = latest.get((v.id, layer))
            # Only real observations count: an error, a skip or an uncontrolled block observed nothing.
            if r is None or r.outcome not in ("blocked", "escaped"):
                continue
            if r.outcome == "blocked" and r.control_outcome != "passed":
                continue
            expected = predict(v, layer)
            if r.outcome != expected:
                out.append(Drift(vector_id=v.id, layer=layer, expected=expected, observed=r.outcome, nodeid=r.nodeid))
    return tuple(out)


def version_key(version: str) -> tuple:
    """Orders versions numerically; a version that does not parse sorts after every one that does."""
    from agentbox.core.versions import Version

    try:
        return (0, Version.parse(version).parts)
    except ValueError:
        return (1, version)


def reconcile(
    records: Iterable[EvidenceRecord],
    catalogue: Catalogue,
    declarations: DeclarationSource = load_declarations,
    *,
    suite_revision: str | None = None,
) -> ClaimsTable:
    """The claims table. `suite_revision`: the running suite's (`agentbox.core.revision`); records of another one
    count as stale. None judges records of any suite revision (reading an archived store)."""
    known = {v.id for v in catalogue.vectors}
    indexed = list(enumerate(records))
    unknown = sum(1 for _, r in indexed if r.vector_id not in known)
    indexed = [(i, r) for i, r in indexed if r.vector_id in known]
    notes = [f"{unknown} record(s) name vectors that are not in this catalogue; ignored"] if unknown else []

    # Sandbox-alone records, per backend version: they make the backend rows and feed harness drift.
    # Who ran the suite splits every row: root's evidence proves nothing for a user's launch, and the reverse.
    sandbox: dict[tuple[str, str, str], list[tuple[int, EvidenceRecord]]] = {}
    # So does the mode the harness was driven in: a TUI's permission handling is not its headless run's.
    harnessed: dict[tuple[str, str, str, str], list[tuple[int, EvidenceRecord]]] = {}
    for i, r in indexed:
        ri = r.run_info
        if ri.harness is None:
            sandbox.setdefault((backend_of(r), ri.sandbox_version or UNKNOWN, ri.level), []).append((i, r))
        else:
            harnessed.setdefault((ri.harness, ri.version or UNKNOWN, ri.level, ri.mode), []).append((i, r))

    fresh = _freshness(catalogue, suite_revision)
    claims: list[Claim] = []
    for (backend, bversion, level), recs in sandbox.items():
        claims += _backend_rows(backend, bversion, level, recs, catalogue, declarations, fresh)
        claims += _backend_rows(backend, bversion, level, recs, catalogue, declarations, fresh, layer="acp")
    for (harness, version, level, mode), recs in harnessed.items():
        carries = mode != "headless" and carries_into(harness, mode)
        headless = harnessed.get((harness, version, level, "headless"), []) if carries else []
        claims += _harness_rows(
            harness, version, level, recs, sandbox, catalogue, declarations, notes, fresh, mode, headless
        )
    claims.sort(
        key=lambda c: (
            c.harness != NO_HARNESS,
            c.harness,
            version_key(c.version),
            c.backend,
            c.privilege,
            c.mode,
            c.capability,
        )
    )
    return ClaimsTable(catalogue_digest=catalogue.digest, claims=claims, notes=notes)


def _backend_rows(
    backend: str,
    bversion: str,
    level: str,
    recs: list[tuple[int, EvidenceRecord]],
    catalogue: Catalogue,
    declarations: DeclarationSource,
    fresh: Callable[[EvidenceRecord], str | None],
    layer: Layer = "sandbox",
) -> list[Claim]:
    """The rows no harness takes part in, for one backend version: the OS sandbox alone (`sandbox`), or the ACP
    endpoint alone (`acp`: its client-surface vectors, which the protocol test agent attempts over that sandbox,
    judged by what `ENDPOINT` declares, mode `acp`). No harness's row reads the endpoint's."""
    latest = latest_by_run(recs)
    out = []
    for cap in catalogue.capabilities:
        vectors = [v for v in catalogue.for_capability(cap, None, level) if layer in v.run_layers()]
        if not vectors and layer == "acp":
            continue  # the endpoint's rows are its client-surface vectors; the sandbox's show every capability
        if layer == "acp":
            report = declared_report(declarations, ENDPOINT, cap, None)
            declared: Support = report.support if report is not None else "unsupported"
        else:
            report = declared_report(declarations, backend, cap, None if bversion == UNKNOWN else bversion)
            declared = _declared(None, report)

        def predict(v: Vector, lay: Layer, report: CapabilityReport | None = report) -> Literal["blocked", "escaped"]:
            return (
                expected_outcome(v, lay, None, None, report) if lay == "acp" else expected_outcome(v, lay, None, report)
            )

        j = _judge(vectors, layer, latest, lambda v: predict(v, layer), declared, fresh, {})
        out.append(
            Claim(
                harness=NO_HARNESS,
                version=bversion,
                backend=backend,
                backend_version=None if bversion == UNKNOWN else bversion,
                privilege=level,
                mode="acp" if layer == "acp" else "-",
                capability=cap,
                declared=declared,
                claim=j.state,
                blocked=j.blocked,
                total=len(vectors),
                run=j.run,
                as_declared=j.as_declared,
                escaped=tuple(j.escaped),
                unverified=j.unverified,
                inapplicable=j.inapplicable,
                drift=_drift(vectors, latest, predict),
                notes=() if vectors else (UNTESTED,),
                layers=by_layer(vectors, latest, (layer,)),
            )
        )
    return out


def _harness_rows(
    harness: str,
    version: str,
    level: str,
    recs: list[tuple[int, EvidenceRecord]],
    sandbox: dict[tuple[str, str, str], list[tuple[int, EvidenceRecord]]],
    catalogue: Catalogue,
    declarations: DeclarationSource,
    table_notes: list[str],
    fresh: Callable[[EvidenceRecord], str | None],
    mode: str = "headless",
    headless: list[tuple[int, EvidenceRecord]] | None = None,
) -> list[Claim]:
    """`headless`: the same build's headless records, which carry a tui or acp row's vectors the sandbox alone
    blocks (`_carried`)."""
    # One build per version: the binary of the newest record. A rebuilt binary with the same version
    # string is a different harness as far as evidence goes, so older builds' records are set aside.
    newest = max(recs, key=lambda ir: (ir[1].when, ir[0]))[1]
    sha = newest.run_info.binary_sha256
    superseded = sum(1 for _, r in recs if r.run_info.binary_sha256 != sha)
    recs = [(i, r) for i, r in recs if r.run_info.binary_sha256 == sha]
    if superseded:
        table_notes.append(
            f"{harness} {version}{'' if mode == 'headless' else f' ({mode})'}: {superseded} "
            "record(s) of another binary build ignored"
        )
    # So with the ACP adapter that drove it: another adapter build is another program (codex-acp embeds its own
    # codex core), so one build per row, the newest record's; records that name none prove nothing
    adapter: AgentBuild | None = None
    if through_adapter(harness, mode):
        adapter = newest.run_info.adapter
        others = sum(1 for _, r in recs if r.run_info.adapter != adapter)
        recs = [(i, r) for i, r in recs if r.run_info.adapter == adapter]
        if others:
            table_notes.append(f"{harness} {version} ({mode}): {others} record(s) of another adapter build ignored")
        if adapter is None:
            fresh = _unrecorded(fresh)
    hversion = None if version == UNKNOWN else version

    # The harness layer runs without a sandbox, so its records join every backend row of this version.
    backends = sorted({backend_of(r) for _, r in recs if r.layer == "composed"} or {DEFAULT_BACKEND})
    out = []
    for backend in backends:
        mine = [(i, r) for i, r in recs if r.layer == "harness" or backend_of(r) == backend]
        # The sandbox alone for this backend, whatever its version: the newest run of each vector.
        mine += [ir for (b, _, lv), srecs in sandbox.items() if b == backend and lv == level for ir in srecs]
        latest = latest_by_run(mine)
        carriers = latest_by_run(
            (i, r)
            for i, r in headless or []
            if r.layer == "composed" and backend_of(r) == backend and r.run_info.binary_sha256 == sha
        )
        # the backend as the newest composed run of this version met it (its tested range applies)
        composed_runs = [r for _, r in mine if r.layer == "composed"]
        bversion = max(composed_runs, key=lambda r: r.when).run_info.sandbox_version if composed_runs else None
        for cap in catalogue.capabilities:
            applicable = catalogue.for_capability(cap, harness, level, hversion)
            composed = [v for v in applicable if "composed" in v.run_layers()]
            carried = _carried(composed, latest, carriers, fresh)
            judged = {**latest, **{(vid, "composed"): r for vid, r in carried.items()}}
            skipped = {
                v.id: skip
                for v in catalogue.vectors
                if v.capability == cap
                and (skip := v.skipped_on(harness, hversion)) is not None
                and "composed" in v.run_layers()
                and (not v.privileges or level in v.privileges)
            }
            hr = {
                lay: declared_report(declarations, harness, cap, hversion, lay, mode) for lay in ("harness", "composed")
            }
            sr = declared_report(declarations, backend, cap, bversion)
            declared = _declared(hr["composed"], sr)
            j = _judge(
                composed,
                "composed",
                judged,
                lambda v: expected_outcome(v, "composed", hr["composed"], sr, level=level),
                declared,
                fresh,
                skipped,
            )
            drift = _drift(
                applicable, latest, lambda v, layer: expected_outcome(v, layer, hr.get(layer), sr, level=level)
            )
            out.append(
                Claim(
                    harness=harness,
                    version=version,
                    binary_sha256=sha,
                    adapter=adapter,
                    backend=backend,
                    backend_version=bversion,
                    privilege=level,
                    mode=mode,
                    capability=cap,
                    declared=declared,
                    claim=j.state,
                    blocked=j.blocked,
                    total=len(composed) + len(skipped),
                    run=j.run,
                    as_declared=j.as_declared,
                    escaped=tuple(j.escaped),
                    unverified=_uncarried(j.unverified, composed) if mode != "headless" else j.unverified,
                    inapplicable=j.inapplicable,
                    drift=drift,
                    carried=tuple(sorted(carried)),
                    notes=() if composed or skipped else (UNTESTED,),
                    layers=by_layer(applicable, judged, ("harness", "composed")),
                )
            )
    return out
