from __future__ import annotations

import functools

import pytest

from synthetic import make_record, write_catalogue


@pytest.fixture(autouse=True)
def abhome(tmp_path, monkeypatch):
    """A private AGENTBOX_HOME for every test: the store indexes live there, never in the user's home."""
    home = tmp_path / "abhome"
    monkeypatch.setenv("AGENTBOX_HOME", str(home))
    return home


@pytest.fixture
def catalogue(tmp_path):
    return write_catalogue(tmp_path / "vectors")


@pytest.fixture
def record(catalogue):
    """record(vector, layer, outcome, ...) -> an EvidenceRecord later than every earlier one."""
    return functools.partial(make_record, catalogue)
