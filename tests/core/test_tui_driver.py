"""The TUI driver's data: which harnesses it can drive, and how it reads a terminal screen."""

from __future__ import annotations

import re

import pytest

from agentbox.adapters import get_adapter
from agentbox.testing.tui import DECLINED, DECLINED_NOTE, SCRIPTS, readable, unsupported, words


@pytest.mark.parametrize("name", ["claude-code", "codex", "opencode", "hermes"])
def test_a_harness_either_has_a_tui_driver_or_says_why_not(name):
    get_adapter(name)  # a real adapter name
    assert (unsupported(name) is None) is (name in SCRIPTS)
    if name not in SCRIPTS:
        assert unsupported(name)


def test_words_match_across_the_cursor_moves_a_tui_draws_between_them():
    assert re.search(words("Do you want"), "Do\x1b[1Cyou want to proceed?")


def test_a_screen_reads_as_its_words_without_escape_sequences_or_box_drawing():
    screen = ["\x1b[2J\u256d\u2500\u2500 Bash command \u2500\u256e\n", "\u2502 Do you want\x1b[0m to proceed? \u2502"]
    assert readable(screen) == "Bash command Do you want to proceed?"


def test_the_note_of_declined_dialogs_is_what_the_runner_counts_as_a_refusal():
    assert re.search(DECLINED, DECLINED_NOTE.format(n=2))
