"""Fixtures for the ACP endpoint's tests: a place (project, home, AGENTBOX_HOME) outside /tmp, removed after."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from acp_helpers import Place


@pytest.fixture
def place() -> Place:
    root = Path(tempfile.mkdtemp(prefix="acp-endpoint-", dir="/var/tmp"))
    try:
        p = Place(root, root / "ws", root / "home", root / "abhome")
        for d in (p.ws, p.home, p.abhome):
            d.mkdir()
        yield p
    finally:
        shutil.rmtree(root, ignore_errors=True)
