"""`agent-box acp`'s gate reads the ACP endpoint's client-surface claims on top of the harness's ACP-mode claim."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agentbox.prove.claims import Claim
from agentbox.gate import Target, decide

TARGET = Target("codex", "0.171.0", "ab" * 32, "bwrap", "/store")
CAP = "workspace.read_only"
ITEM = SimpleNamespace(
    item="workspace",
    capability=CAP,
    requirement="required",
    effective="exact",
    gap=None,
    layers=(SimpleNamespace(layer="harness"), SimpleNamespace(layer="sandbox")),
)


def claim(state: str, harness: str = "codex", mode: str = "acp") -> Claim:
    return Claim(
        harness=harness,
        version="0.171.0",
        binary_sha256="ab" * 32,
        backend="bwrap",
        capability=CAP,
        mode=mode,
        declared="exact",
        claim=state,
        blocked=1 if state == "exact" else 0,
        total=1,
        escaped=("acp-client-write-read-only",) if state == "refuted" else (),
        unverified={"acp-client-write-read-only": "missing"} if state == "unverified" else {},
    )


@pytest.mark.parametrize(
    "surface, accept, verdict, layer",
    [
        ("exact", False, "proven", "composed"),
        ("unverified", False, "refused", "acp"),
        ("unverified", True, "accepted", "acp"),
        ("refuted", True, "refused", "acp"),
        (None, False, "refused", "acp"),
    ],
)
def test_an_item_the_endpoint_has_client_surface_vectors_for_needs_the_endpoints_claim_exact_too(
    surface, accept, verdict, layer
):
    surfaces = {CAP: claim(surface, harness="-")} if surface else {}
    decision = decide(
        [ITEM],
        {CAP: claim("exact")},
        TARGET,
        vectors={CAP: ("ws-ro-tee",)},
        mode="acp",
        accept_unverified=("workspace",) if accept else (),
        surface_claims=surfaces,
        surface_vectors={CAP: ("acp-client-write-read-only",)},
    )
    (v,) = decision.items
    assert (v.verdict, v.layer) == (verdict, layer), v.line()
    if verdict == "refused":
        assert "acp-client-write-read-only" in decision.message()


def test_an_item_without_client_surface_vectors_is_judged_on_the_harness_claim_alone():
    decision = decide([ITEM], {CAP: claim("exact")}, TARGET, vectors={CAP: ("ws-ro-tee",)}, mode="acp")
    assert decision.allowed and decision.items[0].verdict == "proven"
