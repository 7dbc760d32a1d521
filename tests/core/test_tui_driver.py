"""The TUI driver's data: which harnesses it can drive, and how it reads a terminal screen."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from agentbox.compile.adapters import get_adapter
from agentbox.testing.tui import (
    DECLINED,
    DECLINED_NOTE,
    Dialog,
    TuiScript,
    dialogs_for,
    readable,
    scripts,
    unsupported,
    words,
)


@pytest.mark.parametrize("name", ["claude-code", "codex", "opencode", "hermes"])
def test_a_harness_either_has_a_tui_driver_or_says_why_not(name):
    get_adapter(name)  # a real adapter name
    assert (unsupported(name) is None) is (name in scripts())
    if name not in scripts():
        assert unsupported(name)


def test_words_match_across_the_cursor_moves_a_tui_draws_between_them():
    assert re.search(words("Do you want"), "Do\x1b[1Cyou want to proceed?")


def test_a_screen_reads_as_its_words_without_escape_sequences_or_box_drawing():
    screen = ["\x1b[2J\u256d\u2500\u2500 Bash command \u2500\u256e\n", "\u2502 Do you want\x1b[0m to proceed? \u2502"]
    assert readable(screen) == "Bash command Do you want to proceed?"


def test_the_note_of_declined_dialogs_is_what_the_runner_counts_as_a_refusal():
    assert re.search(DECLINED, DECLINED_NOTE.format(n=2))


def test_a_screen_reads_without_the_queries_and_cursor_shapes_a_tui_sends():
    # OpenCode 1.18.33 opens with a capability query (DCS), mode queries (CSI ... $ p) and a cursor shape (CSI 1 SP q)
    screen = ["\x1bP+q4d73\x1b\\\x1b[?1016$p\x1b[?2026$pAsk\x1b[1 q anything\x1b(B", "\x1b]12;#eeeeee\x07 now"]
    assert readable(screen) == "Ask anything now"


def test_a_spinner_is_not_words():
    assert readable(["\u25a0\u2b1d\u2b1d esc interrupt \u25a0\u25a0\u2b1d"]) == "esc interrupt"


@pytest.mark.parametrize("name", sorted(scripts()))
def test_each_driver_declines_dialogs_with_keys_and_knows_its_quit_command(name):
    script = scripts()[name]
    assert script.quit.startswith("/")
    assert script.decline
    if script.declined is not None:
        assert script.permission is not None, "a turn a declined dialog ended needs a dialog to decline"


def test_an_opencode_turn_ended_by_a_declined_dialog_is_seen_in_its_token_count():
    # the sidebar after Esc rejected a bash call (1.18.33): the step's tokens are drawn as it ends
    drawn = "\x1b[5;121H\x1b[38;2;128;128;128m\x1b[48;2;20;20;20m7,434 tokens\x1b[0m"
    assert re.search(scripts()["opencode"].declined, drawn)


def test_codex_offers_its_model_migration_only_from_a_model_it_knows():
    codex = scripts()["codex"]
    assert dialogs_for(codex, "gpt-5.5", "0.171.0") == codex.dialogs
    # `setup.uncatalogued_model`: no migration dialog comes, and waiting for one timed the run out
    assert [d.keys for d in dialogs_for(codex, "scripted", "0.171.0")] == ["\r"]


def test_codex_0_147_raises_no_first_run_dialog_and_shows_a_placeholder_of_its_own():
    codex = scripts()["codex"]
    # waiting for 0.171's "Open restricted" timed every 0.147 TUI run out, with its input box already drawn
    assert dialogs_for(codex, "gpt-5.5", "0.147.0") == ()
    drawn = "\x1b[38;5;8m\u203aWrite tests for @filename\x1b[39m"  # one of its eight placeholders, chosen at random
    assert re.search(codex.ready, drawn)
    assert re.search(codex.ready, "Ask Codex to do anything")


def test_a_dialog_only_some_versions_raise_is_expected_from_those_alone():
    script = TuiScript.model_validate(
        {
            "ready": "x",
            "quit": "/q",
            "dialogs": [{"pattern": "Trust?", "keys": "y", "min_version": "2.0", "max_version": "2.1"}],
        }
    )
    assert [len(dialogs_for(script, None, v)) for v in ("1.9.9", "2.0.0", "2.1.7", "2.2.0")] == [0, 1, 1, 0]


def test_a_screen_pattern_of_the_data_is_a_regex_or_the_words_the_screen_draws():
    script = TuiScript.model_validate(
        {"ready": {"words": "Ask anything"}, "quit": "/exit", "declined": "[0-9]+ tokens", "dialogs": [["a b", "\r"]]}
    )
    assert (script.ready, script.declined) == (words("Ask anything"), "[0-9]+ tokens")
    either = TuiScript.model_validate({"ready": {"words": ["Ask anything", "Say (hi)"]}, "quit": "/exit"}).ready
    assert [bool(re.fullmatch(either, t)) for t in ("Ask  anything", "Say (hi)", "Say hi")] == [True, True, False]
    assert script.dialogs == (Dialog("a b", "\r"),)  # a regex, kept as written
    with pytest.raises(ValidationError, match="unknown"):
        TuiScript.model_validate({"ready": "x", "quit": "/exit", "unknown": 1})


@pytest.mark.parametrize("ready", [{"words": []}, {"words": ["a", 1]}, {"words": "x", "other": 1}, {"text": "x"}])
def test_a_screen_pattern_written_otherwise_is_refused_with_the_shapes_it_may_take(ready):
    with pytest.raises(ValidationError, match=r"ready\n.*a regex, \{words: TEXT\} or \{words: \[TEXT, ...\]\}"):
        TuiScript.model_validate({"ready": ready, "quit": "/exit"})
