"""`agent-box acp`'s gate reads the evidence of the ACP adapter build it would start, and of no other: an adapter
is another program than the harness binary (codex-acp embeds its own codex core), so evidence taken through
another build of it, or before records named it, proves nothing for this start."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_helpers import needs_bwrap
from agentbox.acp_endpoint.gate import prepare
from agentbox.compile.adapters import get_adapter
from agentbox.harnesses.acp import adapter_build
from agentbox.harnesses.agent_build import AgentBuild
from agentbox.harnesses.build_identity import identify
from agentbox.harnesses.installs import find_binary
from agentbox.prove.claims import default_catalogue_dir
from agentbox.prove.evidence import append
from agentbox.prove.vectors import load_catalogue
from synthetic_evidence import posing_as_observed, proving_records

pytestmark = needs_bwrap
CATALOGUE = load_catalogue(default_catalogue_dir())
REAL = {name: find_binary(name) for name in ("codex", "codex-acp")}  # before a test moves AGENTBOX_HOME
CAPABILITY = "workspace.read_write"


@pytest.fixture
def start(place, monkeypatch):
    """The real codex and codex-acp seen from the test's AGENTBOX_HOME; a profile that requires the workspace
    item; and its evidence store, to be filled by the test."""
    for name, found in REAL.items():
        if found is None or found.source != "agentbox":
            pytest.skip(f"{name} is not installed: agent-box harness install {name}@VERSION")
        (place.abhome / "harnesses" / name).mkdir(parents=True, exist_ok=True)
        (place.abhome / "harnesses" / name / found.version).symlink_to(Path(found.binary).parents[2])
    monkeypatch.setenv("AGENTBOX_HOME", str(place.abhome))
    profile = place.root / "writer.yaml"
    profile.write_text(
        "name: writer\nharness: codex\npermission_intent:\n  workspace: {access: read_write, requirement: required}\n"
    )
    return profile, place.root / "ev"


def proven_through(store: Path, adapter: AgentBuild | None) -> None:
    """Blocks of every acp vector of the workspace item by the installed codex build, taken through `adapter`."""
    codex = REAL["codex"]
    assert codex is not None
    sha = identify(get_adapter("codex").build_files(codex.binary)).sha256
    records = proving_records(CATALOGUE, "codex", codex.version, sha, [CAPABILITY], mode="acp")
    append(
        store,
        [
            r.model_copy(update={"run_info": r.run_info.model_copy(update={"adapter": adapter})})
            for r in posing_as_observed(records)
        ],
    )


def installed_adapter() -> AgentBuild:
    built = adapter_build("codex")
    assert built is not None
    return built[0]


def test_agent_box_acp_reads_the_evidence_of_the_adapter_build_it_starts(place, start):
    profile, store = start
    proven_through(store, installed_adapter())
    built = prepare(str(profile), str(place.ws), evidence=str(store)).built
    claim = built.claims[CAPABILITY]
    assert claim.adapter == installed_adapter() and claim.claim == "exact"
    assert built.decision.target.adapter == installed_adapter()
    assert f"via {installed_adapter()}" in built.decision.target.label


def test_an_acp_record_of_another_adapter_build_does_not_speak_for_agent_box_acp(place, start):
    profile, store = start
    mine = installed_adapter()
    proven_through(store, mine.model_copy(update={"version": "0.0.1", "sha256": "0" * 64}))
    built = prepare(str(profile), str(place.ws), evidence=str(store)).built
    assert CAPABILITY not in built.claims or built.claims[CAPABILITY].claim != "exact"
    assert not built.decision.allowed
    assert dict(built.decision.unproven).get("another adapter", 0) > 0
    assert "by another build of its ACP adapter" in built.decision.message()


def test_a_record_from_before_the_adapter_was_recorded_proves_nothing_for_agent_box_acp(place, start):
    profile, store = start
    proven_through(store, None)
    built = prepare(str(profile), str(place.ws), evidence=str(store)).built
    assert CAPABILITY not in built.claims or built.claims[CAPABILITY].claim != "exact"
    assert not built.decision.allowed
    assert dict(built.decision.unproven).get("adapter unrecorded", 0) > 0
    assert "recorded before the adapter was recorded" in built.decision.message()
