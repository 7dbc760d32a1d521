"""Rules every vector of the shipped catalogue keeps, so a weak control or a vanished vector cannot return."""

from __future__ import annotations

import pytest

from agentbox.claims import default_catalogue_dir
from agentbox.vectors import Control, Vector, load_catalogue

CATALOGUE = load_catalogue(default_catalogue_dir())
# Controls that attempt something other than the attack, each with why no protection-removed form exists.
OTHER_STEPS = {
    "net-restricted-connect-mismatch": "the egress proxy has no mode that lets a mismatched CONNECT through; "
                                       "the control tunnels to the allowed name itself",
}


def test_a_control_has_no_oracle_of_its_own():
    assert "oracle" not in Control.model_fields


@pytest.mark.parametrize("vector", CATALOGUE.vectors, ids=lambda v: v.id)
def test_every_control_attempts_the_attack_itself(vector: Vector):
    if vector.control.steps is not None or vector.control.sandbox_command is not None:
        assert vector.id in OTHER_STEPS, f"{vector.id}: the control runs other steps than the attack"


@pytest.mark.parametrize("vector", CATALOGUE.vectors, ids=lambda v: v.id)
def test_every_host_control_has_a_plain_command_form(vector: Vector):
    c = vector.control
    if c.layer == "host" or c.harness_layer == "host" or c.host_harnesses:
        assert Vector.host_argv(c.steps or vector.steps) is not None


def test_a_file_tools_write_becomes_the_same_write_by_sh_on_the_host():
    argv = Vector.host_argv([{"write_file": {"path": "/x/a b", "content": "it's"}}])
    assert argv == ("sh", "-c", "printf %s 'it'\"'\"'s' > '/x/a b'")
