"""Fixtures of the sandbox tests: a private AGENTBOX_HOME and host home, and a workspace."""

import os

import pytest


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "hosthome"
    home.mkdir()
    return {**os.environ, "AGENTBOX_HOME": str(tmp_path / "abhome"), "HOME": str(home)}


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return path
