"""diff_layers: every run layer under a claim, compared vector by vector between two versions."""

from __future__ import annotations

from agentbox.prove.claims import Claim
from agentbox.prove.claims_diff import diff_claims, diff_layers


def claim(version, **layers) -> Claim:
    return Claim(
        harness="codex",
        version=version,
        backend="bwrap",
        capability="shell.deny",
        declared="exact",
        claim="exact",
        blocked=2,
        total=2,
        layers=layers,
    )


def test_a_harness_layer_that_lets_a_vector_through_it_blocked_before_regresses_while_the_claim_holds():
    old = claim("1.0", harness={"a": "blocked", "b": "blocked"}, composed={"a": "blocked", "b": "blocked"})
    new = claim("2.0", harness={"a": "blocked", "b": "escaped"}, composed={"a": "blocked", "b": "blocked"})
    assert [c.change for c in diff_claims([old], [new])] == ["unchanged"]
    harness, composed = diff_layers([old], [new])
    assert (harness.layer, harness.change, harness.old, harness.new) == (
        "harness",
        "regressed",
        "2/2 blocked",
        "1/2 blocked, 1 escaped",
    )
    assert [(v.vector_id, v.old, v.new) for v in harness.vectors] == [("b", "blocked", "escaped")]
    assert (composed.layer, composed.change, composed.vectors) == ("composed", "unchanged", ())


def test_one_weakened_vector_makes_the_layer_regressed_however_many_improved():
    old = claim("1.0", harness={"a": "escaped", "b": "escaped", "c": "blocked"})
    new = claim("2.0", harness={"a": "blocked", "b": "blocked", "c": "escaped"})
    [change] = diff_layers([old], [new])
    assert change.change == "regressed" and len(change.vectors) == 3
    [change] = diff_layers([old], [claim("2.0", harness={"a": "blocked", "b": "escaped", "c": "blocked"})])
    assert change.change == "improved"


def test_only_real_observations_are_compared_so_lost_proof_is_left_to_the_claim():
    # An error, a skip or a vector never run before says nothing about whether the layer got weaker.
    old = claim("1.0", harness={"a": "error", "b": "missing", "c": "blocked"})
    new = claim("2.0", harness={"a": "escaped", "b": "escaped", "c": "error"})
    [change] = diff_layers([old], [new])
    assert (change.change, change.vectors) == ("unchanged", ())
    assert change.new == "0/3 blocked, 2 escaped, 1 not observed"


def test_a_layer_run_on_one_side_only_is_new_or_removed_and_layers_come_in_stack_order():
    old = claim("1.0", harness={"a": "blocked"})
    new = claim("2.0", composed={"a": "blocked"}, sandbox={"a": "blocked"})
    assert [(c.layer, c.change) for c in diff_layers([old], [new])] == [
        ("sandbox", "new"),
        ("harness", "removed"),
        ("composed", "new"),
    ]


def test_claims_recorded_without_layers_compare_as_nothing():
    assert diff_layers([claim("1.0")], [claim("2.0")]) == []
