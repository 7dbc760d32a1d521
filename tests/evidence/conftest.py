from __future__ import annotations

import functools

import pytest

from synthetic import make_record, write_catalogue


@pytest.fixture
def catalogue(tmp_path):
    return write_catalogue(tmp_path / "vectors")


@pytest.fixture
def record(catalogue):
    """record(vector, layer, outcome, ...) -> an EvidenceRecord later than every earlier one."""
    return functools.partial(make_record, catalogue)
