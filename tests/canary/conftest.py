import sys
from pathlib import Path

import pytest

# The synthetic catalogue and records of the evidence tests serve the canary's tests too.
sys.path.insert(0, str(Path(__file__).parents[1] / "evidence"))

from synthetic import write_catalogue  # noqa: E402


@pytest.fixture
def catalogue(tmp_path):
    return write_catalogue(tmp_path / "vectors")
