"""The record format: the pinned JSON Schema and the reader's refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentbox
from agentbox.prove.evidence import EvidenceError, append, json_schema, read_records

SCHEMA_FILE = Path(agentbox.__file__).parent / "schemas" / "evidence.schema.json"


def test_the_schema_file_is_exported_from_the_record_model():
    # Regenerate with: python -m agentbox.prove.evidence --schema > agentbox/schemas/evidence.schema.json
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()


def test_the_schema_names_every_run_info_field_the_issue_asks_for():
    run_info = json_schema()["$defs"]["RunInfo"]["properties"]
    assert {
        "harness",
        "version",
        "binary_sha256",
        "dialect",
        "sandbox_backend",
        "sandbox_version",
        "kernel",
        "agentbox_version",
        "suite_revision",
        "catalogue_digest",
    } <= set(run_info)


def test_records_read_back_as_they_were_appended(tmp_path, record):
    written = [record("ro-shell", "composed", "blocked"), record("ro-shell", "harness", "escaped")]
    assert append(tmp_path, written) == 2
    assert list(read_records(tmp_path)) == written


def test_a_record_of_an_unknown_schema_version_is_refused_naming_file_and_line(tmp_path, record):
    append(tmp_path, [record("ro-shell", "composed", "blocked")])
    line = json.loads(record("ro-shell", "composed", "blocked").model_dump_json())
    with open(tmp_path / "evidence.jsonl", "a") as f:
        f.write(json.dumps({**line, "schema_version": 99}) + "\n")
    with pytest.raises(EvidenceError, match=r"evidence\.jsonl:2: schema_version 99 is not 1") as exc:
        list(read_records(tmp_path))
    assert exc.value.exit_code == 2


def test_a_torn_line_with_records_after_it_is_refused_naming_file_and_line(tmp_path, record):
    append(tmp_path, [record("ro-shell", "composed", "blocked")])
    with open(tmp_path / "evidence.jsonl", "a") as f:
        f.write('{"schema_version": 1, "run_in\n' + record("ro-shell", "composed", "blocked").model_dump_json() + "\n")
    with pytest.raises(EvidenceError, match=r"evidence\.jsonl:2: not JSON"):
        list(read_records(tmp_path))


def test_a_record_with_an_unknown_field_is_refused_naming_the_field(tmp_path, record):
    line = json.loads(record("ro-shell", "composed", "blocked").model_dump_json())
    (tmp_path / "evidence.jsonl").write_text(json.dumps({**line, "verdict": "ok"}) + "\n")
    with pytest.raises(EvidenceError, match=r"evidence\.jsonl:1: verdict: Extra inputs"):
        list(read_records(tmp_path))


def test_the_schema_knows_the_inapplicable_outcome_and_the_kernel_facts_it_rests_on():
    schema = json_schema()
    assert "inapplicable" in schema["properties"]["outcome"]["enum"]
    assert schema["$defs"]["RunInfo"]["properties"]["kernel_lacks"]["items"] == {"const": "modules", "type": "string"}


def test_an_inapplicable_record_must_name_the_kernel_features_the_host_lacked(record):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="names the kernel features the host lacked"):
        record("ro-shell", "composed", "inapplicable")
    kept = record("ro-shell", "composed", "inapplicable", kernel_lacks=("modules",))
    assert kept.run_info.kernel_lacks == ("modules",)


def test_records_written_before_kernel_facts_were_recorded_read_as_lacking_nothing(tmp_path, record):
    line = json.loads(record("ro-shell", "composed", "blocked").model_dump_json())
    del line["run_info"]["kernel_lacks"]
    (tmp_path / "evidence.jsonl").write_text(json.dumps(line) + "\n")
    assert [r.run_info.kernel_lacks for r in read_records(tmp_path)] == [()]
