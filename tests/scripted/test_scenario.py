"""Scenarios are data, checked strictly, and translated through a harness's tool vocabulary."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentbox.compile.adapters.base import ToolVocabulary
from agentbox.scripted import ScenarioError, ScriptedModel, load_scenario, load_vocabulary, translate
from agentbox.scripted.scenario import McpCallStep, ShellStep, WriteFileStep

VOCABULARY_DIR = Path(__file__).parents[2] / "agentbox" / "data" / "vocabulary"
EVERY_STEP = {
    "steps": [
        {"shell": {"command": "ls"}},
        {"write_file": {"path": "/w/a", "content": "x"}},
        {"edit_file": {"path": "/w/a", "old": "x", "new": "y"}},
        {"read_file": {"path": "/w/a"}},
        {"fetch_url": {"url": "http://example.test/"}},
        {"mcp_call": {"server": "canary", "tool": "allowed_echo", "arguments": {"text": "hi"}}},
        {"final_text": {"text": "bye"}},
    ]
}


def test_a_scenario_loads_from_yaml_text_a_file_and_a_dict_in_short_or_long_step_form(tmp_path):
    text = "steps:\n  - shell: {command: ls}\n  - {kind: read_file, path: a.txt}\nfinal_text: bye\n"
    (tmp_path / "s.yaml").write_text(text)
    for source in (text, tmp_path / "s.yaml", str(tmp_path / "s.yaml"), yaml.safe_load(text)):
        scenario = load_scenario(source)
        assert [s.kind for s in scenario.steps] == ["shell", "read_file"] and scenario.final_text == "bye"
    assert load_scenario(EVERY_STEP).steps[-1].text == "bye"


@pytest.mark.parametrize(
    "data, message",
    [
        ({"steps": [{"shel": {"command": "ls"}}]}, "steps.0: unknown step .shel."),
        ({"steps": [{"shell": {"command": "ls", "cwd": "/"}}]}, "unknown field"),
        ({"steps": [{"write_file": {"path": "a"}}]}, "content"),
        ({"steps": [], "surprise": 1}, "surprise: unknown field"),
        (["not", "a", "mapping"], "a scenario is a mapping"),
    ],
)
def test_a_bad_scenario_is_a_clear_error_naming_the_field(data, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(data)


def test_a_missing_scenario_file_is_a_clear_error(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "absent.yaml")


def test_translate_fills_placeholders_in_names_strings_and_lists():
    vocabulary = ToolVocabulary(
        wire_api="openai-chat",
        shell={"tool": "run", "arguments": {"argv": ["bash", "-c", "{command}"], "n": 1}},
        write_file={"tool": "w", "arguments": {"note": "write {path}: {content}"}},
        mcp_call={"tool": "mcp_{server}_{tool}", "arguments": {"payload": "{arguments}"}},
    )
    assert translate(ShellStep(command="ls {x}"), vocabulary) == ("run", {"argv": ["bash", "-c", "ls {x}"], "n": 1})
    assert translate(WriteFileStep(path="a", content="b"), vocabulary) == ("w", {"note": "write a: b"})
    step = McpCallStep(server="s", tool="t", arguments={"k": [1]})
    assert translate(step, vocabulary) == ("mcp_s_t", {"payload": {"k": [1]}})


def test_the_whole_arguments_template_passes_the_mcp_arguments_through():
    vocabulary = ToolVocabulary(
        wire_api="anthropic-messages", mcp_call={"tool": "mcp__{server}__{tool}", "arguments": "{arguments}"}
    )
    step = McpCallStep(server="canary", tool="allowed_echo", arguments={"text": "hi"})
    assert translate(step, vocabulary) == ("mcp__canary__allowed_echo", {"text": "hi"})


def test_a_step_the_vocabulary_has_no_template_for_fails_when_the_scenario_is_loaded():
    model = ScriptedModel()
    with pytest.raises(ScenarioError, match="no template for a fetch_url step"):
        model.load({"steps": [{"fetch_url": {"url": "http://x"}}]}, {"wire_api": "openai-chat"})


def test_a_template_naming_an_unknown_placeholder_is_a_clear_error():
    vocabulary = ToolVocabulary(wire_api="openai-chat", shell={"tool": "bash", "arguments": {"c": "{cmd}"}})
    with pytest.raises(ScenarioError, match=r"\{cmd\} is not a field of a shell step"):
        translate(ShellStep(command="ls"), vocabulary)


def test_a_tool_step_without_any_vocabulary_is_a_clear_error():
    with pytest.raises(ScenarioError, match="needs the harness's tool vocabulary"):
        ScriptedModel({"steps": [{"shell": {"command": "ls"}}]})


@pytest.mark.parametrize("path", sorted(VOCABULARY_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_vocabulary_translates_every_step_it_has_a_template_for(path):
    vocabulary = load_vocabulary(path)
    for step in load_scenario(EVERY_STEP).steps[:-1]:
        if getattr(vocabulary, step.kind) is not None:
            tool, arguments = translate(step, vocabulary)
            assert "{" not in tool and isinstance(arguments, dict)
