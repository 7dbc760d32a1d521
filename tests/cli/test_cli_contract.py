"""The command line's conventions, checked on every command of the parser tree: help text, a closing example,
-q and -v, one spelling for a profile, and `--json` that prints JSON a script can parse."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agentbox.harnesses import installs
from agentbox.cli import main
from agentbox.cli.completion import walk
from agentbox.cli.parser import build_parser
from agentbox.run.runs import RunStore

REPO = Path(__file__).resolve().parents[2]
COMMANDS = {" ".join(path): parser for path, parser in walk(build_parser())}


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _visible(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.help != argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)]


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


LEAVES = sorted(name for name, parser in COMMANDS.items() if _subcommands(parser) is None)
JSON_COMMANDS = sorted(name for name in LEAVES if _option(COMMANDS[name], "--json"))


def test_the_tree_has_every_command_the_readme_names():
    assert {
        "permission capabilities",
        "permission compile",
        "permission explain",
        "sandbox run",
        "harness install",
        "harness list",
        "matrix list",
        "launch",
        "runs list",
        "runs show",
        "evidence claims",
        "evidence list",
        "evidence merge",
        "report",
        "completion",
    } <= set(LEAVES)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_and_argument_has_help_text(name):
    parser = COMMANDS[name]
    assert not [a.dest for a in _visible(parser) if not (a.help or "").strip()]
    subs = _subcommands(parser)
    if subs is not None:
        assert not [c.dest for c in subs._choices_actions if not (c.help or "").strip()]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_commands_help_ends_with_an_example(name):
    lines = COMMANDS[name].format_help().rstrip().splitlines()
    heading = max(i for i, line in enumerate(lines) if line in ("example:", "examples:"))
    examples = lines[heading + 1 :]
    assert examples and all(line.startswith("  ") and "agent-box" in line for line in examples)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_takes_quiet_and_verbose(name):
    parser = COMMANDS[name]
    assert _option(parser, "-q") is _option(parser, "--quiet") is not None
    assert _option(parser, "-v") is _option(parser, "--verbose") is not None


@pytest.mark.parametrize("name", [n for n in LEAVES if any(a.dest == "profile" for a in COMMANDS[n]._actions)])
def test_a_profile_is_always_the_first_positional_and_cwd_defaults_to_here(name):
    parser = COMMANDS[name]
    positionals = [a for a in parser._actions if not a.option_strings]
    assert positionals[0].dest == "profile"
    assert _option(parser, "--cwd").default == "."
    assert _option(parser, "--profile") is None and _option(parser, "--workspace") is None


@pytest.mark.parametrize("name", JSON_COMMANDS)
def test_json_is_always_a_flag_that_prints_to_stdout(name):
    assert _option(COMMANDS[name], "--json").nargs == 0


def test_every_listing_command_has_json():
    listing = [n for n in LEAVES if n.split()[-1] in ("list", "show", "claims", "capabilities", "compile", "explain")]
    assert listing and set(listing) <= set(JSON_COMMANDS)


def test_every_command_with_json_is_exercised_below():
    # a new command with --json must say here how to run it, so that its JSON is parsed at least once
    assert set(JSON_COMMANDS) == set(JSON_ARGS) | set(JSON_ELSEWHERE)


# how to run each command with --json on an empty AGENTBOX_HOME, fast and without a harness
JSON_ARGS = {
    "permission capabilities": lambda ctx: [ctx["profile"], "--harness-version", "0.171.0"],
    "permission compile": lambda ctx: [ctx["profile"], "--cwd", ctx["cwd"], "--harness-version", "0.171.0"],
    "permission explain": lambda ctx: [ctx["profile"], "--cwd", ctx["cwd"], "--harness-version", "0.171.0"],
    "harness install": lambda ctx: ["codex@0.171.0"],
    "harness list": lambda ctx: ["--no-probe"],
    "matrix list": lambda ctx: ["--matrix", str(REPO / "matrices" / "default.yaml")],
    "runs list": lambda ctx: [],
    "runs show": lambda ctx: [ctx["run"]],
    "evidence list": lambda ctx: [],
    "evidence claims": lambda ctx: [],
    "evidence verify": lambda ctx: [],
    "evidence repair": lambda ctx: [],
}
JSON_ELSEWHERE = {
    "evidence merge": "tests/report/test_merge.py",
    "report": "tests/report/test_report_cli.py",
    "prove": "tests/launch/test_prove.py",
}


@pytest.fixture
def ctx(abhome, tmp_path, profile, monkeypatch):
    monkeypatch.setattr(
        installs,
        "install",
        lambda name, version, log: installs.Installed(name, version, "/bin/true", "agentbox", version),
    )
    run = RunStore(abhome / "agentbox.db").refuse(
        {"profile": "p", "profile_digest": "d" * 64, "project_root": "/w", "harness": "codex", "version": "0.171.0"},
        "refused",
    )
    (tmp_path / "ws").mkdir()
    return {
        "profile": profile("{workspace: {access: read_only, requirement: required}}"),
        "cwd": str(tmp_path / "ws"),
        "run": run,
    }


@pytest.mark.parametrize("name", sorted(JSON_ARGS))
def test_a_command_given_json_prints_json_that_parses(name, ctx, capsys):
    assert main([*name.split(), *JSON_ARGS[name](ctx), "--json"]) == 0
    out = capsys.readouterr().out
    assert isinstance(json.loads(out), (dict, list))


def test_explain_json_carries_every_item_with_its_layers(ctx, capsys):
    assert (
        main(["permission", "explain", ctx["profile"], "--cwd", ctx["cwd"], "--harness-version", "0.171.0", "--json"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    workspace = next(i for i in data["items"] if i["item"] == "workspace")
    assert data["harness"] == "codex" and workspace["value"] == "read_only" and workspace["effective"] == "exact"
    assert {layer["layer"] for layer in workspace["layers"]} == {"harness", "sandbox"}


def test_bare_agent_box_prints_its_help_to_stdout_and_succeeds():
    done = subprocess.run([sys.executable, "-m", "agentbox"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: agent-box") and "permission" in done.stdout


def test_a_command_group_alone_prints_its_help(capsys):
    assert main(["evidence"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: agent-box evidence") and "claims" in out and "merge" in out


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"agent-box {version}"
