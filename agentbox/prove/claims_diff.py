"""How the claims of one harness changed between two versions (or two runs): improved, regressed, ...

The report's version-diff view and the upgrade canary both ask this question, so both call
`diff_claims`; the ranking below is the one place that says which state is better.

A claim's *state* is its verdict, with `partial` split in two: a capability declared `unsupported`
whose evidence agrees is `unsupported` (nothing enforces it, and the record says so honestly),
anything else that came out `partial` stays `partial`. States rank

    exact > partial > unverified > unsupported > refuted

Unverified ranks above unsupported because an unproven declaration may still hold, while an
unsupported one is known not to; refuted ranks last because it is the only state in which a
declaration is false, which is what a user relying on it cannot afford.

Drift (observations that differ from the declarations, the `+drift` of a label) is not a change of
state: `old` and `new` carry the labels, so it shows, but the change stays `unchanged`. Drift is a
finding about a declaration, not about enforcement, and callers that gate on it (the canary) read
`Claim.drift` itself, vector by vector; counting it here as well would report one finding twice.

A claim is the composed verdict, and it can hold while a layer under it weakens: a harness whose own
enforcement stopped blocking a vector leaves the claim `exact` as long as the sandbox blocks it.
`diff_layers` therefore compares every run layer vector by vector (`Claim.layers`). Only real
observations are compared, blocked against escaped: a vector that errored, was skipped, was inapplicable (the
kernel lacked what it needs) or never ran on one side says nothing about whether that layer got weaker (the
claim's own state covers lost proof).
A layer in which any vector went from blocked to escaped is `regressed`, whatever else improved.
"""

from __future__ import annotations

from typing import Iterable, Literal

from pydantic import BaseModel, ConfigDict

from agentbox.prove.claims import Claim
from agentbox.prove.evidence import Layer
from agentbox.prove.observed import Observed

__all__ = [
    "State",
    "STATE_RANK",
    "Change",
    "ClaimChange",
    "claim_state",
    "diff_claims",
    "VectorChange",
    "LayerChange",
    "diff_layers",
]

State = Literal["exact", "partial", "unsupported", "unverified", "refuted"]
STATE_RANK: dict[str, int] = {"exact": 4, "partial": 3, "unverified": 2, "unsupported": 1, "refuted": 0}
Change = Literal["improved", "regressed", "new", "removed", "unchanged"]


def claim_state(claim: Claim) -> State:
    """The state a report shows for a claim (its verdict, with honest `unsupported` told apart)."""
    if claim.claim == "partial" and claim.declared == "unsupported":
        return "unsupported"
    return claim.claim


class ClaimChange(BaseModel):
    """One capability on one backend, before and after. `old`/`new` are labels (`exact+drift`), or
    None where that side has no claim."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    capability: str
    backend: str
    old: str | None
    new: str | None
    change: Change


def _label(claim: Claim) -> str:
    return claim_state(claim) + ("+drift" if claim.label.endswith("+drift") else "")


def _change(old: Claim | None, new: Claim | None) -> Change:
    if old is None:
        return "new"
    if new is None:
        return "removed"
    before, after = STATE_RANK[claim_state(old)], STATE_RANK[claim_state(new)]
    if before == after:
        return "unchanged"
    return "improved" if after > before else "regressed"


def _keyed(claims: Iterable[Claim], side: str) -> dict[tuple[str, str], Claim]:
    out: dict[tuple[str, str], Claim] = {}
    for c in claims:
        key = (c.capability, c.backend)
        if key in out:
            # Two claims for one key mean the caller mixed harnesses or versions: the diff would be a guess.
            raise ValueError(
                f"{side}: two claims for {c.capability} on {c.backend} "
                f"({out[key].harness} {out[key].version} and {c.harness} {c.version}); "
                "pass the claims of one harness version per side"
            )
        out[key] = c
    return out


def diff_claims(old: Iterable[Claim], new: Iterable[Claim]) -> list[ClaimChange]:
    """Per (capability, backend): how the claim changed from `old` to `new`, sorted by capability.

    Each side holds the claims of one harness version (or one backend version); unchanged entries
    are included, so the result also says what was compared.
    """
    before, after = _keyed(old, "old"), _keyed(new, "new")
    return [
        ClaimChange(
            capability=cap,
            backend=backend,
            old=_label(before[cap, backend]) if (cap, backend) in before else None,
            new=_label(after[cap, backend]) if (cap, backend) in after else None,
            change=_change(before.get((cap, backend)), after.get((cap, backend))),
        )
        for cap, backend in sorted(before.keys() | after.keys())
    ]


# -- layer by layer ----------------------------------------------------------------------------------

LAYERS: tuple[Layer, ...] = ("sandbox", "harness", "composed")


class VectorChange(BaseModel):
    """One vector whose observation in a layer flipped between blocked and escaped."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    vector_id: str
    old: Observed
    new: Observed

    @property
    def weakened(self) -> bool:
        return (self.old, self.new) == ("blocked", "escaped")


class LayerChange(BaseModel):
    """One run layer of one capability on one backend, before and after. `old`/`new` tally the layer's
    vectors (`2/3 blocked, 1 escaped`), or are None where that side has no run of the layer; `vectors`
    are the ones that flipped."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    capability: str
    backend: str
    layer: Layer
    old: str | None
    new: str | None
    change: Change
    vectors: tuple[VectorChange, ...] = ()


def _tally(seen: dict[str, Observed]) -> str:
    blocked = sum(1 for o in seen.values() if o == "blocked")
    escaped = sum(1 for o in seen.values() if o == "escaped")
    inapplicable = sum(1 for o in seen.values() if o == "inapplicable")
    rest = len(seen) - blocked - escaped - inapplicable
    return (
        f"{blocked}/{len(seen)} blocked"
        + (f", {escaped} escaped" if escaped else "")
        + (f", {inapplicable} inapplicable" if inapplicable else "")
        + (f", {rest} not observed" if rest else "")
    )


def _layer_change(
    capability: str, backend: str, layer: Layer, old: dict[str, Observed] | None, new: dict[str, Observed] | None
) -> LayerChange:
    was, now = old or {}, new or {}
    flipped = tuple(
        VectorChange(vector_id=vid, old=was[vid], new=now[vid])
        for vid in sorted(was.keys() & now.keys())
        if {was[vid], now[vid]} == {"blocked", "escaped"}
    )
    if old is None:
        change: Change = "new"
    elif new is None:
        change = "removed"
    elif any(v.weakened for v in flipped):
        change = "regressed"
    else:
        change = "improved" if flipped else "unchanged"
    return LayerChange(
        capability=capability,
        backend=backend,
        layer=layer,
        old=None if old is None else _tally(old),
        new=None if new is None else _tally(new),
        change=change,
        vectors=flipped,
    )


def diff_layers(old: Iterable[Claim], new: Iterable[Claim]) -> list[LayerChange]:
    """Per (capability, backend, run layer): how the layer's observations changed from `old` to `new`,
    sorted by capability, backend, then sandbox, harness, composed. Sides as for `diff_claims`."""
    before, after = _keyed(old, "old"), _keyed(new, "new")
    out = []
    for cap, backend in sorted(before.keys() | after.keys()):
        b = before[cap, backend].layers if (cap, backend) in before else {}
        a = after[cap, backend].layers if (cap, backend) in after else {}
        out += [
            _layer_change(cap, backend, layer, b.get(layer), a.get(layer))
            for layer in LAYERS
            if layer in b or layer in a
        ]
    return out
