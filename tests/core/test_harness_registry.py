"""Adding a harness is one adapter package and its data, registered by an entry point of its own distribution:
nothing in Agent-Box names it, yet it is listed, compiled and parametrized like the packaged ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parents[1] / "support"  # holds mini_harness, the adapter and its data folder


@pytest.fixture
def place(tmp_path: Path) -> dict:
    """A machine where a distribution `mini-harness` is installed beside Agent-Box, and its harness 1.0.0 is
    installed where `agent-box harness install` puts one (its recipe, data/packages.yaml, says npm)."""
    dist = tmp_path / "site" / "mini_harness-1.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mini-harness\nVersion: 1.0.0\n")
    (dist / "entry_points.txt").write_text("[agentbox.harnesses]\nmini = mini_harness:ADAPTER\n")
    binary = tmp_path / "home" / "harnesses" / "mini" / "1.0.0" / "node_modules" / ".bin" / "mini"
    binary.parent.mkdir(parents=True)
    binary.write_text('#!/bin/sh\necho "mini 1.0.0"\n')
    binary.chmod(0o755)
    (tmp_path / "project").mkdir()
    (tmp_path / "mini.yaml").write_text(
        textwrap.dedent("""\
            name: mini-worker
            harness: mini
            permission_intent:
              workspace: {access: read_write, requirement: required}
              command_network: {access: none, requirement: required}
        """)
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(SUPPORT)]),
        "AGENTBOX_HOME": str(tmp_path / "home"),
    }
    return {"root": tmp_path, "env": env, "binary": str(binary)}


def _agent_box(place: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentbox.cli", *args],
        capture_output=True,
        text=True,
        env=place["env"],
        cwd=place["root"] / "project",
        timeout=120,
    )


def test_a_harness_of_another_distribution_is_listed_with_the_version_its_adapter_probes(place):
    done = _agent_box(place, "harness", "list", "--json")
    assert done.returncode == 0, done.stderr
    listed = {h["name"]: h for h in json.loads(done.stdout)}
    assert (listed["mini"]["version"], listed["mini"]["binary"]) == ("1.0.0", place["binary"])


def test_it_compiles_through_its_own_adapter_with_its_own_declarations(place):
    done = _agent_box(place, "permission", "compile", str(place["root"] / "mini.yaml"), "--json")
    plan = json.loads(done.stdout)
    assert (plan["harness"], plan["harness_version"], plan["binary"]) == ("mini", "1.0.0", place["binary"])
    assert [a["path"] for a in plan["native"]["artifacts"]] == ["mini.json"]
    # its declarations (data/capabilities/mini.yaml) claim nothing: the OS sandbox carries every item
    layers = {i["item"]: {c["layer"]: c["support"] for c in i["layers"]} for i in plan["items"]}
    assert layers["workspace"]["harness"] == "unsupported"
    assert layers["workspace"]["sandbox"] == "exact"


def test_the_suite_parametrizes_its_harness_fixture_with_it_from_a_matrix(place):
    project = place["root"] / "project"
    (project / "matrix.yaml").write_text("harnesses:\n  mini: ['1.0.0']\n")
    (project / "test_it.py").write_text(
        "def test_the_harness(harness):\n    assert (harness.name, harness.version) == ('mini', '1.0.0')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-v", "--agentbox-matrix", "matrix.yaml", "test_it.py"],
        capture_output=True,
        text=True,
        env=place["env"],
        cwd=project,
        timeout=120,
    )
    assert "test_it.py::test_the_harness[mini-1.0.0] PASSED" in done.stdout, done.stdout + done.stderr


def test_without_its_entry_point_a_profile_naming_it_is_refused_with_the_harnesses_that_are_known(place):
    place["env"]["PYTHONPATH"] = str(SUPPORT)  # the adapter importable, but no distribution registers it
    done = _agent_box(place, "permission", "compile", str(place["root"] / "mini.yaml"), "--json")
    assert done.returncode == 2
    assert "harness: Input should be 'claude-code', 'codex', 'hermes' or 'opencode'" in done.stderr
