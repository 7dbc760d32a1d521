"""A scenario is data: the abstract steps a scripted model takes, and their translation into native calls.

Steps say what the model wants done (`shell`, `write_file`, ...); a harness's ToolVocabulary says which
native tool call does it. Keeping the two apart lets one scenario drive every harness.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentbox.compile.adapters.base import ToolVocabulary
from agentbox.errors import InputError
from agentbox.core.profile import validation_message

__all__ = [
    "ScenarioError",
    "Scenario",
    "Step",
    "ShellStep",
    "WriteFileStep",
    "EditFileStep",
    "ReadFileStep",
    "FetchUrlStep",
    "McpCallStep",
    "NativeCallStep",
    "FinalTextStep",
    "load_scenario",
    "load_vocabulary",
    "translate",
]


class ScenarioError(InputError):
    """A scenario that cannot be run as written: bad fields, or a step the harness has no tool for."""


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def fields(self) -> dict[str, Any]:
        """The values a vocabulary template may name as {placeholders}."""
        return self.model_dump(exclude={"kind"})


class ShellStep(_Step):
    kind: Literal["shell"] = "shell"
    command: str


class WriteFileStep(_Step):
    kind: Literal["write_file"] = "write_file"
    path: str
    content: str


class EditFileStep(_Step):
    kind: Literal["edit_file"] = "edit_file"
    path: str
    old: str
    new: str


class ReadFileStep(_Step):
    kind: Literal["read_file"] = "read_file"
    path: str


class FetchUrlStep(_Step):
    kind: Literal["fetch_url"] = "fetch_url"
    url: str


class McpCallStep(_Step):
    kind: Literal["mcp_call"] = "mcp_call"
    server: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class NativeCallStep(_Step):
    """A harness-specific call, exactly as written (e.g. an escalation flag only one harness knows)."""

    kind: Literal["native_call"] = "native_call"
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class FinalTextStep(_Step):
    kind: Literal["final_text"] = "final_text"
    text: str


Step = Annotated[
    Union[
        ShellStep, WriteFileStep, EditFileStep, ReadFileStep, FetchUrlStep, McpCallStep, NativeCallStep, FinalTextStep
    ],
    Field(discriminator="kind"),
]
_KINDS = ("shell", "write_file", "edit_file", "read_file", "fetch_url", "mcp_call", "native_call", "final_text")


class Scenario(BaseModel):
    """What the model does, in order. After the last step it answers `final_text` and ends its turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str | None = None
    steps: tuple[Step, ...] = ()
    final_text: str = "done"
    # The answer to side requests (titles, summaries, probes): short, and never advances the script.
    side_text: str = "scripted session"

    @model_validator(mode="before")
    @classmethod
    def _short_steps(cls, data: Any) -> Any:
        """Accept `- shell: {command: ...}` as well as `- {kind: shell, command: ...}`: YAML reads better."""
        if isinstance(data, Mapping) and isinstance(data.get("steps"), list):
            steps = []
            for index, step in enumerate(data["steps"]):
                if isinstance(step, Mapping) and "kind" not in step and len(step) == 1:
                    ((kind, body),) = step.items()
                    if kind in _KINDS and isinstance(body, Mapping):
                        step = {"kind": kind, **body}
                if not isinstance(step, Mapping) or step.get("kind") not in _KINDS:
                    # Said here because pydantic would only say it cannot find the discriminator.
                    shown = step.get("kind", next(iter(step), None)) if isinstance(step, Mapping) else step
                    raise ValueError(f"steps.{index}: unknown step {shown!r}; a step is one of {', '.join(_KINDS)}")
                steps.append(step)
            data = {**data, "steps": steps}
        return data


def _validate(model: type[BaseModel], data: Any, source: str | None) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(validation_message(exc), file=source) from None


def _read_yaml(source: str | Path) -> tuple[Any, str | None]:
    """A path to a YAML file, or YAML text itself (a string holding a newline or starting a mapping)."""
    import yaml

    text, name = str(source), None
    if isinstance(source, Path) or ("\n" not in text and not text.lstrip().startswith(("{", "steps:"))):
        name = text
        try:
            text = Path(source).read_text()
        except OSError as exc:
            raise ScenarioError(f"cannot read: {exc.strerror}", file=name) from None
    try:
        return yaml.safe_load(text), name
    except yaml.YAMLError as exc:
        raise ScenarioError(f"malformed YAML: {exc}", file=name) from None


def _data(source: Any) -> tuple[Any, str | None]:
    return _read_yaml(source) if isinstance(source, (str, Path)) else (source, None)


def load_scenario(source: Scenario | Mapping[str, Any] | str | Path) -> Scenario:
    if isinstance(source, Scenario):
        return source
    data, name = _data(source)
    if not isinstance(data, Mapping):
        raise ScenarioError("a scenario is a mapping with a `steps` list", file=name)
    return _validate(Scenario, data, name)


def load_vocabulary(source: ToolVocabulary | Mapping[str, Any] | str | Path) -> ToolVocabulary:
    if isinstance(source, ToolVocabulary):
        return source
    data, name = _data(source)
    return _validate(ToolVocabulary, data, name)


_PLACEHOLDER = re.compile(r"\{([a-z_]+)(?:\|([^{}]*))?\}")


def _prefix_lines(value: str, prefix: str) -> str:
    """`{content|+}`: every line of the value behind `prefix` (what a unified patch body needs)."""
    return "\n".join(prefix + line for line in value.rstrip("\n").split("\n"))


def _fill(template: Any, values: dict[str, Any], kind: str) -> Any:
    """Substitute {name} in every string; a string that is exactly one placeholder keeps the value's type."""
    if isinstance(template, dict):
        return {_fill(k, values, kind): _fill(v, values, kind) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, values, kind) for v in template]
    if not isinstance(template, str):
        return template

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise ScenarioError(
                f"template placeholder {{{name}}} is not a field of a {kind} step "
                f"(fields: {', '.join(sorted(values)) or 'none'})"
            )
        value = values[name]
        text = value if isinstance(value, str) else json.dumps(value)
        return text if match.group(2) is None else _prefix_lines(text, match.group(2))

    whole = _PLACEHOLDER.fullmatch(template)
    if whole and whole.group(1) in values and whole.group(2) is None:
        return values[whole.group(1)]
    return _PLACEHOLDER.sub(one, template)


def translate(step: Step, vocabulary: ToolVocabulary) -> tuple[str, dict[str, Any]]:
    """The native (tool name, arguments) that performs `step` in the harness `vocabulary` describes."""
    if isinstance(step, FinalTextStep):
        raise ScenarioError("a final_text step is plain text, not a tool call")
    if isinstance(step, NativeCallStep):
        return step.tool, dict(step.arguments)
    template = getattr(vocabulary, step.kind, None)
    if template is None:
        raise ScenarioError(
            f"the {vocabulary.wire_api} vocabulary has no template for a {step.kind} step; "
            "this harness cannot be asked to do it (drop the step or add the template)"
        )
    values = step.fields()
    tool = _fill(template.tool, values, step.kind)
    if template.arguments == "{arguments}":
        arguments = values.get("arguments")
    else:
        arguments = _fill(template.arguments, values, step.kind)
    if not isinstance(arguments, dict):
        raise ScenarioError(f"the {step.kind} template must produce an arguments object, got {arguments!r}")
    return str(tool), arguments
