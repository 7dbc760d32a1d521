"""The stateless cursor: which scenario step answers a request, read only from the request's history.

The harness resends the whole conversation on every turn, so the position in the script is the
highest step whose call id (which names its step) is already in that history. No server-side state
means retries, parallel runs and side requests cannot push the script out of step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentbox.compile.adapters.base import ToolVocabulary
from agentbox.scripted.scenario import FinalTextStep, Scenario, ScenarioError, translate

__all__ = ["AssistantTurn", "Reply", "Script", "call_id", "step_of"]

_OUR_ID = re.compile(r"agentbox_(\d+)$")


def call_id(prefix: str, index: int) -> str:
    """A recognisable id that carries its step index, e.g. toolu_agentbox_0002."""
    return f"{prefix}agentbox_{index:04d}"


def step_of(identifier: str | None) -> int | None:
    match = _OUR_ID.search(identifier or "")
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class AssistantTurn:
    """One assistant message of the history, reduced to what the cursor needs."""

    ours: tuple[int, ...]  # step indices of the calls this script issued in it
    other_calls: int  # calls with ids we did not issue
    has_text: bool


@dataclass(frozen=True)
class Reply:
    step_index: int | None  # None: the closing text after the last step, or a side answer
    text: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    call_id: str | None = None


@dataclass(frozen=True)
class _Planned:
    text: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None


class Script:
    """A scenario translated once, at load time, so a step the harness cannot do fails before it starts."""

    def __init__(self, scenario: Scenario, vocabulary: ToolVocabulary | None):
        self.scenario = scenario
        self.vocabulary = vocabulary
        planned = []
        for step in scenario.steps:
            if isinstance(step, FinalTextStep):
                planned.append(_Planned(text=step.text))
                continue
            if vocabulary is None:
                raise ScenarioError(f"a {step.kind} step needs the harness's tool vocabulary")
            tool, arguments = translate(step, vocabulary)
            planned.append(_Planned(tool=tool, arguments=arguments))
        self._planned = tuple(planned)

    def cursor(self, turns: list[AssistantTurn]) -> int:
        position = 0
        for turn in turns:
            if turn.ours:
                position = max(position, max(turn.ours) + 1)
            elif (
                not turn.other_calls
                and turn.has_text
                and position < len(self._planned)
                and self._planned[position].text is not None
            ):
                position += 1  # a text-only turn can only be a final_text step we already sent
        return position

    def next(self, turns: list[AssistantTurn], id_prefix: str) -> Reply:
        position = self.cursor(turns)
        if position >= len(self._planned):
            return Reply(step_index=None, text=self.scenario.final_text)
        planned = self._planned[position]
        if planned.text is not None:
            return Reply(step_index=position, text=planned.text)
        return Reply(
            step_index=position,
            tool=planned.tool,
            arguments=dict(planned.arguments or {}),
            call_id=call_id(id_prefix, position),
        )

    def side(self) -> Reply:
        return Reply(step_index=None, text=self.scenario.side_text)
