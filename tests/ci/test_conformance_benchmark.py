"""The conformance benchmark's floor (benchmarks/conformance.py): the fewest harness starts the batching rules allow
for the records a run made, each at its harness's cheapest start."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "conformance.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("conformance_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(vector: str, layer: str, outcome: str, duration: float, control: str = "not_run", harness="codex"):
    info = {"harness": harness, "version": "0.171.0" if harness else None, "mode": "headless"}
    return {
        "run_info": info,
        "vector_id": vector,
        "layer": layer,
        "outcome": outcome,
        "control_outcome": control,
        "duration": duration,
        "observation": "",
    }


RECORDS = [
    _record("ws-ro-tee", "composed", "blocked", 2.0, "passed"),
    _record("ws-ro-cp", "composed", "blocked", 3.0, "passed"),
    _record("ws-ro-dd", "composed", "escaped", 0.8),  # one start: the cheapest codex start of the run
    _record("ws-ro-tee", "sandbox", "blocked", 0.5, "passed", harness=None),
]


def test_a_plan_the_records_share_costs_two_starts_at_the_harness_cheapest_start(script):
    floor, needed = script._floor(RECORDS)
    assert needed[("codex", "composed")] == (3, 2, 0.8)  # three records, one plan: its attacks' and its controls'
    assert floor == pytest.approx(2 * 0.8 + 0.5)  # and the sandbox record at the cheapest such record


def test_without_an_escape_a_start_costs_half_the_cheapest_record_with_its_control(script):
    assert script._cheapest_start(RECORDS[:2]) == {"codex": 1.0}


def test_a_finished_run_is_read_back_with_its_floor_and_the_fewest_starts_per_record(tmp_path):
    (tmp_path / "evidence.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--records", str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert "codex        composed     3 records, fewest starts    2, cheapest start   0.80s" in done.stdout
    assert "the fewest the batching rules allow: 0.67" in done.stdout


def test_a_folder_without_records_is_an_error_that_says_what_to_give(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--records", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert "give the folder a run's --evidence wrote" in done.stderr
