"""The escape suite: every vector of the catalogue through the sandbox alone, the harness alone and
the composed plan, each with its positive control. Every outcome becomes an evidence record; a test
passes when the observed outcome is what the declarations predict (fix a wrong declaration, never
the test)."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentbox
from agentbox.testing.negative import VectorRunner, expected_for
from agentbox.testing.session import session_key
from agentbox.vectors import load_catalogue

CATALOGUE = load_catalogue(Path(agentbox.__file__).parent / "data" / "vectors")
SANDBOX = [pytest.param(v, id=v.id) for v in CATALOGUE.vectors if "sandbox" in v.run_layers()]
HARNESSED = [pytest.param(v, id=v.id) for v in CATALOGUE.vectors if {"harness", "composed"} & set(v.run_layers())]

pytestmark = pytest.mark.negative


@pytest.fixture
def runner(request):
    session = request.config.stash[session_key]
    return VectorRunner(CATALOGUE, session.timeout, request.node.nodeid)


def _judge(request, record, expected):
    request.node.user_properties.append(("agentbox_evidence", record.model_dump_json()))
    assert record.outcome != "error", f"{record.vector_id} [{record.layer}]: infrastructure error: {record.observation}"
    assert record.outcome == expected, (
        f"{record.vector_id} [{record.layer}] was {record.outcome} but the declarations predict {expected}: "
        f"{record.observation}. Fix the declaration to the truth.")


@pytest.mark.parametrize("vector", SANDBOX)
def test_the_sandbox_alone_enforces_what_it_declares(request, runner, vector):
    record = runner.run(vector, "sandbox")
    _judge(request, record, expected_for(vector, "sandbox", None, None))


@pytest.mark.parametrize("layer", ["harness", "composed"])
@pytest.mark.parametrize("vector", HARNESSED)
def test_each_layer_of_each_harness_enforces_what_it_declares(request, runner, harness, scripted_model, vector, layer):
    if not vector.applies_to(harness.name):
        pytest.skip(vector.skip_reason(harness.name))
    if layer not in vector.run_layers():
        pytest.skip(f"{vector.id} is not run in the {layer} layer")
    probe = request.getfixturevalue("harness_probe")
    record = runner.run(vector, layer, harness, probe, scripted_model)
    _judge(request, record, expected_for(vector, layer, harness.name, probe.version))
