"""The report model: its pinned JSON Schema, and a report that validates against it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema

import agentbox
from agentbox.report.build import build_report
from agentbox.report.model import Report, json_schema

SCHEMA_FILE = Path(agentbox.__file__).parent / "schemas" / "report.schema.json"


def test_the_schema_file_is_exported_from_the_report_model():
    # Regenerate with: python -m agentbox.report.model --schema > agentbox/schemas/report.schema.json
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()


def test_the_module_prints_the_pinned_file_byte_for_byte():
    # The command the docstring gives for regenerating the file, as it is run.
    out = subprocess.run(
        [sys.executable, "-m", "agentbox.report.model", "--schema"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(agentbox.__file__).parent.parent,
    ).stdout
    assert out == SCHEMA_FILE.read_text()


def test_a_built_report_validates_against_the_schema_and_reads_back_equal(matrix):
    report = build_report(matrix.records(), matrix.catalogue, matrix.declarations)
    data = json.loads(report.model_dump_json())
    jsonschema.validate(data, json_schema())
    assert data["schema_version"] == 1
    assert Report.model_validate(data) == report
