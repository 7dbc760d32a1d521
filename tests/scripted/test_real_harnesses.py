"""The real harness binaries complete a scripted shell step against the scripted model, headless."""

from __future__ import annotations

import pytest
from real_harnesses import VOCABULARIES, binary, run

from agentbox.scripted import ScriptedModel

SCENARIO = {"steps": [{"shell": {"command": "echo scripted > proof.txt"}}], "final_text": "scripted run finished"}


@pytest.mark.parametrize("harness_name", ["claude-code", "codex", "opencode", "hermes"])
def test_the_harness_runs_a_scripted_shell_step_that_writes_a_real_file_then_exits_0(harness_name, tmp_path):
    if not binary(harness_name).exists():
        pytest.skip(f"{harness_name} is not installed at {binary(harness_name)}")
    with ScriptedModel(SCENARIO, VOCABULARIES[harness_name]) as model:
        result = run(harness_name, tmp_path, model.base_url)
    assert result.exit_code == 0, result.stderr[-2000:]
    assert (tmp_path / "work" / "proof.txt").read_text() == "scripted\n"
    assert "scripted run finished" in result.stdout
    loop = model.transcript.main_loop()
    assert [r.step_index for r in loop] == [0, None]
    assert loop[0].wire_api == VOCABULARIES[harness_name]["wire_api"]
    assert VOCABULARIES[harness_name]["shell"]["tool"] in model.offered_tools()
    assert [r.step_index for r in model.tool_results()] == [0]
    print(f"{harness_name}: {result.elapsed:.1f}s, {len(model.transcript)} requests")
