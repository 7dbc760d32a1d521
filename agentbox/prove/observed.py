"""What the newest run of one vector showed in one layer, in one word: a claim's view layer by layer.

A claim judges the composed layer against the declarations. That verdict can hold while a layer under
it weakens: when a harness's own enforcement stops blocking a vector between versions, the sandbox
still blocks it and the composed claim does not move. So every claim also keeps, per run layer, this
word for each of its vectors (`Claim.layers`), and the upgrade canary compares them version to version
(`claims_diff.diff_layers`).

The word is what was observed, fresh or not: whether a record is current enough to count toward a
verdict is the claim's business (`Claim.unverified`), not this view's.
"""

from __future__ import annotations

from typing import Iterable, Literal, Mapping

from agentbox.prove.evidence import EvidenceRecord, Layer
from agentbox.prove.vectors import Vector

__all__ = ["Observed", "observed", "by_layer"]

# blocked: blocked, and the positive control passed; unproven: "blocked" without a passing control,
# which proves nothing; missing: no record; inapplicable: the kernel lacks what the attack needs (neither blocked
# nor escaped). The others are the record's own outcome.
Observed = Literal["blocked", "escaped", "error", "skipped", "inapplicable", "unproven", "missing"]


def observed(record: EvidenceRecord | None) -> Observed:
    if record is None:
        return "missing"
    if record.outcome == "blocked" and record.control_outcome != "passed":
        return "unproven"
    return record.outcome


def by_layer(
    vectors: Iterable[Vector], latest: Mapping[tuple[str, str], EvidenceRecord], layers: Iterable[Layer]
) -> dict[Layer, dict[str, Observed]]:
    """Per layer of `layers` that some vector runs in: vector id -> what its newest record there showed."""
    vectors = list(vectors)
    out: dict[Layer, dict[str, Observed]] = {}
    for layer in layers:
        mine = {v.id: observed(latest.get((v.id, layer))) for v in vectors if layer in v.run_layers()}
        if mine:
            out[layer] = mine
    return out
