"""The upgrade canary's verdict: what changed between harness versions, and whether that fails the run.

Input is the evidence store after the run, the builds under test (each re-verified or reused), the
tests that failed and the records this run's tests handed over. Output is a `CanaryReport`: per build,
its claims, their change against the newest recorded version before it, and the change of every run
layer under them (a harness whose own enforcement weakened leaves the composed claim intact while the
sandbox holds, so the claims alone would say "unchanged"); and the failures, each with a display id
and the key a baseline entry (`canary_baseline`) must equal to expect it:

    codex@0.147.0:regressed:net-curl/harness     a layer that blocked this vector in the previous version lets it escape
    codex@0.147.0:regressed:bwrap/shell.deny     a claim got worse while no vector weakened (a declaration changed)
    codex@0.147.0:drift:net-curl/composed        an observation differs from the declarations
    codex@0.147.0:error:net-curl/composed        the newest run of a vector errored (or its control failed)
    codex@0.147.0:untested_range                 outside the adapter's tested range and not verified
    test:conformance/test_smokes.py::test_x[...] a test that failed without recording a vector run

A canary never passes on nothing: a build (or the sandbox alone) it set out to re-verify for which no test
recorded a vector run fails it (the suite was not collected, or everything was deselected), and so does a
canary with no harness build to look at, unless the caller said that is expected (`allow_empty`). Neither
can be baselined: lost proof is never expected.

As in the Model Context Protocol conformance suite, a listed failure does not fail the run, an
unlisted one does, and a listed one that no longer happens fails the run as stale, so the baseline
shrinks as upstream fixes land instead of hiding them.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from typing import Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentbox.prove.canary_baseline import Baseline, Expected, FailureKey
from agentbox.prove.claims import NO_HARNESS, Claim, ClaimsTable, backend_of, version_key
from agentbox.prove.claims_diff import ClaimChange, LayerChange, claim_state, diff_claims, diff_layers
from agentbox.prove.evidence import EvidenceRecord, Layer
from agentbox.prove.freshness import Freshness
from agentbox.prove.observed import observed

__all__ = ["SCHEMA_VERSION", "Build", "CanaryFailure", "CanaryTarget", "CanaryReport", "build_report", "json_schema"]

SCHEMA_VERSION = 2


class Build(BaseModel):
    """One harness build the canary looked at, and what it did about it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    harness: str
    version: str
    binary_sha256: str | None
    in_tested_range: bool
    freshness: Freshness  # before the run
    action: Literal["reverified", "reused"]

    @property
    def key(self) -> str:
        return f"{self.harness}@{self.version}"


class CanaryFailure(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str  # for people: several failures may share one (a drift that is also a regression)
    key: FailureKey  # what a baseline entry must equal to expect it
    kind: Literal["regressed", "drift", "error", "untested_range", "test_failed"]
    message: str
    nodeid: str | None = None  # the test whose failure is this same finding, if one ran
    expected: str | None = None  # the baseline's reason, when listed


class CanaryTarget(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    harness: str
    version: str
    binary_sha256: str | None
    in_tested_range: bool
    action: Literal["reverified", "reused"]
    freshness_before: Freshness
    previous_version: str | None
    claims: list[Claim]
    changes: list[ClaimChange]  # the claims (the composed verdicts)
    layer_changes: list[LayerChange] = []  # every run layer under them, vector by vector


class CanaryReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = SCHEMA_VERSION
    generated: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    suite_revision: str
    catalogue_digest: str
    targets: list[CanaryTarget]
    sandbox: list[Freshness] = []
    failures: list[CanaryFailure]
    stale_baseline: list[Expected] = []  # listed, evaluated by this run, and no longer happening
    unevaluated_baseline: list[Expected] = []  # listed, but nothing in this run could confirm or refute it
    baseline: str | None = None
    # what this run set out to re-verify ("codex@0.171.0", "bwrap 0.11.0 (sandbox alone)") and ran no vector for
    ran_nothing_for: list[str] = []
    # what this run re-verified and is still not current after it ("codex@0.171.0: 3 of 188 vector runs missing")
    still_stale: list[str] = []
    empty: bool = False  # no harness build was under test
    allow_empty: bool = False  # ... and the caller said that is expected

    @property
    def passed(self) -> bool:
        return (
            not self.unexpected
            and not self.stale_baseline
            and not self.ran_nothing_for
            and not self.still_stale
            and (self.allow_empty or not self.empty)
        )

    @property
    def unexpected(self) -> list[CanaryFailure]:
        return [f for f in self.failures if f.expected is None]

    def summary_lines(self) -> list[str]:
        out = []
        for t in self.targets:
            range_note = "" if t.in_tested_range else " (outside the adapter's tested range)"
            how = "reused current evidence" if t.action == "reused" else f"re-verified: {t.freshness_before.reason}"
            out.append(f"{t.harness} {t.version}{range_note}: {how}")
            if t.previous_version is None:
                out.append("  no earlier version recorded to compare with")
                continue
            changed = [c for c in t.changes if c.change != "unchanged"]
            layers = [c for c in t.layer_changes if c.change != "unchanged"]
            counts = _counts([c.change for c in changed + layers])
            out.append(
                f"  vs {t.previous_version}: "
                + (", ".join(f"{n} {k}" for k, n in counts.items()) if counts else "no change")
            )
            out += [f"    {c.change:<9} {c.capability} [{c.backend}] {c.old or '-'} -> {c.new or '-'}" for c in changed]
            out += [
                f"    {c.change:<9} {c.capability} [{c.backend}] {c.layer} layer: {c.old or '-'} -> {c.new or '-'}"
                + (" (" + ", ".join(f"{v.vector_id} {v.old} -> {v.new}" for v in c.vectors) + ")" if c.vectors else "")
                for c in layers
            ]
        for s in self.sandbox:
            out.append(f"{s.subject} (sandbox alone): {'reused current evidence' if s.current else s.reason}")
        for f in self.failures:
            tag = f"expected ({f.expected})" if f.expected else "FAIL"
            out.append(f"{tag}: {f.id}: {f.message}")
        for e in self.stale_baseline:
            out.append(f"FAIL stale baseline entry {e.key().text()} ({e.reason}): it no longer happens; remove it")
        for e in self.unevaluated_baseline:
            out.append(f"note: baseline entry {e.key().text()} was not evaluated by this run")
        for what in self.ran_nothing_for:
            out.append(
                f"FAIL {what}: to be re-verified, and no vector ran for it: nothing was verified (was the "
                f"suite collected? `pytest --agentbox-canary` collects the package's; a -k or -m that "
                f"deselects every vector proves nothing)"
            )
        for what in self.still_stale:
            out.append(
                f"FAIL {what}: re-verified in part only, so its evidence is still not current (a -k, -m, "
                f"--deselect or --agentbox-capability that leaves vectors out proves part of a build)"
            )
        if self.empty:
            out.append(
                ("note" if self.allow_empty else "FAIL") + ": no harness build to verify: none is installed "
                "or selected (agent-box harness install NAME@VERSION, or --agentbox-harness NAME@VERSION)"
                + ("" if self.allow_empty else "; pass --agentbox-canary-allow-empty if that is expected")
            )
        if self.passed:
            out.append("canary: passed")
        else:
            reasons = [
                f"{len(self.unexpected)} unexpected failure(s)",
                f"{len(self.stale_baseline)} stale baseline entr(ies)",
            ]
            if self.ran_nothing_for:
                reasons.append(f"{len(self.ran_nothing_for)} re-verification(s) that ran no vector")
            if self.still_stale:
                reasons.append(f"{len(self.still_stale)} re-verification(s) left incomplete")
            if self.empty and not self.allow_empty:
                reasons.append("nothing to verify")
            out.append(f"canary: FAILED ({', '.join(reasons)})")
        return out


def _counts(changes: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in changes:
        out[c] = out.get(c, 0) + 1
    return out


def build_report(
    table: ClaimsTable,
    builds: Iterable[Build],
    *,
    suite_revision: str,
    sandbox: Iterable[Freshness] = (),
    failed_tests: Iterable[str] = (),
    ran_tests: Iterable[str] = (),
    recorded: Iterable[EvidenceRecord] = (),
    baseline: Baseline | None = None,
    allow_empty: bool = False,
    sandbox_runs: bool = True,
    still_stale: Iterable[str] = (),
) -> CanaryReport:
    """The report for `builds`, judged on `table` (the claims of the whole store after the run).

    `recorded`: the records this run's tests handed over, each naming its test; they tell which vector
    run a failed test was, which runs this run evaluated, and whether a re-verification ran anything at
    all. `ran_tests`: the tests that passed. `sandbox_runs`: whether this run's mode runs the sandbox-alone
    vectors at all (only headless runs do: they drive no harness, so their records hold for every mode).
    `still_stale`: what was re-verified and is not current after the run (the caller judged freshness again)."""
    builds, recorded, sandbox = list(builds), list(recorded), list(sandbox)
    by_version: dict[tuple[str, str], list[Claim]] = {}
    for c in table.claims:
        by_version.setdefault((c.harness, c.version), []).append(c)

    targets, failures = [], []
    for b in builds:
        claims = by_version.get((b.harness, b.version), [])
        previous = _previous(b, by_version)
        before = by_version[(b.harness, previous)] if previous else []
        changes = diff_claims(before, claims) if previous else []
        layer_changes = diff_layers(before, claims) if previous else []
        targets.append(
            CanaryTarget(
                harness=b.harness,
                version=b.version,
                binary_sha256=b.binary_sha256,
                in_tested_range=b.in_tested_range,
                action=b.action,
                freshness_before=b.freshness,
                previous_version=previous,
                claims=claims,
                changes=changes,
                layer_changes=layer_changes,
            )
        )
        failures += _failures(b, claims, changes, layer_changes, previous)
    records = {r.nodeid: r for r in recorded if r.nodeid}  # a test's newest record
    failures = _with_tests(_once(failures), sorted(set(failed_tests)), records)

    reasons = baseline.reasons() if baseline else {}
    failures = [f.model_copy(update={"expected": reasons.get(f.key)}) for f in failures]
    happening = {f.key for f in failures}
    evaluated = _Evaluated(builds, by_version, records.values(), set(ran_tests) | set(failed_tests))
    stale: list[Expected] = []
    unevaluated: list[Expected] = []
    for entry in baseline.expected_failures if baseline else ():
        if entry.key() not in happening:
            (stale if evaluated(entry.key()) else unevaluated).append(entry)
    return CanaryReport(
        suite_revision=suite_revision,
        catalogue_digest=table.catalogue_digest,
        targets=targets,
        sandbox=sandbox,
        failures=failures,
        stale_baseline=stale,
        unevaluated_baseline=unevaluated,
        baseline=baseline.source if baseline else None,
        ran_nothing_for=(nothing := _ran_nothing(builds, sandbox if sandbox_runs else [], recorded)),
        # one that ran nothing at all is said so, once
        still_stale=[s for s in still_stale if not any(s.startswith(f"{n}: ") for n in nothing)],
        empty=not builds,
        allow_empty=allow_empty,
    )


def _ran_nothing(builds: list[Build], sandbox: list[Freshness], recorded: list[EvidenceRecord]) -> list[str]:
    """What was to be re-verified and has no vector run among this run's records."""
    ran = {(r.run_info.harness, r.run_info.version) for r in recorded}
    out = [b.key for b in builds if b.action == "reverified" and (b.harness, b.version) not in ran]
    if not any(r.run_info.harness is None for r in recorded):
        out += [f"{s.subject} (sandbox alone)" for s in sandbox if not s.current]
    return out


def _previous(build: Build, by_version: dict[tuple[str, str], list[Claim]]) -> str | None:
    mine = version_key(build.version)
    earlier = [v for (h, v) in by_version if h == build.harness and version_key(v) < mine]
    return max(earlier, key=version_key) if earlier else None


def _failures(
    b: Build, claims: list[Claim], changes: list[ClaimChange], layer_changes: list[LayerChange], previous: str | None
) -> list[CanaryFailure]:
    def vector_key(vector: str, layer: Layer, outcome: str) -> FailureKey:
        return FailureKey(harness=b.harness, version=b.version, vector=vector, layer=layer, outcome=outcome)

    out = []
    # A layer that let a vector through which it blocked in the previous version, whatever the claim says.
    for lc in layer_changes:
        out += [
            CanaryFailure(
                id=f"{b.key}:regressed:{v.vector_id}/{lc.layer}",
                kind="regressed",
                key=vector_key(v.vector_id, lc.layer, v.new),
                message=f"{v.vector_id} [{lc.layer} layer, {lc.capability}] was {v.old} in {previous}, now {v.new}",
            )
            for v in lc.vectors
            if v.weakened
        ]
    # A claim that got worse is named by the composed vectors that weakened it; one without any (a declaration
    # changed, a vector errored or stopped running) is a failure of its own.
    weakened = {
        (lc.capability, lc.backend) for lc in layer_changes if lc.layer == "composed" and lc.change == "regressed"
    }
    new_claims = {(c.capability, c.backend): c for c in claims}
    for c in changes:
        if c.change == "regressed" and (c.capability, c.backend) not in weakened:
            state = claim_state(new_claims[c.capability, c.backend])
            out.append(
                CanaryFailure(
                    id=f"{b.key}:regressed:{c.backend}/{c.capability}",
                    kind="regressed",
                    key=FailureKey(
                        harness=b.harness, version=b.version, backend=c.backend, capability=c.capability, outcome=state
                    ),
                    message=f"{c.capability} [{c.backend}] was {c.old} in {previous}, now {c.new}",
                )
            )
    harness_layers: tuple[Layer, ...] = ("harness", "composed")
    for claim in claims:
        for d in claim.drift:
            out.append(
                CanaryFailure(
                    id=f"{b.key}:drift:{d.vector_id}/{d.layer}",
                    kind="drift",
                    key=vector_key(d.vector_id, d.layer, d.observed),
                    nodeid=d.nodeid or None,
                    message=f"{d.vector_id} [{d.layer}] declared {d.expected}, observed {d.observed}",
                )
            )
        for layer in harness_layers:
            out += [
                CanaryFailure(
                    id=f"{b.key}:error:{vid}/{layer}",
                    kind="error",
                    key=vector_key(vid, layer, "error"),
                    message=f"{vid} [{layer}]: its newest run errored; nothing was observed",
                )
                for vid, seen in claim.layers.get(layer, {}).items()
                if seen == "error"
            ]
    unverified = [c.capability for c in claims if c.claim == "unverified"]
    if not b.in_tested_range and (unverified or not claims):
        what = f"unverified: {', '.join(unverified)}" if claims else "no claims recorded"
        out.append(
            CanaryFailure(
                id=f"{b.key}:untested_range",
                kind="untested_range",
                key=FailureKey(harness=b.harness, version=b.version, untested_range=True),
                message=f"{b.version} is outside the adapter's tested range and its claims were "
                f"not re-verified ({what})",
            )
        )
    return out


def _once(failures: list[CanaryFailure]) -> list[CanaryFailure]:
    """Each finding once: the harness layer and the sandbox join every backend's claims, so they repeat."""
    seen: dict[tuple[str, FailureKey], CanaryFailure] = {}
    for f in failures:
        seen.setdefault((f.id, f.key), f)
    return list(seen.values())


def _key_of(r: EvidenceRecord) -> FailureKey:
    ri = r.run_info
    if ri.harness is None:
        return FailureKey(
            backend=backend_of(r), version=ri.sandbox_version, vector=r.vector_id, layer=r.layer, outcome=observed(r)
        )
    return FailureKey(harness=ri.harness, version=ri.version, vector=r.vector_id, layer=r.layer, outcome=observed(r))


def _with_tests(
    failures: list[CanaryFailure], failed: list[str], records: dict[str, EvidenceRecord]
) -> list[CanaryFailure]:
    """The failed tests joined to the findings they are, and a failure of their own where they are none.

    A test that recorded a vector run is that run, keyed by what it observed: only an entry that names
    the vector, layer, build and outcome can expect it, never one that names the test."""
    named = {f.nodeid for f in failures if f.nodeid}
    out = list(failures)
    for nodeid in failed:
        if nodeid in named:
            continue
        record = records.get(nodeid)
        if record is None:
            out.append(
                CanaryFailure(
                    id=f"test:{nodeid}",
                    kind="test_failed",
                    key=FailureKey(test=nodeid),
                    message="the test failed (it recorded no vector run)",
                )
            )
            continue
        key = _key_of(record)
        same = [i for i, f in enumerate(out) if f.key == key]
        for i in same:
            out[i] = out[i].model_copy(update={"nodeid": out[i].nodeid or nodeid})
        if not same:
            out.append(
                CanaryFailure(
                    id=f"test:{nodeid}",
                    kind="test_failed",
                    key=key,
                    nodeid=nodeid,
                    message=f"the test failed: {record.vector_id} [{record.layer}] "
                    f"{observed(record)}: {record.observation}",
                )
            )
    return out


class _Evaluated:
    """Whether this run could have seen a baseline entry's failure: then one it did not see is stale."""

    def __init__(
        self,
        builds: list[Build],
        by_version: dict[tuple[str, str], list[Claim]],
        records: Iterable[EvidenceRecord],
        tests: set[str],
    ):
        self.builds = {(b.harness, b.version) for b in builds}
        self.tests = tests
        self.runs = {_run(k) for k in map(_key_of, records)}
        # The claims judged every vector run they hold, run now or reused; a build's drift also covers the
        # sandbox alone (the backend rows, harness "-").
        sandbox_alone = {
            vid
            for (harness, _), claims in by_version.items()
            if harness == NO_HARNESS
            for c in claims
            for vid in c.layers.get("sandbox", {})
        }
        for harness, version in self.builds:
            self.runs |= {
                (harness, None, version, vid, layer)
                for c in by_version.get((harness, version), [])
                for layer, seen in c.layers.items()
                for vid in seen
            }
            self.runs |= {(harness, None, version, vid, "sandbox") for vid in sandbox_alone}

    def __call__(self, key: FailureKey) -> bool:
        if key.test is not None:
            return key.test in self.tests
        if key.vector is not None:
            return _run(key) in self.runs
        return (key.harness, key.version) in self.builds


def _run(key: FailureKey) -> tuple:
    return key.harness, key.backend, key.version, key.vector, key.layer


def json_schema() -> dict:
    """The JSON Schema of the report as written (computed fields included); `python -m agentbox.prove.canary --schema`
    prints it."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **CanaryReport.model_json_schema(mode="serialization"),
    }


if __name__ == "__main__":
    from agentbox.core.schema_export import main

    sys.exit(main("agentbox.prove.canary", json_schema, sys.argv[1:]))
