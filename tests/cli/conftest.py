"""Fixtures of the command-line contract tests: a private, empty AGENTBOX_HOME and a profile writer."""

from __future__ import annotations

import pytest


@pytest.fixture
def abhome(tmp_path, monkeypatch):
    """An empty AGENTBOX_HOME (no evidence, no runs, no harnesses) and a host home of its own."""
    home = tmp_path / "abhome"
    monkeypatch.setenv("AGENTBOX_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "hosthome"))
    (tmp_path / "hosthome").mkdir()
    return home


@pytest.fixture
def profile(tmp_path):
    """profile(intent_yaml, harness="codex") -> the path of a new profile file."""

    def write(intent: str = "{}", harness: str = "codex", name: str = "p") -> str:
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"name: {name}\nharness: {harness}\npermission_intent: {intent}\n")
        return str(path)

    return write
