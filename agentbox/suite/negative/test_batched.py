"""A batched session never changes a verdict: a sample of the catalogue run both ways on every harness, alone and in
one harness start (`agentbox.testing.batch`), gives each vector the same outcome. The sample is the largest group
of vectors that share a plan in the composed layer, at most `SAMPLE` of them; the batch judges what it can prove on
its own and leaves the rest to run alone; the test compares what it judged and says which (a run where it judged
none proves nothing of batching and says so)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentbox.harnesses.acp import unsupported as acp_unsupported
from agentbox.testing.batch import run_batch, shared_plans
from agentbox.testing.negative import VectorRunner, expected_for
from agentbox.testing.session import session_key
from agentbox.testing.tui import unsupported

if TYPE_CHECKING:
    from agentbox.prove.evidence import Layer

pytestmark = pytest.mark.negative

SAMPLE = 4


def _sample(catalogue, harness: str, version: str, mode: str, layer: Layer) -> list:
    """The largest group of vectors that share a plan here and are declared blocked (an escape in a batch sends
    the whole batch alone, so a group with one would prove nothing of batching)."""
    groups = shared_plans(list(catalogue.vectors), layer, harness, version).values()
    blocked = ([v for v in group if expected_for(v, layer, harness, version, mode) == "blocked"] for group in groups)
    largest = max(blocked, key=len, default=[])
    return sorted(largest, key=lambda v: v.id)[:SAMPLE]


def test_a_batched_session_gives_each_vector_the_outcome_it_gets_alone(
    request, harness, agentbox_mode, scripted_model, record_property
):
    session = request.config.stash[session_key]
    if agentbox_mode == "tui" and unsupported(harness.name):
        pytest.skip(f"{harness.name} has no TUI driver: {unsupported(harness.name)}")
    if agentbox_mode == "acp" and acp_unsupported(harness.name):
        pytest.skip(f"{harness.name} cannot be driven as an ACP agent: {acp_unsupported(harness.name)}")
    unbatched = harness.vocabulary().unbatched_modes.get(agentbox_mode)
    if unbatched:
        pytest.skip(f"{harness.name}'s vectors run alone in the {agentbox_mode} mode: {unbatched}")
    probe = request.getfixturevalue("harness_probe")
    sample = _sample(session.catalogue(), harness.name, probe.version, agentbox_mode, "composed")
    if len(sample) < 2:
        pytest.skip(f"no two vectors of the catalogue share a plan for {harness.name}: nothing to batch")
    runner = VectorRunner(session.catalogue(), session.timeout, request.node.nodeid, mode=agentbox_mode)
    alone = {v.id: runner.run(v, "composed", harness, probe, scripted_model) for v in sample}
    # what the batch could not judge on its own runs alone, as in the suite: its record is a solo one
    why: dict[str, str] = {}
    batched = run_batch(runner, sample, "composed", harness, probe, scripted_model, why)
    record_property("batched", ", ".join(sorted(batched)) or "none")
    if all(r.outcome == "blocked" for r in alone.values()):
        assert batched, f"every vector of the sample was blocked alone, yet the batch judged none: {why}"
    assert {v: r.outcome for v, r in batched.items()} == {v: alone[v].outcome for v in batched}, (
        "a batch changed a verdict: "
        + "; ".join(
            f"{v}: alone {alone[v].outcome} ({alone[v].observation[:160]}), batched {r.outcome} ({r.observation[:160]})"
            for v, r in batched.items()
            if r.outcome != alone[v].outcome
        )
    )
