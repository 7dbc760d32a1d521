"""`agent-box completion bash|zsh|fish`: scripts generated from the parser, valid in their shell, completing
subcommands, options and values."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from agentbox.cli import main
from agentbox.cli.completion import nodes, script
from agentbox.cli.parser import build_parser

PARSER = build_parser()


def complete_in_bash(tmp_path, *words: str) -> list[str]:
    """What the bash script offers for the last of `words` (the word being typed)."""
    path = tmp_path / "agent-box.bash"
    path.write_text(script("bash", PARSER))
    quoted = " ".join(f"'{w}'" for w in words)
    done = subprocess.run(
        [
            "bash",
            "-c",
            f"source {path}; COMP_WORDS=(agent-box {quoted}); "
            f'COMP_CWORD={len(words)}; _agent_box; printf "%s\\n" "${{COMPREPLY[@]}}"',
        ],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_the_command_prints_the_script_for_the_shell_it_names(capsys):
    assert main(["completion", "bash"]) == 0
    assert "complete -o default -F _agent_box agent-box" in capsys.readouterr().out


def test_an_unknown_shell_is_bad_input(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["completion", "tcsh"])
    assert exit_.value.code == 2


def test_the_bash_script_is_valid_bash(tmp_path):
    path = tmp_path / "agent-box.bash"
    path.write_text(script("bash", PARSER))
    done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_bash_completes_the_subcommands_of_each_level(tmp_path):
    assert complete_in_bash(tmp_path, "") == [
        "permission",
        "sandbox",
        "harness",
        "matrix",
        "launch",
        "prove",
        "acp",
        "runs",
        "evidence",
        "report",
        "completion",
    ]
    assert complete_in_bash(tmp_path, "ev") == ["evidence"]
    assert complete_in_bash(tmp_path, "-q", "evidence", "") == ["claims", "list", "merge", "verify", "repair"]


def test_bash_completes_a_commands_options_and_an_options_choices(tmp_path):
    assert complete_in_bash(tmp_path, "evidence", "list", "--") == [
        "--help",
        "--quiet",
        "--verbose",
        "--evidence",
        "--json",
    ]
    assert complete_in_bash(tmp_path, "completion", "") == ["bash", "zsh", "fish"]


def test_bash_completes_folders_where_an_option_wants_a_folder(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "file").write_text("")
    assert complete_in_bash(tmp_path, "evidence", "claims", "--evidence", "") == ["store"]


def test_bash_leaves_the_words_after_double_dash_to_the_shell(tmp_path):
    assert complete_in_bash(tmp_path, "launch", "p.yaml", "--", "--") == []


def test_the_scripts_offer_no_old_or_hidden_spelling():
    for shell in ("bash", "zsh", "fish"):
        text = script(shell, PARSER)
        assert "--workspace" not in text and "--markdown " not in text and "--profile" not in text


def test_every_node_of_the_tree_is_in_the_scripts():
    paths = [n.path for n in nodes(PARSER)]
    assert "" in paths and "evidence claims" in paths and "sandbox run" in paths
    bash = script("bash", PARSER)
    assert all(f"'{p}')" in bash for p in paths if p)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_the_zsh_script_is_valid_zsh_and_describes_subcommands(tmp_path):
    path = tmp_path / "_agent-box"
    path.write_text(script("zsh", PARSER))
    assert subprocess.run(["zsh", "-n", str(path)], timeout=30).returncode == 0
    stubs = (
        'compdef() { }; _describe() { print -r -- "${(j:|:)${(@P)2}}" }; _files() { print files }; '
        '_directories() { print dirs }; compadd() { print -r -- "$*" }'
    )
    done = subprocess.run(
        ["zsh", "-f", "-c", f'{stubs}; source {path}; words=(agent-box evidence ""); CURRENT=3; PREFIX=""; _agent_box'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.stdout.startswith("claims:reconcile declared capabilities"), done.stderr


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_the_fish_script_is_valid_fish_and_completes_subcommands(tmp_path):
    path = tmp_path / "agent-box.fish"
    path.write_text(script("fish", PARSER))
    assert subprocess.run(["fish", "--no-execute", str(path)], timeout=30).returncode == 0
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source {path}; complete -C 'agent-box runs '"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == ["list", "show"], done.stderr
