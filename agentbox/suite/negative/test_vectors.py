"""The escape suite: every vector of the catalogue through the sandbox alone, the harness alone and
the composed plan (and the ACP endpoint's client-surface vectors through the endpoint alone); an attack that saw
nothing is judged with its positive control. Every outcome becomes an evidence record; a test
passes when the observed outcome is what the declarations predict (fix a wrong declaration, never
the test), or when it is `inapplicable`: the kernel lacks what the attack needs (a vector's `kernel_needs`),
shown by the attack's own system call answered ENOSYS, and the record says so."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentbox.prove.claims import carries_into
from agentbox.prove.evidence import privilege_level
from agentbox.testing.batch import Batches, batches_key
from agentbox.testing.evidence_writer import hand_over
from agentbox.testing.negative import VectorRunner, carried_by_headless, expected_for
from agentbox.testing.session import session_key
from agentbox.harnesses.acp import unsupported as acp_unsupported
from agentbox.testing.tui import unsupported

if TYPE_CHECKING:
    from agentbox.prove.evidence import Layer

pytestmark = pytest.mark.negative


def pytest_generate_tests(metafunc):
    # The catalogue is the session's (`--agentbox-catalogue` replaces it, `--agentbox-capability` narrows it), so
    # a canary, `agent-box prove` or a reviewer can run a subset without editing this file.
    marker = metafunc.definition.get_closest_marker("vector_layers")
    if marker is None:
        return
    session = metafunc.config.stash[session_key]
    layers = set(marker.args)
    metafunc.parametrize(
        "vector", [pytest.param(v, id=v.id) for v in session.selected_vectors() if layers & set(v.run_layers())]
    )


@pytest.fixture
def runner(request, agentbox_mode):
    session = request.config.stash[session_key]
    if agentbox_mode is None:
        pytest.skip(f"drives no harness: its records are the same in every mode ({', '.join(session.modes)} run)")
    return VectorRunner(session.catalogue(), session.timeout, request.node.nodeid, mode=agentbox_mode)


def _judge(request, record, expected):
    hand_over(request.node, record)
    assert record.outcome != "error", f"{record.vector_id} [{record.layer}]: infrastructure error: {record.observation}"
    if record.outcome == "inapplicable":
        return  # the kernel lacks what the attack needs, shown by the attack's own call: on record, nothing to judge
    assert record.outcome == expected, (
        f"{record.vector_id} [{record.layer}] was {record.outcome} but the declarations predict {expected}: "
        f"{record.observation}. Fix the declaration to the truth."
    )


def _without_a_harness(request, runner, vector, layer: Layer) -> None:
    if not vector.applies_to(None, privilege_level()):
        pytest.skip(vector.skip_reason(None, privilege_level()))
    record = runner.run(vector, layer)
    _judge(request, record, expected_for(vector, layer, None, None))


@pytest.mark.vector_layers("sandbox")
def test_the_sandbox_alone_enforces_what_it_declares(request, runner, vector):
    _without_a_harness(request, runner, vector, "sandbox")


@pytest.mark.parametrize("layer", ["harness", "composed"])
@pytest.mark.vector_layers("harness", "composed")
def test_each_layer_of_each_harness_enforces_what_it_declares(request, runner, harness, scripted_model, vector, layer):
    if layer not in vector.run_layers():
        pytest.skip(f"{vector.id} is not run in the {layer} layer")
    if runner.mode == "tui" and unsupported(harness.name):
        pytest.skip(f"{harness.name} has no TUI driver: {unsupported(harness.name)}")
    if runner.mode == "acp" and acp_unsupported(harness.name):
        pytest.skip(f"{harness.name} cannot be driven as an ACP agent: {acp_unsupported(harness.name)}")
    probe = request.getfixturevalue("harness_probe")  # the version a skip of some versions reads
    if not vector.applies_to(harness.name, privilege_level(), probe.version):
        pytest.skip(vector.skip_reason(harness.name, privilege_level(), probe.version))
    session = request.config.stash[session_key]
    carry = session.carry(runner.mode) and carries_into(harness.name, runner.mode)
    if carry and carried_by_headless(vector):
        pytest.skip(
            f"{vector.id} is carried into the {runner.mode} claims by its headless and sandbox-alone records "
            "(--agentbox-carry): the sandbox alone is declared to block it"
        )
    if session.batch:  # one harness start for the vectors of one plan, each judged on its own (testing/batch.py)
        batches = request.config.stash.setdefault(batches_key, Batches())
        # a batch's members are the vectors this mode runs: the carried ones are no test's here
        run_here = [v for v in session.selected_vectors() if not (carry and carried_by_headless(v))]
        record = batches.record(runner, run_here, vector, layer, harness, probe, scripted_model)
    else:
        record = runner.run(vector, layer, harness, probe, scripted_model)
    _judge(request, record, expected_for(vector, layer, harness.name, probe.version, runner.mode))


@pytest.mark.vector_layers("acp")
def test_the_acp_endpoint_holds_the_client_surfaces_it_declares(request, runner, vector):
    """The protocol test agent asks the client, through `agent-box acp`'s relay and policy, for what the intent forbids."""
    _without_a_harness(request, runner, vector, "acp")
