from __future__ import annotations

import pytest

from report_matrix import Matrix, make_matrix


@pytest.fixture
def matrix(tmp_path) -> Matrix:
    return make_matrix(tmp_path / "vectors")
