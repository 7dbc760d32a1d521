"""`agent-box evidence merge`: many stores into one, no duplicates, no loss, nothing written on error."""

from __future__ import annotations

import json

import pytest

from agentbox.cli import main
from agentbox.prove.evidence import EvidenceError, append, read_records
from agentbox.prove.evidence_merge import merge


@pytest.fixture
def stores(tmp_path, matrix):
    """Two CI stores, each with several *.jsonl files (one nested), records interleaved in time."""
    records = matrix.records()
    a, b = tmp_path / "a", tmp_path / "b"
    append(a, records[0::3])
    append(a / "gw1", records[1::3])
    (b / "ci").mkdir(parents=True)
    (b / "ci" / "run.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records[2::3]))
    return a, b, records


def test_every_record_of_every_store_is_written_once_in_time_order(tmp_path, stores):
    a, b, records = stores
    summary = merge([a, b], tmp_path / "out")
    merged = list(read_records(tmp_path / "out"))
    assert merged == sorted(records, key=lambda r: r.when)
    assert (summary.files, summary.read, summary.written, summary.duplicates) == (3, len(records), len(records), 0)
    assert summary.output == str(tmp_path / "out" / "evidence.jsonl")


def test_a_record_seen_in_two_stores_is_kept_once_and_counted(tmp_path, stores):
    a, b, records = stores
    append(b, records[:5])  # b now holds copies of records a already has
    summary = merge([a, b], tmp_path / "out")
    assert (summary.read, summary.written, summary.duplicates) == (len(records) + 5, len(records), 5)
    assert len({r.id for r in read_records(tmp_path / "out")}) == len(records)


def test_one_id_with_two_contents_is_refused_naming_both_files_and_nothing_is_written(tmp_path, stores):
    a, b, records = stores
    append(tmp_path / "c", [records[0].model_copy(update={"outcome": "escaped"})])
    with pytest.raises(
        EvidenceError,
        match=rf"{tmp_path / 'c' / 'evidence.jsonl'}: record {records[0].id} differs "
        rf"from the record with the same id in {a / 'evidence.jsonl'}",
    ):
        merge([a, b, tmp_path / "c"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_record_of_an_unknown_schema_version_is_refused_naming_file_and_line(tmp_path, stores):
    a, b, records = stores
    line = json.loads(records[0].model_dump_json())
    (b / "new.jsonl").write_text(json.dumps({**line, "id": "x" * 32, "schema_version": 7}) + "\n")
    with pytest.raises(EvidenceError, match=rf"{b / 'new.jsonl'}:1: schema_version 7 is not 1") as exc:
        merge([a, b], tmp_path / "out")
    assert exc.value.exit_code == 2
    assert not (tmp_path / "out").exists()


def test_a_merge_into_an_existing_store_keeps_what_it_held(tmp_path, stores):
    a, b, records = stores
    merge([a], tmp_path / "out")
    again = merge([b], tmp_path / "out")  # the earlier merge's records stay: it is one more input
    assert again.inputs == [str(b), str(tmp_path / "out" / "evidence.jsonl")]
    assert {r.id for r in read_records(tmp_path / "out")} == {r.id for r in records}
    assert merge([a, b, tmp_path / "out"], tmp_path / "out").duplicates == len(records)


def test_an_output_holding_other_evidence_files_is_refused_and_left_alone(tmp_path, stores):
    a, b, _ = stores
    with pytest.raises(EvidenceError, match="already holds other evidence files"):
        merge([b], a)
    assert sorted(p.name for p in a.rglob("*")) == ["evidence.jsonl", "evidence.jsonl", "gw1"]


def test_a_missing_store_or_an_empty_one_is_an_error(tmp_path, stores):
    a, _, _ = stores
    with pytest.raises(EvidenceError, match=rf"{tmp_path / 'nope'}: no such evidence store"):
        merge([a, tmp_path / "nope"], tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EvidenceError, match="no evidence records to merge"):
        merge([tmp_path / "empty"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_command_prints_its_summary_as_json(tmp_path, stores, capsys):
    a, b, records = stores
    assert main(["evidence", "merge", str(a), str(b), "-o", str(tmp_path / "out"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == {
        "inputs": [str(a), str(b)],
        "files": 3,
        "read": len(records),
        "written": len(records),
        "duplicates": 0,
        "output": str(tmp_path / "out" / "evidence.jsonl"),
    }


def test_the_command_exits_2_on_a_conflict_naming_both_files(tmp_path, stores, capsys):
    a, b, records = stores
    append(tmp_path / "c", [records[1].model_copy(update={"observation": "edited"})])
    assert main(["evidence", "merge", str(a), str(tmp_path / "c"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert str(a / "gw1" / "evidence.jsonl") in err and str(tmp_path / "c" / "evidence.jsonl") in err
    assert not (tmp_path / "out").exists()
