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
from pydantic import ValidationError

import agentbox
from agentbox.core import registry
from agentbox.core.profile import Profile, validation_message
from agentbox.core.schema_hints import describe
from agentbox.harnesses import tui

SUPPORT = Path(__file__).parents[1] / "support"  # holds mini_harness, the adapter and its data folder


def _distribution(site: Path, name: str, entry_points: str) -> None:
    """An installed distribution `name` whose entry points are `entry_points` (lines of the harnesses' group)."""
    dist = site / f"{name.replace('-', '_')}-1.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0.0\n")
    (dist / "entry_points.txt").write_text(f"[agentbox.harnesses]\n{entry_points}\n")


def _forget_registered() -> None:
    """The registry and what is read through it are cached per process: a distribution installed since is seen
    once these are dropped."""
    registry._entries.cache_clear()
    registry.adapter.cache_clear()
    tui.scripts.cache_clear()


@pytest.fixture
def register(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Installs, inside this process, a distribution registering `entry_points`; what it registers is forgotten after
    the test."""

    def install(name: str, entry_points: str) -> None:
        _distribution(tmp_path / "in-process", name, entry_points)
        monkeypatch.syspath_prepend(str(tmp_path / "in-process"))
        _forget_registered()

    yield install
    monkeypatch.undo()
    _forget_registered()


@pytest.fixture
def place(tmp_path: Path) -> dict:
    """A machine where a distribution `mini-harness` is installed beside Agent-Box, and its harness 1.0.0 is
    installed where `agent-box harness install` puts one (its recipe, data/packages.yaml, says npm)."""
    _distribution(tmp_path / "site", "mini-harness", "mini = mini_harness:ADAPTER")
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
        # the Agent-Box under test first: the one this process imported, wherever an installed one points
        "PYTHONPATH": os.pathsep.join([str(Path(agentbox.__file__).parents[1]), str(tmp_path / "site"), str(SUPPORT)]),
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


def _suite_run(place: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-v", *args, "test_it.py"],
        capture_output=True,
        text=True,
        env=place["env"],
        cwd=place["root"] / "project",
        timeout=120,
    )
    return done.stdout + done.stderr


# each harness test asks how it drives its harness, one asking nothing of a harness in which mode its records go,
# and the run whether a tui or acp test may leave to the headless run what the sandbox alone blocks
MODES_TEST = """
from agentbox.testing.session import session_key

def test_the_harness(harness, agentbox_mode, request):
    carry = request.config.stash[session_key].carry(agentbox_mode)
    print("drove", harness.id, agentbox_mode, "carried" if carry else "alone")

def test_no_harness(agentbox_mode):
    print("recorded in", agentbox_mode)
"""


def test_each_harness_test_runs_once_per_mode_the_matrix_names_and_a_test_without_a_harness_once_in_headless(place):
    project = place["root"] / "project"
    (project / "matrix.yaml").write_text("harnesses:\n  mini: ['1.0.0']\nmodes: [headless, tui, acp]\n")
    (project / "test_it.py").write_text(MODES_TEST)
    out = _suite_run(place, "-s", "--agentbox-matrix", "matrix.yaml")
    assert "drove mini-1.0.0 headless alone" in out, out
    # the run records the headless mode too, so the others carry what the sandbox alone blocks from it
    assert "drove mini-1.0.0 tui carried" in out and "drove mini-1.0.0 acp carried" in out
    assert out.count("recorded in headless") == 1
    assert "4 passed" in out


def test_a_mode_given_on_the_command_line_wins_over_the_matrix_and_keeps_the_tests_ids(place):
    project = place["root"] / "project"
    (project / "matrix.yaml").write_text("harnesses:\n  mini: ['1.0.0']\nmodes: [headless, tui]\n")
    (project / "test_it.py").write_text(MODES_TEST)
    out = _suite_run(place, "-s", "--agentbox-matrix", "matrix.yaml", "--agentbox-mode", "tui")
    # a tui run alone carries nothing unless asked: no headless records of this run would carry it
    assert "test_it.py::test_the_harness[mini-1.0.0] drove mini-1.0.0 tui alone" in out, out
    assert "recorded in None" in out  # the records of a test without a harness are headless ones: none here
    out = _suite_run(place, "-s", "--agentbox-matrix", "matrix.yaml", "--agentbox-mode", "tui", "--agentbox-carry")
    assert "drove mini-1.0.0 tui carried" in out, out


def test_without_its_entry_point_a_profile_naming_it_is_refused_with_the_harnesses_that_are_known(place):
    place["env"]["PYTHONPATH"] = str(SUPPORT)  # the adapter importable, but no distribution registers it
    done = _agent_box(place, "permission", "compile", str(place["root"] / "mini.yaml"), "--json")
    assert done.returncode == 2
    assert "harness: Input should be 'claude-code', 'codex', 'hermes' or 'opencode'" in done.stderr


def test_a_profile_names_a_harness_registered_after_the_profile_schema_was_built(register):
    profile = {"name": "mini-worker", "harness": "mini", "native_overrides": {"mini": {}}}
    with pytest.raises(ValidationError) as refused:
        Profile.model_validate(profile)
    assert validation_message(refused.value).startswith("harness: Input should be 'claude-code', 'codex', 'hermes'")
    register("mini-harness", "mini = mini_harness:ADAPTER")
    assert Profile.model_validate(profile).harness == "mini"
    with pytest.raises(ValidationError) as refused:
        Profile.model_validate({**profile, "harness": "minii"})
    # the message and its hint list it with the packaged ones
    assert validation_message(refused.value) == (
        "harness: Input should be 'claude-code', 'codex', 'hermes', 'mini' or 'opencode'"
    )
    assert describe(refused.value.errors()[0], Profile)[1].endswith("; did you mean `mini`?")
    assert Profile.model_json_schema()["properties"]["harness"]["enum"] == [*registry.harness_names()]


def test_a_harness_drives_its_tui_with_the_script_of_its_own_data_folder(register, tmp_path):
    """A harness's TUI script is data beside its declarations (`tui.yaml`); one without it says why it has none."""
    package = tmp_path / "in-process" / "tui_harness"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from pathlib import Path\n\nfrom mini_harness import MiniAdapter\n\n\n"
        "class TuiAdapter(MiniAdapter):\n    name = 'tuiful'\n    data_dir = Path(__file__).parent / 'data'\n\n\n"
        "ADAPTER = TuiAdapter()\n"
    )
    (package / "data" / "tui.yaml").write_text(
        "tuiful:\n  ready: {words: Say something}\n  quit: /bye\n  dialogs: [{pattern: 'Trust\\?', keys: y}]\n"
    )
    register("tui-harness", "tuiful = tui_harness:ADAPTER\nmini = mini_harness:ADAPTER")
    script = tui.scripts()["tuiful"]
    assert (script.ready, script.quit, script.dialogs) == (
        tui.words("Say something"),
        "/bye",
        (tui.Dialog(r"Trust\?", "y"),),
    )
    assert tui.unsupported("tuiful") is None
    assert tui.unsupported("mini") == "no driver for its TUI"
    assert tui.scripts()["codex"].quit == "/quit"  # the packaged harnesses' scripts still come from their own


def test_a_tui_script_with_a_bad_field_names_its_file_harness_and_field(register, tmp_path):
    package = tmp_path / "in-process" / "bad_tui_harness"  # a module of its own: imports are cached
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from pathlib import Path\n\nfrom mini_harness import MiniAdapter\n\n\n"
        "class TuiAdapter(MiniAdapter):\n    name = 'tuiful'\n    data_dir = Path(__file__).parent / 'data'\n\n\n"
        "ADAPTER = TuiAdapter()\n"
    )
    bad = package / "data" / "tui.yaml"
    bad.write_text("tuiful:\n  ready: x\n  quit: /bye\n  dialogs: [{pattern: y, keys: y, min_version: v0.171}]\n")
    register("bad-tui-harness", "tuiful = bad_tui_harness:ADAPTER\nmini = mini_harness:ADAPTER")
    with pytest.raises(ValueError, match=rf"{bad}: tuiful: dialogs\.0\.min_version: .*'v0\.171' is not a dotted"):
        tui.scripts()
