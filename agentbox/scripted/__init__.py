"""The scripted model: the one stand-in Agent-Box allows, in place of the remote model API.

It speaks the harnesses' own wire APIs on 127.0.0.1, emits the tool calls a scenario asks for, and
records what the harness offered and sent back. It never judges whether an attack succeeded.
"""

from __future__ import annotations

from agentbox.scripted.scenario import Scenario, ScenarioError, load_scenario, load_vocabulary, translate
from agentbox.scripted.server import ScriptedModel
from agentbox.scripted.transcript import Emitted, Record, ToolResult, Transcript

__all__ = [
    "Emitted",
    "Record",
    "Scenario",
    "ScenarioError",
    "ScriptedModel",
    "ToolResult",
    "Transcript",
    "load_scenario",
    "load_vocabulary",
    "translate",
]
