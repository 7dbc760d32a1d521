"""Representative errors exit with the code the README's exit-code sentence gives their kind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentbox.cli import main
from agentbox.cli.parser import EXIT_CODES

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
# "Exit codes: 0 ok, 2 bad input (...), 3 a required item cannot be enforced (...), 4 sandbox ..., 5 harness ..."
SENTENCE = " ".join(README[README.index("Exit codes:") :].split("\n\n", 1)[0].split())
CODES = {int(code): meaning for code, meaning in re.findall(r"(\d) ([^,]+?)(?:,|\.$)", SENTENCE.split(":", 1)[1])}


def test_the_readme_and_the_help_name_the_same_exit_codes():
    assert set(CODES) == {0, 1, 2, 3, 4, 5}
    assert {int(c) for c in re.findall(r"\b(\d) ", EXIT_CODES)} == set(CODES)


def test_the_commands_page_of_the_docs_says_the_same_sentence():
    page = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text()
    assert SENTENCE in " ".join(page.split())


def test_a_profile_that_does_not_exist_is_bad_input(abhome, tmp_path, capsys):
    assert main(["permission", "compile", str(tmp_path / "nope.yaml"), "--harness-version", "0.171.0"]) == 2
    assert CODES[2].startswith("bad input") and "nope.yaml: no such file" in capsys.readouterr().err


def test_a_profile_with_an_unknown_field_is_bad_input(abhome, profile):
    bad = profile("{workspace: {access: read_only, bogus: 1}}")
    assert main(["permission", "compile", bad, "--harness-version", "0.171.0", "--json"]) == 2


def test_an_unknown_option_is_bad_input(abhome, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["evidence", "list", "--bogus"])
    assert exit_.value.code == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_an_evidence_store_that_does_not_exist_is_bad_input(abhome, tmp_path):
    assert main(["evidence", "list", "--evidence", str(tmp_path / "evidnce")]) == 2


def test_a_required_item_no_layer_enforces_exactly_exits_3(abhome, profile, tmp_path, capsys):
    (tmp_path / "ws").mkdir()
    ask = profile("{shell: {access: ask, requirement: required}}")
    assert main(["permission", "compile", ask, "--cwd", str(tmp_path / "ws"), "--harness-version", "0.171.0"]) == 3
    assert CODES[3].startswith("a required item cannot be enforced") and "shell" in capsys.readouterr().err


def test_a_sandbox_without_bubblewrap_exits_4(abhome, profile, tmp_path, monkeypatch, capsys):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["sandbox", "run", profile(), "--cwd", str(tmp_path / "empty"), "--", "true"]) == 4
    assert CODES[4].startswith("sandbox cannot be built") and "bwrap" in capsys.readouterr().err


def test_a_launch_whose_harness_is_not_installed_exits_5(abhome, profile, tmp_path, monkeypatch, capsys):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["launch", profile(), "--cwd", str(tmp_path / "empty")]) == 5
    assert CODES[5].startswith("harness binary problem") and "codex is not installed" in capsys.readouterr().err
