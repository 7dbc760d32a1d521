"""Version matrices: the pinned schema, every file under matrices/, and `agent-box matrix list`."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

import agentbox
from agentbox.harnesses import installs
from agentbox.cli import main
from agentbox.errors import InputError
from agentbox.harnesses.matrix import PACKAGED, cells, json_schema, load_matrix, packaged_matrices, resolve_matrix
from agentbox.core.profile import HARNESSES

REPO = Path(__file__).resolve().parents[2]
MATRICES = sorted((REPO / "matrices").glob("*.yaml"))
SCHEMA_FILE = Path(agentbox.__file__).parent / "schemas" / "matrix.schema.json"


def test_the_schema_file_is_exported_from_the_matrix_model():
    # Regenerate with: python -m agentbox.harnesses.matrix --schema > agentbox/schemas/matrix.schema.json
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()


@pytest.mark.parametrize("path", MATRICES, ids=lambda p: p.name)
def test_every_matrix_file_validates_against_the_model_and_the_schema(path):
    load_matrix(path)
    jsonschema.validate(yaml.safe_load(path.read_text()), json.loads(SCHEMA_FILE.read_text()))


def test_the_default_matrix_has_one_version_per_harness_each_of_them_supported():
    default, supported = load_matrix(REPO / "matrices/default.yaml"), load_matrix(REPO / "matrices/supported.yaml")
    assert set(default.harnesses) == set(HARNESSES)
    assert all(len(v) == 1 for v in default.harnesses.values())
    for name, (version,) in default.harnesses.items():
        assert version in supported.harnesses[name]
    assert default.acp_adapters == supported.acp_adapters


def test_the_supported_matrix_proves_two_permission_dialects_of_every_harness():
    from agentbox.compile.adapters import get_adapter

    supported = load_matrix(REPO / "matrices/supported.yaml")
    assert set(supported.harnesses) == set(HARNESSES)
    for name, versions in supported.harnesses.items():
        dialects = {get_adapter(name).declarations.dialect_for(v) for v in versions}
        assert len(versions) >= 2 and len(dialects) >= 2, (name, versions, dialects)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "harnesses: {codx: ['1.0.0']}",
            r":1: harnesses.codx.\[key\]: Input should be 'claude-code', 'codex'.*"
            "did you mean `codex`",
        ),
        ("harnesses: {codex: []}", ":1: harnesses.codex: .*at least 1 item"),
        (
            "harnesses: {codex: ['0.171.0', '0.171']}",
            ": harnesses.codex: a version is listed twice",
        ),  # the model checks it
        ("harnesses: {codex: ['latest']}", ":1: harnesses.codex.0: String should match pattern"),
        ("acp_adapters: {codex: '0.1.0'}", ": unknown ACP adapter.s.: codex; known: claude-agent-acp, codex-acp"),
        ("schema_version: 2", ":1: schema_version: Input should be 1"),
        ("harness: {codex: ['1.0']}", ":1: harness: unknown field; did you mean `harnesses`?"),
        ("modes: [headless, gui]", ":1: modes.1: Input should be 'headless', 'tui' or 'acp'"),
        ("modes: [tui, tui]", ": modes: a mode is listed twice"),
        ("modes: []", ":1: modes: .*at least 1 item"),
    ],
)
def test_a_bad_matrix_is_refused_naming_the_file_and_the_field(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=f"bad.yaml{message}") as exc:
        load_matrix(path)
    assert exc.value.exit_code == 2


def test_a_bad_version_names_the_line_of_its_list_item(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("harnesses:\n  codex:\n    - 0.171.0\n    - latest\n")
    with pytest.raises(InputError, match=r"bad.yaml:4: harnesses.codex.1: String should match pattern"):
        load_matrix(path)


def test_cells_are_each_harness_version_once_in_harness_then_version_order(tmp_path):
    (tmp_path / "a.yaml").write_text(
        "harnesses: {hermes: ['0.19.0'], codex: ['0.171.0', '0.147.0']}\nacp_adapters: {codex-acp: '0.16.0'}\n"
    )
    (tmp_path / "b.yaml").write_text("harnesses: {codex: ['0.171.0'], claude-code: ['2.1.332']}\n")
    got = cells([load_matrix(tmp_path / "a.yaml"), load_matrix(tmp_path / "b.yaml")])
    assert [c.id for c in got] == ["claude-code-2.1.332", "codex-0.147.0", "codex-0.171.0", "hermes-0.19.0"]
    assert got[2].install == ("codex@0.171.0", "codex-acp@0.16.0")  # the adapter that drives it, pinned by a.yaml
    assert got[0].install == ("claude-code@2.1.332",)  # b.yaml pins no adapter
    assert got[3].install == ("hermes@0.19.0",)  # hermes speaks ACP natively


def test_matrix_list_json_is_a_github_actions_job_matrix(capsys):
    assert main(["matrix", "list", "--matrix", str(REPO / "matrices/supported.yaml"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {tuple(sorted(r)) for r in rows} == {("harness", "id", "install", "tox_env", "version")}
    assert [r["id"] for r in rows] == [
        "claude-code-2.1.197",
        "claude-code-2.1.332",
        "codex-0.147.0",
        "codex-0.171.0",
        "hermes-0.13.0",
        "hermes-0.19.0",
        "opencode-1.18.16",
        "opencode-1.18.33",
    ]
    codex = rows[3]
    assert codex == {
        "harness": "codex",
        "version": "0.171.0",
        "id": "codex-0.171.0",
        "tox_env": "codex-0.171.0",
        "install": ["codex@0.171.0", "codex-acp@0.16.0"],
    }


def test_matrix_list_reads_every_matrix_here_by_default_and_prints_a_line_per_version_under_a_header(
    capsys, monkeypatch, tmp_path
):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    assert main(["matrix", "list"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split() == ["harness", "version", "tox_env", "installed", "install"]
    assert len(lines) == 8
    assert lines[3].split() == ["codex", "0.171.0", "codex-0.171.0", "no", "codex@0.171.0", "codex-acp@0.16.0"]


def _pin(home: Path, name: str, version: str) -> None:
    """An install as `harness install` leaves it, without the registry: the binary where find_binary looks."""
    binary = home / "harnesses" / name / version / "node_modules" / ".bin" / installs.PACKAGES()[name].binary
    binary.parent.mkdir(parents=True)
    binary.write_text("")


def test_matrix_list_says_which_versions_are_installed_here(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    _pin(tmp_path, "codex", "0.171.0")
    _pin(tmp_path, "codex-acp", "0.16.0")
    _pin(tmp_path, "opencode", "1.18.33")
    assert main(["matrix", "list", "--matrix", str(REPO / "matrices/supported.yaml")]) == 0
    state = {line.split()[2]: line.split()[3] for line in capsys.readouterr().out.splitlines()[1:]}
    assert state["codex-0.171.0"] == "yes" and state["opencode-1.18.33"] == "yes"
    assert state["codex-0.147.0"] == "partly"  # its adapter is installed, the harness is not
    assert state["hermes-0.19.0"] == "no"


def test_matrix_list_json_stays_the_plan_whatever_is_installed(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    assert main(["matrix", "list", "--matrix", "supported", "--json"]) == 0
    before = capsys.readouterr().out
    _pin(tmp_path, "codex", "0.171.0")
    assert main(["matrix", "list", "--matrix", "supported", "--json"]) == 0
    assert capsys.readouterr().out == before


def test_the_package_ships_the_matrices_the_checkout_links_to():
    assert (REPO / "matrices").resolve() == PACKAGED.resolve()
    assert [p.name for p in packaged_matrices()] == ["default.yaml", "supported.yaml"]


def test_matrix_list_works_outside_a_checkout_with_the_packaged_matrices(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert main(["matrix", "list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 8


@pytest.mark.parametrize("given", ["default", "matrices/default.yaml"])
def test_a_packaged_matrix_is_found_by_name_or_by_its_checkout_path_from_anywhere(monkeypatch, tmp_path, given):
    monkeypatch.chdir(tmp_path)
    assert resolve_matrix(given) == PACKAGED / "default.yaml"
    assert load_matrix(given) == load_matrix(PACKAGED / "default.yaml")


def test_a_file_here_wins_over_the_packaged_matrix_of_that_name(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "matrices").mkdir()
    (tmp_path / "matrices" / "default.yaml").write_text("harnesses: {codex: ['0.147.0']}\n")
    assert load_matrix("matrices/default.yaml").harnesses == {"codex": ("0.147.0",)}


def test_matrix_list_names_a_missing_file_and_the_packaged_matrices(capsys, tmp_path):
    assert main(["matrix", "list", "--matrix", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: no such file (the packaged matrices are default, supported)" in capsys.readouterr().err


def test_harness_install_installs_what_any_matrix_names(monkeypatch):
    asked = []
    monkeypatch.setattr(
        installs,
        "install",
        lambda name, version, log: (
            asked.append(f"{name}@{version}") or installs.Installed(name, version, "/bin/true", "agentbox", version)
        ),
    )
    assert main(["harness", "install", "--quiet", "--matrix", str(REPO / "matrices/supported.yaml")]) == 0
    wanted = {spec for c in cells([load_matrix(REPO / "matrices/supported.yaml")]) for spec in c.install}
    assert set(asked) == wanted and len(asked) == len(wanted)
