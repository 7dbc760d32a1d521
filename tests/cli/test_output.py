"""Output for people and for scripts: tables with a header row, colour only on a terminal, -q and -v, and old
spellings that still work."""

from __future__ import annotations

import io
import sys

import pytest

from agentbox.core import console
from agentbox.harnesses import installs
from agentbox.cli import _respell, main
from agentbox.run.runs import RunStore
from agentbox.core.table import table


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_table_starts_with_its_header_and_pads_every_column_but_the_last():
    assert table(("name", "version", "path"), [("codex", "0.171.0", "/x"), ("hermes", None, "/y")]) == [
        "name    version  path",
        "codex   0.171.0  /x",
        "hermes  -        /y",
    ]


def test_harness_list_prints_a_header_row(abhome, monkeypatch, capsys):
    found = installs.Installed("codex", "0.171.0", "/bin/codex", "agentbox", None)
    monkeypatch.setattr(installs, "installed", lambda probe: [found])
    assert main(["harness", "list", "--no-probe"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["harness", "version", "probed", "source", "binary"]
    assert row.split() == ["codex", "0.171.0", "-", "agentbox", "/bin/codex"]


def test_runs_list_prints_a_header_row(abhome, capsys):
    RunStore(abhome / "agentbox.db").refuse(
        {"profile": "p", "profile_digest": "d" * 64, "project_root": "/w", "harness": "codex", "version": "0.171.0"},
        "refused",
    )
    assert main(["runs", "list"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["id", "started", "status", "exit", "harness", "profile", "project"]
    assert row.split()[2:5] == ["refused", "3", "codex"]


def test_compile_and_capabilities_print_a_header_row_over_their_items(abhome, profile, tmp_path, capsys):
    (tmp_path / "ws").mkdir()
    assert main(["permission", "compile", profile(), "--cwd", str(tmp_path / "ws"), "--harness-version", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == ["item", "capability", "requirement", "effective"]
    assert main(["permission", "capabilities", profile(), "--harness-version", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == ["capability", "support", "reason"]


def test_colour_needs_a_terminal_and_no_NO_COLOR(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    assert console.paint("x", "31", Terminal()) == "\033[31mx\033[0m"
    assert console.paint("x", "31", io.StringIO()) == "x"
    monkeypatch.setenv("NO_COLOR", "1")
    assert console.paint("x", "31", Terminal()) == "x"


def test_an_error_on_a_pipe_is_plain_text(abhome, tmp_path, capsys):
    assert main(["permission", "compile", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err.startswith("agent-box: ")


@pytest.fixture
def warns(profile, tmp_path):
    """A compile that succeeds with warnings (an advisory item a layer enforces only partially)."""
    (tmp_path / "ws").mkdir()
    asks = profile("{shell: {access: ask, requirement: advisory}}")  # shell.ask is partial on Codex 0.171.0
    return ["permission", "compile", asks, "--cwd", str(tmp_path / "ws"), "--harness-version", "0.171.0"]


def test_quiet_silences_warnings_before_or_after_the_subcommand(abhome, warns, capsys):
    assert main(warns) == 0
    assert "agent-box: warning:" in capsys.readouterr().err
    for argv in (["-q", *warns], [*warns, "-q"], [*warns, "--quiet"]):
        assert main(argv) == 0
        assert capsys.readouterr().err == ""


def test_verbose_says_what_was_read_before_or_after_the_subcommand(abhome, capsys):
    for argv in (["-v", "evidence", "list"], ["evidence", "list", "-v"], ["evidence", "-v", "list"]):
        assert main(argv) == 0
        assert "0 record(s) from" in capsys.readouterr().err
    assert main(["evidence", "list"]) == 0
    assert capsys.readouterr().err == ""


def test_each_call_starts_at_the_default_level(abhome, warns, capsys):
    assert main(["-q", *warns]) == 0
    assert main(warns) == 0
    assert "agent-box: warning:" in capsys.readouterr().err


def test_sandbox_runs_old_profile_and_workspace_options_are_respelled():
    assert _respell(["sandbox", "run", "--profile", "p.yaml", "--workspace", "ws", "--", "x", "--profile", "y"]) == [
        "sandbox",
        "run",
        "p.yaml",
        "--cwd",
        "ws",
        "--",
        "x",
        "--profile",
        "y",
    ]
    assert _respell(["-q", "sandbox", "run", "--workspace=ws", "--profile=p.yaml", "--", "x"]) == [
        "-q",
        "sandbox",
        "run",
        "p.yaml",
        "--cwd",
        "ws",
        "--",
        "x",
    ]


def test_reports_old_file_options_are_respelled_and_a_bare_json_is_the_new_flag():
    assert _respell(["report", "-o", "r.html", "--json", "r.json", "--markdown", "r.md"]) == [
        "report",
        "-o",
        "r.html",
        "--json-out",
        "r.json",
        "--markdown-out",
        "r.md",
    ]
    assert _respell(["report", "--json", "--evidence", "ev"]) == ["report", "--json", "--evidence", "ev"]
    assert _respell(["evidence", "list", "--json"]) == ["evidence", "list", "--json"]


def test_an_old_spelling_is_named_deprecated_only_to_a_person_at_a_terminal(monkeypatch):
    console.set_level()
    monkeypatch.setattr(sys, "stderr", Terminal())
    _respell(["sandbox", "run", "--workspace", "ws", "p.yaml", "--", "x"])
    assert "--workspace ws is deprecated; write --cwd ws" in sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a script, or the negative suite reading stderr
    _respell(["sandbox", "run", "--workspace", "ws", "p.yaml", "--", "x"])
    assert sys.stderr.getvalue() == ""
