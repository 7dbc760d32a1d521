"""What Hermes runs on its own at start-up, seen through the programs it finds on PATH: python3, python and pip
stand in front of the real ones, log each call to the workspace, and hand it on. Hermes' environment probe ran
`python3 -c`, `python -c` and `python3 -m pip --version` at every start to describe the host's Python in the
system prompt (about a tenth of a start's CPU, docs/harnesses/hermes.md); the compiled
`agent.environment_probe: false` stops it. The control is the same start with the key turned back on: the log
must see the probe then, or it proves nothing. (The model's own commands are no check: Hermes' terminal runs
them in a login shell, whose PATH is /etc/profile's.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentbox.testing.fixtures import greeting_run

pytestmark = [pytest.mark.smoke, pytest.mark.harness("hermes")]

LOGGED = ("python3", "python", "pip", "pip3")
PROBE_OFF, PROBE_ON = "environment_probe: false", "environment_probe: true"


@pytest.mark.parametrize("compiled", ["as compiled", "control: probe on"])
def test_a_start_runs_no_python_toolchain_probe(
    compiled, harness, scripted_model, agentbox_workspace, run_harness, tmp_path, monkeypatch
):
    if compiled != "as compiled":
        if not _has_the_probe(harness):
            pytest.skip(f"Hermes {harness.version} has no environment probe (tools/env_probe.py) to turn back on")
        _turn_the_probe_back_on(harness, monkeypatch)
    log = agentbox_workspace.project / "calls.log"
    shims = _logging_shims(tmp_path / "shims", log)
    greeting_run(
        harness,
        scripted_model,
        agentbox_workspace,
        run_harness,
        extra_env={"PATH": f"{shims}:{os.environ['PATH']}"},
        binds=(str(shims),),
    )
    calls = log.read_text().splitlines() if log.exists() else []
    if compiled == "as compiled":
        assert calls == [], f"Hermes ran python or pip on its own at start-up: {calls}"
    else:
        assert "python3 -m pip --version" in calls, f"the log sees the probe when it is on: {calls}"


def _logging_shims(folder, log):
    folder.mkdir()
    for name in LOGGED:
        real = shutil.which(name)
        if real is not None:
            shim = folder / name
            shim.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\nexec {real} "$@"\n')
            shim.chmod(0o755)
    return folder


def _has_the_probe(harness) -> bool:
    venv = Path(harness.binary).parents[1]  # <venv>/bin/hermes
    return any(venv.glob("lib/python*/site-packages/tools/env_probe.py"))


def _turn_the_probe_back_on(harness, monkeypatch):
    adapter_class = type(harness.adapter())
    compile_as_shipped = adapter_class.compile

    def compile_with_the_probe(self, profile, context):
        result = compile_as_shipped(self, profile, context)
        assert any(PROBE_OFF in a.content for a in result.artifacts), "the plan turns the probe off"
        artifacts = tuple(
            a.model_copy(update={"content": a.content.replace(PROBE_OFF, PROBE_ON)}) for a in result.artifacts
        )
        return result.model_copy(update={"artifacts": artifacts})

    monkeypatch.setattr(adapter_class, "compile", compile_with_the_probe)
