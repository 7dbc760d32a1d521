"""Is the recorded evidence of a harness build still current, or must it be observed again?

Evidence is current for one build (harness, version, binary sha256) when the store holds, recorded by
this suite revision against this vector catalogue, a real observation (blocked or escaped) of every
vector x layer the catalogue runs for that harness. Anything less names the reason, in the order a
user would look for it: nothing recorded, nothing recorded here (`Here`), another binary, another suite,
another catalogue, gaps. The sandbox-alone rows (no harness) follow the same rule per backend version.

"Here" is what the gate keys evidence by besides the build: records made up for tests (synthetic), taken in
another mode (a tui canary is not current on headless runs), by another privilege level or on another kernel
prove nothing for this run, so they never make it current; nor does a block whose control did not pass. In acp
mode of a harness an ACP adapter drives, neither do records of another adapter build, nor records that name no
adapter (written before records did): the adapter is the program that ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Literal

from pydantic import BaseModel, ConfigDict

from agentbox.harnesses.agent_build import AgentBuild
from agentbox.prove.claims import latest_by_run
from agentbox.prove.evidence import EvidenceRecord
from agentbox.prove.vectors import Catalogue

__all__ = ["Freshness", "Here", "freshness", "sandbox_freshness", "expected_runs"]

OBSERVED = ("blocked", "escaped", "inapplicable")  # inapplicable: run, and the kernel answered ENOSYS


class Freshness(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    subject: str  # "codex 0.171.0" or "bwrap 0.8.0"
    state: Literal["current", "stale", "missing"]
    reason: str
    runs: int = 0  # vector x layer runs the catalogue asks for
    covered: int = 0  # of those, observed by this build, suite and catalogue

    @property
    def current(self) -> bool:
        return self.state == "current"


@dataclass(frozen=True)
class Here:
    """What a record must have been taken under to speak for this run (None: any)."""

    provenance: str | None = None  # "observed": what a suite run saw (never records made up for tests)
    mode: str | None = None  # harness rows only: the sandbox alone drives no harness, the same in every mode
    privilege: str | None = None  # "root" or "user"
    kernel: str | None = None  # the kernel release
    # the ACP adapter build this run drives (acp mode of a harness an adapter drives; None: none is)
    adapter: AgentBuild | None = None

    def why_not(self, r: EvidenceRecord, harness_row: bool) -> str | None:
        ri = r.run_info
        if self.provenance is not None and ri.provenance != self.provenance:
            return f"{ri.provenance or 'unlabelled'} records"
        if harness_row and self.mode is not None and ri.mode != self.mode:
            return f"{ri.mode} runs"
        if self.privilege is not None and ri.privilege is not None and ri.privilege.level != self.privilege:
            return f"runs as {ri.privilege.level}"
        if self.kernel is not None and ri.kernel != self.kernel:
            return f"kernel {ri.kernel}"
        if harness_row and self.adapter is not None and ri.mode == "acp":
            why = self.adapter.why_not(ri.adapter)
            return f"acp runs {why}" if why else None
        return None


def expected_runs(
    catalogue: Catalogue, harness: str | None, version: str | None = None, level: str | None = None
) -> set[tuple[str, str]]:
    """The (vector, layer) pairs a complete run by `level` (root, user; None: either) records: sandbox-alone runs,
    or one harness build's layers. A vector that threatens only root is not run by a user."""
    if harness is None:
        return {
            (v.id, "sandbox") for v in catalogue.vectors if "sandbox" in v.run_layers() and v.applies_to(None, level)
        }
    return {
        (v.id, layer)
        for v in catalogue.vectors
        if v.applies_to(harness, level, version)
        for layer in v.run_layers()
        if layer in ("harness", "composed")
    }


def freshness(
    records: Iterable[EvidenceRecord],
    catalogue: Catalogue,
    suite_revision: str,
    *,
    harness: str,
    version: str,
    binary_sha256: str | None,
    here: Here = Here(),
) -> Freshness:
    mine = [r for r in records if r.run_info.harness == harness and r.run_info.version == version]
    return _judge(
        f"{harness} {version}",
        _here(mine, here, True),
        catalogue,
        suite_revision,
        expected_runs(catalogue, harness, version, here.privilege),
        "binary",
        lambda r: r.run_info.binary_sha256,
        binary_sha256,
    )


def sandbox_freshness(
    records: Iterable[EvidenceRecord],
    catalogue: Catalogue,
    suite_revision: str,
    *,
    backend: str,
    version: str | None,
    here: Here = Here(),
) -> Freshness:
    mine = [r for r in records if r.run_info.harness is None and (r.run_info.sandbox_backend or backend) == backend]
    return _judge(
        f"{backend} {version or '?'}",
        _here(mine, here, False),
        catalogue,
        suite_revision,
        expected_runs(catalogue, None, level=here.privilege),
        f"{backend} version",
        lambda r: r.run_info.sandbox_version,
        version,
    )


def _here(mine: list[EvidenceRecord], here: Here, harness_row: bool) -> list[EvidenceRecord] | str:
    """The records that speak for this run, or, when there are records and none does, why not."""
    why = [here.why_not(r, harness_row) for r in mine]
    kept = [r for r, w in zip(mine, why) if w is None]
    if mine and not kept:
        return "recorded only as " + ", ".join(sorted(set(filter(None, why))))
    return kept


def _judge(
    subject: str,
    mine: list[EvidenceRecord] | str,
    catalogue: Catalogue,
    suite_revision: str,
    wanted: set[tuple[str, str]],
    build_word: str,
    build_of: Callable[[EvidenceRecord], str | None],
    build: str | None,
) -> Freshness:
    total = len(wanted)

    def stale(reason: str, covered: int = 0) -> Freshness:
        return Freshness(subject=subject, state="stale", reason=reason, runs=total, covered=covered)

    if isinstance(mine, str):
        return stale(f"{mine}: none observed here")

    if not mine:
        return Freshness(subject=subject, state="missing", reason="no evidence recorded", runs=total)
    same_build = [r for r in mine if build_of(r) == build]
    if not same_build:
        recorded = sorted({str(build_of(r))[:12] for r in mine})
        return stale(f"{build_word} changed: recorded {', '.join(recorded)}, installed {str(build)[:12]}")
    same_suite = [r for r in same_build if r.run_info.suite_revision == suite_revision]
    if not same_suite:
        newest = max(same_build, key=lambda r: r.when).run_info.suite_revision
        others = len({r.run_info.suite_revision for r in same_build} - {newest})
        more = f" (and {others} older)" if others else ""
        return stale(f"suite revision changed: recorded {newest}{more}, now {suite_revision}")
    same_catalogue = [r for r in same_suite if r.run_info.catalogue_digest == catalogue.digest]
    if not same_catalogue:
        return stale("vector catalogue changed since the evidence was recorded")
    # The newest record of each run decides, exactly as in the claims: an error after a block is a gap.
    latest = latest_by_run(enumerate(same_catalogue))
    covered = {
        k
        for k in wanted
        if k in latest
        and latest[k].outcome in OBSERVED
        and (latest[k].outcome != "blocked" or latest[k].control_outcome == "passed")
    }
    if len(covered) < total:
        gaps = sorted(f"{v}[{layer}]" for v, layer in wanted - covered)
        shown = ", ".join(gaps[:3]) + (f" and {len(gaps) - 3} more" if len(gaps) > 3 else "")
        return stale(f"{len(gaps)} of {total} vector runs missing or not observed: {shown}", len(covered))
    return Freshness(
        subject=subject, state="current", reason=f"all {total} vector runs current", runs=total, covered=total
    )
