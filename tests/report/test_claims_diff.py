"""diff_claims: how one harness's claims changed between two versions."""

from __future__ import annotations

import itertools

import pytest

from agentbox.prove.claims import Claim, Drift
from agentbox.prove.claims_diff import STATE_RANK, ClaimChange, claim_state, diff_claims

# The claim/declared pair behind each state, worst first.
STATES = {
    "refuted": ("refuted", "exact"),
    "unsupported": ("partial", "unsupported"),
    "unverified": ("unverified", "exact"),
    "partial": ("partial", "partial"),
    "exact": ("exact", "exact"),
}


def claim(state="exact", capability="workspace.read_only", backend="bwrap", version="1.0", drift=False) -> Claim:
    verdict, declared = STATES[state]
    drifts = (Drift(vector_id="v", layer="harness", expected="escaped", observed="blocked"),) if drift else ()
    return Claim(
        harness="codex",
        version=version,
        backend=backend,
        capability=capability,
        declared=declared,
        claim=verdict,
        blocked=0,
        total=1,
        drift=drifts,
    )


def test_states_rank_exact_partial_unverified_unsupported_refuted():
    assert sorted(STATE_RANK, key=STATE_RANK.get, reverse=True) == [
        "exact",
        "partial",
        "unverified",
        "unsupported",
        "refuted",
    ]
    assert list(STATES) == sorted(STATES, key=STATE_RANK.get)


def test_a_partial_verdict_on_an_unsupported_declaration_is_the_state_unsupported():
    assert claim_state(claim("unsupported")) == "unsupported"
    assert claim_state(claim("partial")) == "partial"


@pytest.mark.parametrize("old,new", itertools.permutations(STATES, 2))
def test_a_better_state_is_an_improvement_and_a_worse_one_a_regression(old, new):
    [change] = diff_claims([claim(old)], [claim(new, version="2.0")])
    expected = "improved" if STATE_RANK[new] > STATE_RANK[old] else "regressed"
    assert change == ClaimChange(capability="workspace.read_only", backend="bwrap", old=old, new=new, change=expected)


def test_a_capability_on_one_side_only_is_new_or_removed():
    changes = diff_claims([claim(capability="shell.deny")], [claim(capability="mcp.allowlist", version="2.0")])
    assert [(c.capability, c.old, c.new, c.change) for c in changes] == [
        ("mcp.allowlist", None, "exact", "new"),
        ("shell.deny", "exact", None, "removed"),
    ]


def test_drift_shows_in_the_labels_but_does_not_change_the_state():
    [change] = diff_claims([claim("exact")], [claim("exact", drift=True, version="2.0")])
    assert (change.old, change.new, change.change) == ("exact", "exact+drift", "unchanged")


def test_each_backend_is_compared_with_itself_and_the_result_is_sorted():
    old = [
        claim("exact", "shell.deny", "bwrap"),
        claim("exact", "mcp.allowlist", "srt"),
        claim("exact", "mcp.allowlist", "bwrap"),
    ]
    new = [
        claim("refuted", "mcp.allowlist", "bwrap", "2.0"),
        claim("exact", "mcp.allowlist", "srt", "2.0"),
        claim("exact", "shell.deny", "bwrap", "2.0"),
    ]
    assert [(c.capability, c.backend, c.change) for c in diff_claims(old, new)] == [
        ("mcp.allowlist", "bwrap", "regressed"),
        ("mcp.allowlist", "srt", "unchanged"),
        ("shell.deny", "bwrap", "unchanged"),
    ]


def test_two_claims_for_one_capability_and_backend_on_one_side_are_refused():
    with pytest.raises(ValueError, match=r"new: two claims for shell.deny on bwrap \(codex 2.0 and codex 3.0\)"):
        diff_claims([], [claim(capability="shell.deny", version="2.0"), claim(capability="shell.deny", version="3.0")])


def test_nothing_to_compare_is_no_change():
    assert diff_claims([], []) == []
