"""The launch gate: may this compiled plan run on this exact harness build, given the evidence?

A pure function of its inputs: the plan's items, the claims reconciled from evidence recorded for
this harness version, build digest and sandbox backend, and whether the user accepts unverified
claims. It reads nothing and writes nothing, so the whole decision table is unit-tested. Only records
a suite run observed reach it (`evidence_index.lookup`): synthetic records never count as proof, and
a refusal names how many runs of the build were left out and why.

Rules, per item:
- advisory: never refuses; its state is recorded (and shown when it is not proven);
- required with a trivial value (shell allow, network unrestricted, home visible): nothing to prove;
- required whose plan coverage is not exact: refused, whatever the evidence (no evidence can make a
  missing mechanism exist, and `--accept-unverified` does not weaken a plan);
- required, covered exactly: the claim must be `exact`; `refuted` and `partial` refuse always;
  `unverified` (or no evidence at all) refuses unless `--accept-unverified ITEM` names the item (or its
  capability), which lets that one item through loudly; an unnamed item stays refused, so accepting one
  gap never waves through another that appears later. The claims reach the gate already judged for freshness (a record of another suite revision,
  catalogue or bubblewrap version counts as unverified, never as exact);
- evidence counts for the mode the launch drives the harness in (`LAUNCH_MODE`, its TUI): a harness's
  permission handling differs by mode, so a claim proven only in headless runs carries an item only where the
  OS sandbox alone blocked every vector bearing on it (no harness mode can change that); elsewhere the item is
  `unverified`, naming the mode its evidence was taken in;
- the sandbox-alone row is read too: where the OS sandbox alone escaped a vector its declaration says it
  blocks, the plan's coverage rests on a false declaration, so an `exact` composed claim does not carry
  the item (refused at the sandbox layer until the declaration is fixed to the truth);
- a claim resting on `inapplicable` vectors (the recording kernel lacked what the attack needs, `Claim.inapplicable`)
  holds only where the launching machine's kernel lacks the same features (`kernel_lacks`, checked by the caller as
  the suite checks it: `vectors.kernel_lacks_here`); on a kernel that has them each such vector is unverified,
  named with the feature, and the claim with it (`conditioned`);
- `agent-box acp` also reads the ACP endpoint's rows (`surface_claims`): where the catalogue has client-surface
  vectors for an item, the endpoint's claim must be exact too, or the item is not proven at the `acp` layer.

A refusal's words are `refusal`'s; what only they need (the profile's YAML, the harness versions on which
the store proves a refused item, `proven_elsewhere`) the launch finds when it refuses (`Decision.remedies`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, TypeVar, overload

from agentbox.core.capability import TRIVIAL
from agentbox.prove.claims import NO_HARNESS
from agentbox.prove.vectors import KERNEL_FEATURES, lacking_text
from agentbox.gate.refusal import Remedies, evidence_command, render

if TYPE_CHECKING:
    from agentbox.harnesses.agent_build import AgentBuild

__all__ = [
    "Target",
    "ItemVerdict",
    "Decision",
    "decide",
    "evidence_command",
    "accepts",
    "unknown_accepted",
    "carried_by_sandbox",
    "proven_elsewhere",
    "conditioned",
    "LAUNCH_MODE",
]

Verdict = Literal["proven", "trivial", "accepted", "refused", "advisory"]
LAUNCH_MODE = "tui"  # `agent-box launch` starts the harness's interactive TUI


@dataclass(frozen=True)
class Target:
    """The exact build the evidence must be about."""

    harness: str
    version: str | None
    binary_sha256: str | None
    backend: str
    evidence_dir: str
    # the ACP adapter build an `agent-box acp` start drives, whose evidence alone counts; None for any other start
    adapter: AgentBuild | None = None

    @property
    def label(self) -> str:
        sha = (self.binary_sha256 or "unknown")[:12]
        via = f" via {self.adapter}" if self.adapter is not None else ""
        return f"{self.harness} {self.version or '(unknown version)'} (sha256 {sha}){via} on {self.backend}"


@dataclass(frozen=True)
class ItemVerdict:
    item: str
    capability: str
    requirement: str
    coverage: str  # the plan's effective support
    claim: str  # exact | partial | refuted | unverified | trivial
    verdict: Verdict
    layer: str  # where it fails or holds: "plan" (the compiled layers) or "composed" (the evidence)
    vectors: tuple[str, ...] = ()  # the missing, failing or escaped vectors
    reason: str = ""
    sandboxed: bool = True  # whether the plan has a sandbox layer for it (a refusal offers to add one)


@dataclass(frozen=True)
class Decision:
    target: Target
    items: tuple[ItemVerdict, ...]
    errors: tuple[str, ...] = ()  # plan errors not tied to an item (a compile that cannot work)
    accept_unverified: tuple[str, ...] = ()  # the items (or capabilities) the user named
    # runs of this build the evidence index left out, per provenance: never proof, named in a refusal
    unproven: tuple[tuple[str, int], ...] = ()
    mode: str = LAUNCH_MODE  # the mode whose evidence the launch reads
    remedies: Remedies = Remedies()  # what a refusal offers (`refusal`), found by the launch when it refuses

    @property
    def allowed(self) -> bool:
        return not self.errors and not self.refused

    @property
    def refused(self) -> tuple[ItemVerdict, ...]:
        return tuple(v for v in self.items if v.verdict == "refused")

    @property
    def accepted(self) -> tuple[ItemVerdict, ...]:
        return tuple(v for v in self.items if v.verdict == "accepted")

    def claims(self) -> dict[str, dict[str, str]]:
        """What the Run records: per item, its capability, requirement, claim and verdict."""
        return {
            v.item: {
                "capability": v.capability,
                "requirement": v.requirement,
                "coverage": v.coverage,
                "claim": v.claim,
                "verdict": v.verdict,
            }
            for v in self.items
        }

    def message(self, lead: str = "") -> str:
        """The refusal: each failing item, its claim, layer and vectors, then what the user can do (`refusal`).
        `lead`: what the caller prints before it, so that the first line is wrapped short enough too."""
        return render(self, lead)

    def notice(self) -> str:
        """The loud line printed on every launch that --accept-unverified let through."""
        names = "; ".join(f"{v.item} ({v.capability}: {v.reason})" for v in self.accepted)
        return (
            f"WARNING: --accept-unverified {' '.join(self.accept_unverified)}: {len(self.accepted)} required item(s) are NOT proven for "
            f"{self.target.label} and run unverified: {names}"
        )


def _layers(item: Any) -> str:
    return item.gap or f"coverage {item.effective}"


def accepts(item: Any, names: Iterable[str]) -> bool:
    """Whether `--accept-unverified` named this item, by its profile name or its capability."""
    return item.item in names or item.capability in names


def unknown_accepted(items: Iterable[Any], names: Iterable[str]) -> list[str]:
    """Names given to `--accept-unverified` that are no item (nor capability) of the plan: a typo must not
    look like consent."""
    items = list(items)
    return [n for n in names if not any(accepts(i, (n,)) for i in items)]


def carried_by_sandbox(vectors: Iterable[str], sandbox: Any | None) -> bool:
    """Whether the OS sandbox alone blocked, with passing controls, every vector bearing on an item: then no
    harness mode can change the item's truth, and evidence of any mode speaks for it."""
    vectors = set(vectors)
    return (
        sandbox is not None
        and sandbox.claim == "exact"
        and bool(vectors)
        and vectors <= set(sandbox.layers.get("sandbox", {}))
    )


_C = TypeVar("_C")


@overload
def conditioned(claim: None, kernel_lacks: Iterable[str]) -> None: ...
@overload
def conditioned(claim: _C, kernel_lacks: Iterable[str]) -> _C: ...  # a claim in, a claim out


def conditioned(claim: Any | None, kernel_lacks: Iterable[str]) -> Any | None:
    """The claim as it stands on a machine whose kernel lacks `kernel_lacks`: an inapplicable vector whose features
    this kernel has (the attack exists here, and nothing observed it) becomes unverified, naming vector and feature,
    and an exact or partial claim with it; one whose features this kernel lacks too keeps the claim's condition."""
    if claim is None or not claim.inapplicable:
        return claim
    here = set(kernel_lacks)
    unmet = {vid: features for vid, features in claim.inapplicable.items() if not set(features) <= here}
    if not unmet:
        return claim
    unverified = {**claim.unverified}
    for vid, features in unmet.items():
        has = " and ".join(f"a {KERNEL_FEATURES[f]}" for f in sorted(features) if f not in here)
        unverified[vid] = (
            f"inapplicable where recorded (the kernel had {lacking_text(features)}), but this "
            f"machine's kernel has {has}, so the attack exists here and is unverified"
        )
    state = "unverified" if claim.claim in ("exact", "partial") else claim.claim
    return claim.model_copy(
        update={
            "claim": state,
            "unverified": unverified,
            "inapplicable": {v: f for v, f in claim.inapplicable.items() if v not in unmet},
        }
    )


def _in_mode(
    claim: Any | None, other: Any | None, vectors: tuple[str, ...], sandbox: Any | None, mode: str
) -> tuple[Any | None, str]:
    """The claim that speaks for a launch in `mode`, and why another mode's claim does not, if it does not."""
    if other is None or (claim is not None and claim.claim != "unverified"):
        return claim, ""  # the launched mode's own evidence decides whenever it says anything firm
    if carried_by_sandbox(vectors, sandbox):
        return other, ""
    if claim is None and other.claim == "exact":
        # the refusal's evidence command records the launch's mode (`refusal`): it is not repeated per item
        drives = {"tui": "launch drives the tui", "acp": "agent-box acp drives it as an ACP agent"}.get(mode, mode)
        return None, (
            f"proven in {other.mode} runs only: {drives}, whose permission handling is "
            f"another code path, and the sandbox alone does not block every vector of it"
        )
    return claim, ""


def _surface(
    state: str,
    layer: str,
    failing: tuple[str, ...],
    reason: str,
    surface: Any | None,
    surface_vectors: tuple[str, ...],
) -> tuple[str, str, tuple[str, ...], str]:
    """The item's standing once the ACP endpoint's client-surface evidence is read: it can only lower an exact one."""
    if state != "exact" or not surface_vectors:
        return state, layer, failing, reason
    if surface is None:
        return (
            "unverified",
            "acp",
            surface_vectors,
            "the ACP endpoint's client-surface vectors have no evidence for this backend",
        )
    if surface.claim == "exact":
        return state, layer, failing, reason
    return (
        surface.claim,
        "acp",
        (*surface.escaped, *surface.unverified),
        f"the ACP endpoint's client-surface evidence is {surface.claim} ({surface.note_text()})",
    )


def _judge(
    item: Any,
    claim: Any | None,
    vectors: tuple[str, ...],
    accept: bool,
    sandbox: Any | None = None,
    other: Any | None = None,
    mode: str = LAUNCH_MODE,
    surface: Any | None = None,
    surface_vectors: tuple[str, ...] = (),
) -> ItemVerdict:
    base = dict(
        item=item.item,
        capability=item.capability,
        requirement=item.requirement,
        coverage=item.effective,
        sandboxed=any(layer.layer == "sandbox" for layer in item.layers),
    )
    required = item.requirement == "required"
    if item.capability in TRIVIAL:
        return ItemVerdict(
            **base, claim="trivial", verdict="trivial", layer="plan", reason="the intent asks for no restriction"
        )
    if item.effective != "exact":
        state = claim.claim if claim is not None else "unverified"
        return ItemVerdict(
            **base,
            claim=state,
            verdict="refused" if required else "advisory",
            layer="plan",
            reason=f"the plan covers it {item.effective}: {_layers(item)}",
        )
    claim, other_mode = _in_mode(claim, other, vectors, sandbox, mode)
    untested = "the vector catalogue has no vector for this capability, so nothing can verify it"
    if claim is None:
        reason = other_mode or ("no evidence recorded for this build" if vectors else untested)
        state, failing = "unverified", vectors
    else:
        state = claim.claim
        failing = (*claim.escaped, *claim.unverified)
        reason = {
            "exact": f"blocked {claim.blocked}/{claim.total} vectors with passing controls"
            + (f"; {claim.condition()}, as this machine's kernel is" if claim.inapplicable else ""),
            "refuted": f"escaped where the declarations predict a block ({claim.note_text()})",
            "partial": f"the evidence shows partial enforcement (declared {claim.declared})",
            "unverified": f"not every vector was observed ({claim.note_text()})" if claim.total else untested,
        }[state]
        if state == "exact":
            failing = ()
    layer = "composed"
    if state == "exact" and sandbox is not None and sandbox.claim == "refuted":
        assert claim is not None  # "exact" comes only from a claim
        state, layer, failing = "refuted", "sandbox", sandbox.escaped
        reason = (
            f"the sandbox alone escaped where its declaration predicts a block ({sandbox.note_text()}); "
            f"the composed evidence (blocked {claim.blocked}/{claim.total}) rests on that declaration"
        )
    state, layer, failing, reason = _surface(state, layer, tuple(failing), reason, surface, surface_vectors)
    if not required:
        verdict: Verdict = "advisory"
    elif state == "exact":
        verdict = "proven"
    elif state == "unverified" and accept:
        verdict = "accepted"
    else:
        verdict = "refused"
    return ItemVerdict(**base, claim=state, verdict=verdict, layer=layer, vectors=tuple(failing), reason=reason)


def decide(
    items: Iterable[Any],
    claims: Mapping[str, Any],
    target: Target,
    *,
    accept_unverified: Iterable[str] = (),
    vectors: Mapping[str, tuple[str, ...]] | None = None,
    errors: Iterable[str] = (),
    sandbox_claims: Mapping[str, Any] | None = None,
    unproven: Mapping[str, int] | None = None,
    other_modes: Mapping[str, Any] | None = None,
    mode: str = LAUNCH_MODE,
    surface_claims: Mapping[str, Any] | None = None,
    surface_vectors: Mapping[str, tuple[str, ...]] | None = None,
    kernel_lacks: Iterable[str] = (),
) -> Decision:
    """`items`: the plan's ItemPlans; `claims`: capability -> Claim for exactly `target`, in the `mode` the launch
    drives the harness in; `other_modes`: capability -> its claim from another mode (headless), which counts only
    where the sandbox alone carries the item; `vectors`:
    capability -> the catalogue's composed vectors for this harness, skipped ones included (named when no
    evidence exists); `sandbox_claims`: capability -> the sandbox-alone Claim of `target.backend`;
    `unproven`: provenance -> runs of this build left out of `claims` (`evidence_index.unproven`);
    `surface_claims`/`surface_vectors`: capability -> the ACP endpoint's claim and its `acp` vectors (`agent-box acp`);
    `kernel_lacks`: the kernel features the launching machine lacks (`vectors.kernel_lacks_here`), which a claim
    resting on inapplicable vectors needs lacking (`conditioned`; none given: every feature is taken as present)."""
    lacks = tuple(kernel_lacks)

    def held(table: Mapping[str, Any] | None) -> dict[str, Any]:
        return {cap: conditioned(c, lacks) for cap, c in (table or {}).items()}

    claims, sandbox_claims, other_modes, surface_claims = (
        held(claims),
        held(sandbox_claims),
        held(other_modes),
        held(surface_claims),
    )
    vectors, surface_vectors = vectors or {}, surface_vectors or {}
    named = tuple(sorted(set(accept_unverified)))
    verdicts = tuple(
        _judge(
            i,
            claims.get(i.capability),
            tuple(vectors.get(i.capability, ())),
            accepts(i, named),
            sandbox_claims.get(i.capability),
            other_modes.get(i.capability),
            mode,
            surface_claims.get(i.capability),
            tuple(surface_vectors.get(i.capability, ())),
        )
        for i in items
    )
    return Decision(
        target=target,
        items=verdicts,
        errors=tuple(errors),
        accept_unverified=named,
        unproven=tuple(sorted((unproven or {}).items())),
        mode=mode,
    )


def proven_elsewhere(
    claims: Iterable[Any], target: Target, mode: str = LAUNCH_MODE, kernel_lacks: Iterable[str] = ()
) -> dict[str, tuple[str, ...]]:
    """Per capability, the harness versions ("name@version") other than the target's whose claims would carry a
    required item of it through this gate (`_in_mode`: the launch mode's claim, or another mode's where the
    sandbox alone carries it), on the target's backend: what a refusal offers to pick instead.
    `claims`: a reconciled table of every build's evidence at the launch's privilege (`evidence_index.observed`)."""
    sandbox: dict[str, Any] = {}
    builds: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    lacks = tuple(kernel_lacks)
    for c in claims:
        c = conditioned(c, lacks)  # as `decide` holds them: a condition this kernel fails carries nothing
        if c.backend != target.backend:
            continue
        if c.harness == NO_HARNESS:
            sandbox[c.capability] = c
        elif (c.harness, c.version) != (target.harness, target.version):
            builds.setdefault((c.harness, c.version), {}).setdefault(c.capability, {})[c.mode] = c
    out: dict[str, list[str]] = {}
    for (harness, version), capabilities in builds.items():
        for capability, modes in capabilities.items():
            claim, other = modes.get(mode), None if mode == "headless" else modes.get("headless")
            bearing = {
                vid for c in (claim, other) if c is not None for vid in (*c.layers.get("composed", {}), *c.unverified)
            }
            alone = sandbox.get(capability)
            chosen, _ = _in_mode(claim, other, tuple(sorted(bearing)), alone, mode)
            # as `_judge`: a sandbox row that escaped what it declares to block carries no harness's claim
            if chosen is not None and chosen.claim == "exact" and (alone is None or alone.claim != "refuted"):
                out.setdefault(capability, []).append(f"{harness}@{version}")
    return {capability: tuple(builds) for capability, builds in sorted(out.items())}
