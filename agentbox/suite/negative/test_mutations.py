"""The mutation check: remove one protection from the sandbox's plan and some vector must escape.

Each mutation (agentbox/testing/weakened.py, SINGLE) is tried against the sandbox-layer vectors, those
whose capability it aims at first, until one escapes. A mutation no vector notices is a protection the
catalogue does not prove: it fails here, unless negative/mutations.yaml lists it as a known survivor
with the reason. The score (caught of applicable) is the share of passing tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentbox.prove.evidence import privilege_level
from agentbox.testing.negative import VectorRunner, expected_for
from agentbox.testing.session import session_key
from agentbox.testing.weakened import NOT_APPLICABLE, mutation_names

pytestmark = pytest.mark.mutation
_DATA = yaml.safe_load((Path(__file__).parent / "mutations.yaml").read_text())


def test_the_data_names_every_mutation_and_nothing_else():
    assert set(_DATA["aims"]) == set(mutation_names())
    assert set(_DATA["survivors"] or {}) <= set(mutation_names())


@pytest.mark.parametrize("mutation", mutation_names())
def test_removing_one_protection_lets_some_vector_escape(request, mutation):
    session = request.config.stash[session_key]
    catalogue = session.catalogue()
    runner = VectorRunner(catalogue, session.timeout, request.node.nodeid)
    aims = _DATA["aims"].get(mutation, [])
    # a vector that escapes the whole sandbox through a declared bypass proves nothing about one protection
    vectors = [
        v
        for v in catalogue.vectors
        if "sandbox" in v.run_layers()
        and v.applies_to(None, privilege_level())
        and expected_for(v, "sandbox", None, None) == "blocked"
    ]
    vectors.sort(key=lambda v: (aims.index(v.capability) if v.capability in aims else len(aims), v.id))
    tried, errors = 0, []
    for vector in vectors:
        attempt = runner.attempt(vector, "sandbox", False, mutation=mutation)
        if attempt.effect is None:
            if NOT_APPLICABLE not in attempt.observation:
                errors.append(f"{vector.id}: {attempt.observation[:160]}")
            continue
        tried += 1
        if attempt.effect:
            survivors = _DATA["survivors"] or {}
            assert mutation not in survivors, (
                f"{mutation} is caught now ({vector.id} escapes: {attempt.observation}); "
                "remove it from negative/mutations.yaml's survivors"
            )
            print(f"{mutation}: caught by {vector.id} after {tried} vector(s)")
            return
    if not tried:
        pytest.skip(f"no sandbox vector's plan has the {mutation} protection")
    reason = (_DATA["survivors"] or {}).get(mutation)
    if reason:
        pytest.xfail(f"{mutation} survives {tried} vector(s): {reason}")
    pytest.fail(
        f"removing {mutation} lets no vector escape ({tried} tried, {len(errors)} errored"
        + (f": {'; '.join(errors[:3])}" if errors else "")
        + "); add a vector that needs it"
    )
