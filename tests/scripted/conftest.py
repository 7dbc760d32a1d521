from __future__ import annotations

import pytest

from agentbox.scripted import ScriptedModel


@pytest.fixture
def model():
    with ScriptedModel() as server:
        yield server
