from pathlib import Path

import pytest
import yaml

from agentbox.core.capability import Declarations
from agentbox.prove.vectors import SURFACES, load_catalogue

DATA = Path(__file__).resolve().parents[2] / "agentbox" / "data"
LAYERS = sorted(p.stem for p in (DATA / "capabilities").glob("*.yaml"))


@pytest.mark.parametrize("layer", LAYERS)
def test_every_declaration_file_is_valid_and_names_only_known_bypass_surfaces(layer):
    decl = Declarations.model_validate(yaml.safe_load((DATA / "capabilities" / f"{layer}.yaml").read_text()))
    for cap, entries in decl.capabilities.items():
        for entry in entries:
            unknown = set(entry.bypass_surfaces) - set(SURFACES)
            assert not unknown, f"{layer} {cap}: unknown bypass surfaces {unknown}; known: {SURFACES}"


def test_the_vector_catalogue_loads_and_covers_at_least_forty_vectors():
    catalogue = load_catalogue(DATA / "vectors")
    assert len(catalogue.vectors) >= 40
    assert {
        "workspace.read_only",
        "workspace.read_write",
        "command_network.none",
        "mcp.allowlist",
        "host_home.hidden",
        "environment.allowlist",
        "process.isolation",
    } <= set(catalogue.capabilities)


def test_an_entry_for_one_mode_speaks_only_for_that_mode():
    """codex-acp embeds its own codex-core: driven as an ACP agent, Codex alone holds less than its CLI does."""
    decl = Declarations.model_validate(
        {
            "layer": "h",
            "capabilities": {
                "process.isolation": [
                    {"modes": ["acp"], "layers": ["harness"], "support": "partial", "bypass_surfaces": ["process"]},
                    {"support": "partial", "bypass_surfaces": ["process"], "holds_against": ["priv-chroot"]},
                ]
            },
        }
    )
    assert decl.report("process.isolation", None, "harness", "acp").holds_against == ()
    assert decl.report("process.isolation", None, "harness", "headless").holds_against == ("priv-chroot",)
    assert decl.report("process.isolation", None, "composed", "acp").holds_against == ("priv-chroot",)
    assert decl.report("process.isolation", None, "harness").holds_against == ("priv-chroot",)
