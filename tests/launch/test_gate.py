"""The launch gate's decision table: requirement x plan coverage x evidence x --accept-unverified.

Each row is data; its test id reads as the sentence it proves.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agentbox.prove.claims import Claim
from agentbox.gate import Target, decide, evidence_command, proven_elsewhere, unknown_accepted
from launch_helpers import one_line

TARGET = Target("codex", "0.171.0", "ab" * 32, "bwrap", "/store")
CAP = "workspace.read_only"
VECTORS = {CAP: ("ws-ro-tee", "ws-ro-cp")}


def item(requirement="required", coverage="exact", capability=CAP, name="workspace", layers=("harness", "sandbox")):
    gap = None if coverage == "exact" else f"harness layer {coverage}; sandbox layer {coverage}"
    return SimpleNamespace(
        item=name,
        capability=capability,
        requirement=requirement,
        effective=coverage,
        gap=gap,
        layers=tuple(SimpleNamespace(layer=layer) for layer in layers),
    )


def said(decision) -> str:
    return one_line(decision.message())


def claim(state, capability=CAP):
    """A claim in `state` for the target build; `missing` means no record at all (no claim row)."""
    if state == "missing":
        return None
    escaped = ("ws-ro-tee",) if state == "refuted" else ()
    unverified = {"ws-ro-cp": "missing"} if state == "unverified" else {}
    blocked = {"exact": 2, "partial": 2, "refuted": 1, "unverified": 1}[state]
    return Claim(
        harness="codex",
        version="0.171.0",
        binary_sha256="ab" * 32,
        backend="bwrap",
        capability=capability,
        declared="partial" if state == "partial" else "exact",
        claim=state,
        blocked=blocked,
        total=2,
        escaped=escaped,
        unverified=unverified,
    )


# (requirement, plan coverage, evidence, accept_unverified) -> (item verdict, launch allowed)
TABLE = [
    # required, covered exactly: the evidence decides
    ("required", "exact", "exact", False, "proven", True),
    ("required", "exact", "exact", True, "proven", True),
    ("required", "exact", "unverified", False, "refused", False),
    ("required", "exact", "unverified", True, "accepted", True),
    ("required", "exact", "missing", False, "refused", False),
    ("required", "exact", "missing", True, "accepted", True),
    ("required", "exact", "refuted", False, "refused", False),
    ("required", "exact", "refuted", True, "refused", False),
    ("required", "exact", "partial", False, "refused", False),
    ("required", "exact", "partial", True, "refused", False),
    # required, not covered exactly: refused whatever the evidence or the flag
    *[
        ("required", cov, ev, acc, "refused", False)
        for cov in ("partial", "unsupported")
        for ev in ("exact", "unverified", "refuted", "missing")
        for acc in (False, True)
    ],
    # advisory: never refuses, whatever it is
    *[
        ("advisory", cov, ev, acc, "advisory", True)
        for cov in ("exact", "partial", "unsupported")
        for ev in ("exact", "unverified", "refuted", "partial", "missing")
        for acc in (False, True)
    ],
]


def sentence(row) -> str:
    requirement, coverage, evidence, accept, verdict, allowed = row
    ev = "no evidence" if evidence == "missing" else f"{evidence} evidence"
    flag = " with --accept-unverified naming it" if accept else ""
    outcome = {
        "proven": "launches",
        "accepted": "launches loudly",
        "refused": "is refused",
        "advisory": "never refuses",
    }[verdict]
    return f"a {requirement} item covered {coverage} with {ev}{flag} {outcome}"


@pytest.mark.parametrize("row", TABLE, ids=[sentence(r) for r in TABLE])
def test_decision_table(row):
    requirement, coverage, evidence, accept, verdict, allowed = row
    got = decide(
        [item(requirement, coverage)],
        {CAP: claim(evidence)} if claim(evidence) else {},
        TARGET,
        accept_unverified=("workspace",) if accept else (),
        vectors=VECTORS,
    )
    assert got.items[0].verdict == verdict
    assert got.allowed is allowed
    assert bool(got.accepted) is (verdict == "accepted")


@pytest.mark.parametrize("capability", ["shell.allow", "command_network.unrestricted", "host_home.visible"])
def test_a_required_item_that_asks_for_no_restriction_needs_no_evidence(capability):
    got = decide([item(capability=capability)], {}, TARGET)
    assert got.allowed and got.items[0].verdict == "trivial"


def test_the_refusal_names_the_item_its_claim_the_layer_the_vectors_and_the_command():
    got = decide(
        [item(), item(name="host_home", capability="host_home.hidden", coverage="partial")],
        {CAP: claim("refuted")},
        TARGET,
        vectors=VECTORS,
    )
    message = said(got)
    assert "workspace (workspace.read_only): claim refuted, composed layer" in message
    assert "ws-ro-tee" in message
    assert "host_home (host_home.hidden)" in message and "plan layer" in message
    assert evidence_command(TARGET) in message
    assert evidence_command(TARGET) == (
        "pytest --agentbox-suite -m negative --agentbox-harness codex@0.171.0 --agentbox-evidence-dir /store"
    )
    assert "--accept-unverified" not in message  # nothing here is merely unverified


def test_an_item_with_no_evidence_names_every_vector_that_would_prove_it():
    message = said(decide([item()], {}, TARGET, vectors=VECTORS))
    assert "no evidence recorded for this build" in message and "ws-ro-tee, ws-ro-cp" in message
    assert "--accept-unverified workspace" in message


def test_accepting_one_unverified_item_never_lets_another_through():
    other = item(name="host_home", capability="host_home.hidden")
    got = decide([item(), other], {}, TARGET, accept_unverified=("workspace",), vectors=VECTORS)
    assert [v.verdict for v in got.items] == ["accepted", "refused"]
    assert not got.allowed and "--accept-unverified host_home" in said(got)


def test_an_item_can_be_accepted_by_its_capability_name():
    assert decide([item()], {}, TARGET, accept_unverified=(CAP,), vectors=VECTORS).allowed


def test_a_name_that_is_no_item_of_the_plan_is_reported_as_unknown():
    assert unknown_accepted([item()], ["workspace", "workspce", CAP]) == ["workspce"]


def test_a_capability_without_vectors_can_only_pass_unverified():
    got = decide([item(capability="workspace.none")], {}, TARGET)
    assert got.items[0].verdict == "refused" and "no vector" in got.items[0].reason
    assert decide([item(capability="workspace.none")], {}, TARGET, accept_unverified=("workspace",)).allowed


def test_a_plan_error_refuses_even_when_every_item_is_proven():
    got = decide([item()], {CAP: claim("exact")}, TARGET, errors=["CODEX_HOME lies under TMPDIR"])
    assert not got.allowed and "CODEX_HOME lies under TMPDIR" in said(got)


def test_accepting_unverified_items_produces_a_loud_notice_naming_them():
    got = decide([item()], {}, TARGET, accept_unverified=("workspace",), vectors=VECTORS)
    assert got.notice().startswith("WARNING: --accept-unverified workspace: 1 required item(s) are NOT proven")
    assert "workspace (workspace.read_only" in got.notice()
    assert got.claims()["workspace"]["verdict"] == "accepted"


def sandbox_row(state):
    escaped = ("ws-ro-tee",) if state == "refuted" else ()
    return Claim(
        harness="-",
        version="0.8.0",
        backend="bwrap",
        capability=CAP,
        declared="exact",
        claim=state,
        blocked=1,
        total=2,
        escaped=escaped,
    )


def test_an_exact_composed_claim_does_not_carry_an_item_whose_sandbox_row_is_refuted():
    decision = decide(
        [item()],
        {CAP: claim("exact")},
        TARGET,
        accept_unverified=("workspace",),
        vectors=VECTORS,
        sandbox_claims={CAP: sandbox_row("refuted")},
    )
    [verdict] = decision.items
    assert not decision.allowed and verdict.layer == "sandbox" and verdict.vectors == ("ws-ro-tee",)
    assert "the sandbox alone escaped" in said(decision)


def test_a_holding_sandbox_row_leaves_an_exact_composed_claim_proven():
    decision = decide(
        [item()], {CAP: claim("exact")}, TARGET, vectors=VECTORS, sandbox_claims={CAP: sandbox_row("exact")}
    )
    assert decision.allowed and decision.items[0].verdict == "proven"


def test_a_refusal_says_that_synthetic_runs_of_the_build_were_not_counted():
    decision = decide([item()], {}, TARGET, vectors=VECTORS, unproven={"synthetic": 2})
    assert not decision.allowed
    message = said(decision)
    assert "not counted: 2 synthetic vector run(s) of this build" in message
    assert "synthetic evidence never proves a build" in message


def test_a_refusal_asks_to_rerun_the_suite_for_records_that_do_not_say_where_they_came_from():
    message = said(decide([item()], {}, TARGET, vectors=VECTORS, unproven={"": 3}))
    assert "not counted: 3 vector run(s) of this build whose records do not say where they came from" in message
    assert "re-run the suite to prove this build" in message and evidence_command(TARGET) in message


def sandbox_exact(vectors=VECTORS[CAP]):
    return Claim(
        harness="-",
        version="0.8.0",
        backend="bwrap",
        capability=CAP,
        declared="exact",
        claim="exact",
        blocked=len(vectors),
        total=len(vectors),
        layers={"sandbox": {v: "blocked" for v in vectors}},
    )


def headless(state):
    return claim(state).model_copy(update={"mode": "headless"})


def test_headless_evidence_does_not_prove_an_item_the_harness_layer_carries_for_a_tui_launch():
    got = decide([item()], {}, TARGET, vectors=VECTORS, other_modes={CAP: headless("exact")})
    [verdict] = got.items
    assert verdict.verdict == "refused" and verdict.claim == "unverified"
    assert "proven in headless runs only" in verdict.reason
    assert f"{evidence_command(TARGET)} --agentbox-mode tui" in said(got)  # the command records tui evidence


def test_headless_evidence_proves_an_item_the_sandbox_alone_blocks_in_every_vector():
    got = decide(
        [item()],
        {},
        TARGET,
        vectors=VECTORS,
        other_modes={CAP: headless("exact")},
        sandbox_claims={CAP: sandbox_exact()},
    )
    assert got.allowed and got.items[0].verdict == "proven"


def test_a_sandbox_that_never_ran_one_of_the_vectors_does_not_carry_the_item():
    got = decide(
        [item()],
        {},
        TARGET,
        vectors=VECTORS,
        other_modes={CAP: headless("exact")},
        sandbox_claims={CAP: sandbox_exact(("ws-ro-tee",))},
    )
    assert not got.allowed


def test_a_refuted_tui_claim_is_never_outweighed_by_headless_evidence():
    got = decide(
        [item()],
        {CAP: claim("refuted")},
        TARGET,
        vectors=VECTORS,
        other_modes={CAP: headless("exact")},
        sandbox_claims={CAP: sandbox_exact()},
    )
    assert not got.allowed and got.items[0].claim == "refuted"


def built(harness, version, state, mode="tui", backend="bwrap", vectors=VECTORS[CAP]):
    """Another build's claim on CAP, as a reconciled table of the whole store holds it."""
    return claim(state).model_copy(
        update={
            "harness": harness,
            "version": version,
            "mode": mode,
            "backend": backend,
            "layers": {"composed": {v: "blocked" for v in vectors}},
        }
    )


def test_a_refusal_finds_the_other_harness_versions_whose_launch_mode_evidence_proves_an_item():
    table = [
        built("claude-code", "2.1.332", "exact"),
        built("codex", "0.170.0", "exact"),
        built("codex", "0.169.0", "unverified"),
        built("codex", TARGET.version, "exact"),
        built("opencode", "1.18.33", "exact", backend="sandbox-runtime"),
    ]
    assert proven_elsewhere(table, TARGET) == {CAP: ("claude-code@2.1.332", "codex@0.170.0")}


def test_headless_evidence_of_another_version_counts_only_where_the_sandbox_alone_carries_the_item():
    table = [built("claude-code", "2.1.332", "exact", mode="headless")]
    assert proven_elsewhere(table, TARGET) == {}
    assert proven_elsewhere([*table, sandbox_exact()], TARGET) == {CAP: ("claude-code@2.1.332",)}


def test_a_claim_no_vector_of_the_catalogue_tests_reads_as_nothing_can_verify_it():
    untested = claim("unverified").model_copy(update={"unverified": {}, "blocked": 0, "total": 0})
    got = decide([item()], {CAP: untested}, TARGET, vectors={})
    assert got.items[0].verdict == "refused" and "no vector for this capability" in got.items[0].reason


def test_no_other_harness_version_is_offered_where_the_sandbox_alone_escaped_what_it_declares():
    assert proven_elsewhere([built("claude-code", "2.1.332", "exact"), sandbox_row("refuted")], TARGET) == {}


# -- a claim resting on a vector inapplicable where it was recorded ------------------------------------------------

ISOLATION = "process.isolation"


def conditional(state="exact"):
    """process.isolation exact on a kernel with no module loader: priv-load-module was inapplicable there."""
    return Claim(
        harness="codex",
        version="0.171.0",
        binary_sha256="ab" * 32,
        backend="bwrap",
        capability=ISOLATION,
        declared="exact",
        claim=state,
        blocked=1,
        total=2,
        run=2,
        inapplicable={"priv-load-module": ("modules",)},
    )


def isolation(claims, kernel_lacks, accept=()):
    return decide(
        [item(capability=ISOLATION, name="process")],
        claims,
        TARGET,
        kernel_lacks=kernel_lacks,
        vectors={ISOLATION: ("priv-chroot", "priv-load-module")},
        accept_unverified=accept,
    )


def test_a_claim_exact_where_the_kernel_has_no_module_loader_is_proven_on_a_machine_whose_kernel_has_none_either():
    decision = isolation({ISOLATION: conditional()}, kernel_lacks=("modules",))
    [verdict] = decision.items
    assert decision.allowed and verdict.verdict == "proven"
    assert "exact only where the kernel has no module loader (inapplicable: priv-load-module)" in verdict.reason


def test_the_same_claim_is_unverified_on_a_machine_whose_kernel_has_a_module_loader_naming_vector_and_feature():
    decision = isolation({ISOLATION: conditional()}, kernel_lacks=())
    [verdict] = decision.items
    assert not decision.allowed and (verdict.claim, verdict.verdict) == ("unverified", "refused")
    assert verdict.vectors == ("priv-load-module",)
    assert "priv-load-module" in said(decision) and "this machine's kernel has a module loader" in verdict.reason


def test_accept_unverified_lets_such_a_claim_through_on_a_kernel_with_a_loader_loudly():
    decision = isolation({ISOLATION: conditional()}, kernel_lacks=(), accept=("process",))
    assert decision.allowed and decision.items[0].verdict == "accepted"
    assert "priv-load-module" in decision.notice()


def test_a_gate_told_nothing_of_the_kernel_takes_every_feature_as_present():
    decision = decide([item(capability=ISOLATION, name="process")], {ISOLATION: conditional()}, TARGET)
    assert decision.items[0].verdict == "refused"


def test_a_sandbox_row_resting_on_an_inapplicable_vector_is_held_to_the_same_condition():
    seen = {"priv-chroot": "blocked", "priv-load-module": "inapplicable"}
    alone = conditional().model_copy(update={"harness": "-", "layers": {"sandbox": seen}})
    headless = conditional().model_copy(update={"mode": "headless"})
    vectors = {ISOLATION: ("priv-chroot", "priv-load-module")}
    args = dict(vectors=vectors, sandbox_claims={ISOLATION: alone}, other_modes={ISOLATION: headless})
    lacking = decide([item(capability=ISOLATION, name="process")], {}, TARGET, kernel_lacks=("modules",), **args)
    having = decide([item(capability=ISOLATION, name="process")], {}, TARGET, kernel_lacks=(), **args)
    assert lacking.items[0].verdict == "proven" and having.items[0].verdict == "refused"


def test_no_other_version_is_offered_whose_claim_holds_only_on_a_kernel_without_a_module_loader():
    other = conditional().model_copy(update={"version": "0.170.0", "mode": "tui"})
    assert proven_elsewhere([other], TARGET, "tui", kernel_lacks=("modules",)) == {ISOLATION: ("codex@0.170.0",)}
    assert proven_elsewhere([other], TARGET, "tui", kernel_lacks=()) == {}
