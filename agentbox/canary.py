"""The upgrade canary's verdict: what changed between harness versions, and whether that fails the run.

Input is the evidence store after the run, the builds under test (each re-verified or reused) and
the tests that failed. Output is a `CanaryReport`: per build, its claims and their change against
the newest recorded version before it; and the failures, each with a stable id that an
expected-failures baseline can list:

    codex@0.147.0:regressed:bwrap/shell.deny    a claim got worse than in the previous version
    codex@0.147.0:drift:net-curl/composed        an observation differs from the declarations
    codex@0.147.0:untested_range                 outside the adapter's tested range and not verified
    test:negative/test_vectors.py::test_x[...]   a test that failed for another reason

As in the Model Context Protocol conformance suite, a listed failure does not fail the run, an
unlisted one does, and a listed one that no longer happens fails the run as stale, so the baseline
shrinks as upstream fixes land instead of hiding them.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .claims import Claim, ClaimsTable, version_key
from .claims_diff import ClaimChange, diff_claims
from .errors import InputError
from .freshness import Freshness

__all__ = ["SCHEMA_VERSION", "Build", "Baseline", "load_baseline", "CanaryFailure", "CanaryTarget", "CanaryReport",
           "build_report", "json_schema"]

SCHEMA_VERSION = 1
_TARGET_ID = re.compile(r"^[a-z][a-z0-9-]*@[0-9][0-9A-Za-z.+-]*:")


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


class Baseline(BaseModel):
    """Expected failures: failure id -> why it is expected (the reason is required, and printed)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    expected_failures: dict[str, str] = Field(default_factory=dict)
    source: str = ""


def load_baseline(path: str | Path) -> Baseline:
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise InputError(f"cannot read the baseline: {exc.strerror}", file=str(p)) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", file=str(p)) from None
    if not isinstance(data, dict):
        raise InputError("a baseline is a mapping with `expected_failures: {failure id: reason}`", file=str(p))
    try:
        baseline = Baseline.model_validate({**data, "source": str(p)})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], file=str(p), field=".".join(str(x) for x in err["loc"])) from None
    for fid in baseline.expected_failures:
        if not (fid.startswith("test:") or _TARGET_ID.match(fid)):
            raise InputError("a failure id is `NAME@VERSION:KIND...` or `test:NODEID`", file=str(p),
                             field=f"expected_failures.{fid}")
    return baseline


class CanaryFailure(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    kind: Literal["regressed", "drift", "untested_range", "test_failed"]
    message: str
    nodeid: str | None = None  # the test whose failure is this same finding, if one ran
    expected: str | None = None  # the baseline's reason, when listed

    def ids(self) -> tuple[str, ...]:
        return (self.id, f"test:{self.nodeid}") if self.nodeid else (self.id,)


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
    changes: list[ClaimChange]


class CanaryReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = SCHEMA_VERSION
    generated: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    suite_revision: str
    catalogue_digest: str
    targets: list[CanaryTarget]
    sandbox: list[Freshness] = []
    failures: list[CanaryFailure]
    stale_baseline: dict[str, str] = {}  # listed, evaluated by this run, and no longer failing
    unevaluated_baseline: dict[str, str] = {}  # listed, but nothing in this run could confirm or refute it
    baseline: str | None = None

    @property
    def passed(self) -> bool:
        return not self.unexpected and not self.stale_baseline

    @property
    def unexpected(self) -> list[CanaryFailure]:
        return [f for f in self.failures if f.expected is None]

    def summary_lines(self) -> list[str]:
        out = []
        for t in self.targets:
            range_note = "" if t.in_tested_range else " (outside the adapter's tested range)"
            how = ("reused current evidence" if t.action == "reused"
                   else f"re-verified: {t.freshness_before.reason}")
            out.append(f"{t.harness} {t.version}{range_note}: {how}")
            if t.previous_version is None:
                out.append("  no earlier version recorded to compare with")
                continue
            changed = [c for c in t.changes if c.change != "unchanged"]
            out.append(f"  vs {t.previous_version}: "
                       + (", ".join(f"{n} {k}" for k, n in _counts(changed).items()) if changed else "no change"))
            out += [f"    {c.change:<9} {c.capability} [{c.backend}] {c.old or '-'} -> {c.new or '-'}" for c in changed]
        for s in self.sandbox:
            out.append(f"{s.subject} (sandbox alone): {'reused current evidence' if s.current else s.reason}")
        for f in self.failures:
            tag = f"expected ({f.expected})" if f.expected else "FAIL"
            out.append(f"{tag}: {f.id}: {f.message}")
        for fid, why in self.stale_baseline.items():
            out.append(f"FAIL stale baseline entry {fid} ({why}): it no longer fails; remove it")
        for fid in self.unevaluated_baseline:
            out.append(f"note: baseline entry {fid} was not evaluated by this run")
        out.append("canary: " + ("passed" if self.passed else
                                 f"FAILED ({len(self.unexpected)} unexpected failure(s), "
                                 f"{len(self.stale_baseline)} stale baseline entr(ies))"))
        return out


def _counts(changes: list[ClaimChange]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in changes:
        out[c.change] = out.get(c.change, 0) + 1
    return out


def build_report(table: ClaimsTable, builds: Iterable[Build], *, suite_revision: str,
                 sandbox: Iterable[Freshness] = (), failed_tests: Iterable[str] = (), ran_tests: Iterable[str] = (),
                 baseline: Baseline | None = None) -> CanaryReport:
    """The report for `builds`, judged on `table` (the claims of the whole store after the run)."""
    by_version: dict[tuple[str, str], list[Claim]] = {}
    for c in table.claims:
        by_version.setdefault((c.harness, c.version), []).append(c)

    targets, failures = [], []
    for b in builds:
        claims = by_version.get((b.harness, b.version), [])
        previous = _previous(b, by_version)
        changes = diff_claims(by_version[(b.harness, previous)], claims) if previous else []
        targets.append(CanaryTarget(harness=b.harness, version=b.version, binary_sha256=b.binary_sha256,
                                    in_tested_range=b.in_tested_range, action=b.action, freshness_before=b.freshness,
                                    previous_version=previous, claims=claims, changes=changes))
        failures += _failures(b, claims, changes, previous)

    drift_nodeids = {f.nodeid for f in failures if f.nodeid}
    failures += [CanaryFailure(id=f"test:{n}", kind="test_failed", message="the test failed")
                 for n in sorted(set(failed_tests)) if n not in drift_nodeids]

    listed = dict(baseline.expected_failures) if baseline else {}
    failures = [f.model_copy(update={"expected": next((listed[i] for i in f.ids() if i in listed), None)})
                for f in failures]
    happening = {i for f in failures for i in f.ids()}
    evaluated_targets = {b.key for b in builds}
    ran = set(ran_tests)
    stale, unevaluated = {}, {}
    for fid, why in listed.items():
        if fid in happening:
            continue
        evaluated = fid[5:] in ran if fid.startswith("test:") else fid.split(":", 1)[0] in evaluated_targets
        (stale if evaluated else unevaluated)[fid] = why
    return CanaryReport(suite_revision=suite_revision, catalogue_digest=table.catalogue_digest, targets=targets,
                        sandbox=list(sandbox), failures=failures, stale_baseline=stale,
                        unevaluated_baseline=unevaluated, baseline=baseline.source if baseline else None)


def _previous(build: Build, by_version: dict[tuple[str, str], list[Claim]]) -> str | None:
    mine = version_key(build.version)
    earlier = [v for (h, v) in by_version if h == build.harness and version_key(v) < mine]
    return max(earlier, key=version_key) if earlier else None


def _failures(b: Build, claims: list[Claim], changes: list[ClaimChange], previous: str | None) -> list[CanaryFailure]:
    out = []
    for c in changes:
        if c.change == "regressed":
            out.append(CanaryFailure(id=f"{b.key}:regressed:{c.backend}/{c.capability}", kind="regressed",
                                     message=f"{c.capability} [{c.backend}] was {c.old} in {previous}, now {c.new}"))
    seen = set()
    for claim in claims:
        for d in claim.drift:
            fid = f"{b.key}:drift:{d.vector_id}/{d.layer}"
            if fid in seen:
                continue
            seen.add(fid)
            out.append(CanaryFailure(id=fid, kind="drift", nodeid=d.nodeid or None,
                                     message=f"{d.vector_id} [{d.layer}] declared {d.expected}, observed {d.observed}"))
    unverified = [c.capability for c in claims if c.claim == "unverified"]
    if not b.in_tested_range and (unverified or not claims):
        what = f"unverified: {', '.join(unverified)}" if claims else "no claims recorded"
        out.append(CanaryFailure(id=f"{b.key}:untested_range", kind="untested_range",
                                 message=f"{b.version} is outside the adapter's tested range and its claims were "
                                         f"not re-verified ({what})"))
    return out


def json_schema() -> dict:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **CanaryReport.model_json_schema()}
