"""The torn-line rule: a crash mid-append never stops a reader, and no record is ever glued onto a torn line."""

from __future__ import annotations

import fcntl
import os
import threading

import pytest

from agentbox.cli import main
from agentbox.prove.evidence import EvidenceError, append, read_records
from agentbox.prove.evidence_index import lookup
from synthetic import observed

TORN = '{"schema_version": 1, "run_in'
BUILD = dict(
    harness="toy", version="1.0", sha="sha-a", backend="box", kernel="6.1", privilege="root", backend_version="0.8.0"
)


def cut_short(store, text=TORN):
    """The file as a writer that crashed mid-line leaves it."""
    with open(store / "evidence.jsonl", "a") as f:
        f.write(text)


def test_a_torn_last_line_is_ignored_with_a_warning(tmp_path, record, capsys):
    kept = record("ro-shell", "composed", "blocked")
    append(tmp_path / "ev", [kept])
    cut_short(tmp_path / "ev")
    assert list(read_records(tmp_path / "ev")) == [kept]
    err = capsys.readouterr().err
    assert f"warning: {tmp_path / 'ev' / 'evidence.jsonl'}:2: an incomplete last line" in err
    assert "agent-box evidence repair --evidence" in err


def test_a_last_line_cut_inside_a_character_is_torn_too(tmp_path, record):
    kept = record("ro-shell", "composed", "blocked")
    append(tmp_path / "ev", [kept])
    with open(tmp_path / "ev" / "evidence.jsonl", "ab") as f:
        f.write('{"observation": "é'.encode()[:-1])
    assert list(read_records(tmp_path / "ev")) == [kept]


def test_a_bad_line_in_the_middle_fails_reads_naming_file_line_and_the_repair_command(tmp_path, record):
    append(tmp_path / "ev", [record("ro-shell", "composed", "blocked")])
    cut_short(tmp_path / "ev", TORN + "\n")  # a writer that ignored the lock appended after the crash
    append(tmp_path / "ev", [record("ro-shell", "composed", "blocked")])
    path = tmp_path / "ev" / "evidence.jsonl"
    with pytest.raises(EvidenceError) as exc:
        list(read_records(tmp_path / "ev"))
    assert str(exc.value).startswith(f"{path}:2: not JSON")
    assert str(exc.value).endswith(f"agent-box evidence repair --evidence {path}")
    assert exc.value.exit_code == 2


def test_a_whole_record_that_only_lacks_its_newline_is_read(tmp_path, record):
    (tmp_path / "ev").mkdir()
    kept = record("ro-shell", "composed", "blocked")
    (tmp_path / "ev" / "evidence.jsonl").write_text(kept.model_dump_json())  # a hand edit that lost the newline
    assert list(read_records(tmp_path / "ev")) == [kept]


def test_claims_exit_0_past_a_torn_last_line(tmp_path, catalogue, record, capsys):
    append(tmp_path / "ev", [record("ro-shell", "composed", "blocked")])
    cut_short(tmp_path / "ev")
    claims = ["evidence", "claims", "--evidence", str(tmp_path / "ev"), "--catalogue", str(tmp_path / "vectors")]
    assert main(claims) == 0
    assert "an incomplete last line" in capsys.readouterr().err


def test_append_moves_a_torn_last_line_to_the_quarantine_before_appending(tmp_path, record, capsys):
    first, second = record("ro-shell", "composed", "blocked"), record("ro-file-tool", "composed", "blocked")
    append(tmp_path / "ev", [first])
    cut_short(tmp_path / "ev")
    append(tmp_path / "ev", [second])
    assert list(read_records(tmp_path / "ev")) == [first, second]
    quarantine = tmp_path / "ev" / "evidence.jsonl.quarantine"
    assert quarantine.read_text() == TORN + "\n"
    assert (
        f"{tmp_path / 'ev' / 'evidence.jsonl'}:2: an incomplete last line (a write cut short) was moved to "
        f"{quarantine}" in capsys.readouterr().err
    )


def test_append_ends_a_whole_last_record_that_lacks_its_newline_instead_of_gluing_onto_it(tmp_path, record):
    (tmp_path / "ev").mkdir()
    first, second = record("ro-shell", "composed", "blocked"), record("ro-file-tool", "composed", "blocked")
    (tmp_path / "ev" / "evidence.jsonl").write_text(first.model_dump_json())
    append(tmp_path / "ev", [second])
    assert list(read_records(tmp_path / "ev")) == [first, second]
    assert not (tmp_path / "ev" / "evidence.jsonl.quarantine").exists()


def test_the_index_skips_a_torn_last_line_as_a_full_scan_does_and_reads_on_once_it_is_moved(tmp_path, record, capsys):
    first, second = (
        observed(record("ro-shell", "composed", "blocked")),
        observed(record("ro-file-tool", "composed", "blocked")),
    )
    append(tmp_path / "ev", [first])
    cut_short(tmp_path / "ev")
    assert [r["id"] for r in lookup(tmp_path / "ev", **BUILD)] == [first.id]
    assert "evidence.jsonl:2: an incomplete last line" in capsys.readouterr().err
    append(tmp_path / "ev", [second])
    assert sorted(r["id"] for r in lookup(tmp_path / "ev", **BUILD)) == sorted([first.id, second.id])


def test_the_index_reads_a_whole_last_record_that_lacks_its_newline_and_what_is_appended_after(tmp_path, record):
    (tmp_path / "ev").mkdir()
    first, second = (
        observed(record("ro-shell", "composed", "blocked")),
        observed(record("ro-file-tool", "composed", "blocked")),
    )
    (tmp_path / "ev" / "evidence.jsonl").write_text(first.model_dump_json())
    assert [r["id"] for r in lookup(tmp_path / "ev", **BUILD)] == [first.id]
    append(tmp_path / "ev", [second])
    assert sorted(r["id"] for r in lookup(tmp_path / "ev", **BUILD)) == sorted([first.id, second.id])


def test_the_index_refuses_a_bad_line_in_the_middle_naming_file_line_and_the_repair_command(tmp_path, record):
    append(tmp_path / "ev", [record("ro-shell", "composed", "blocked")])
    cut_short(tmp_path / "ev", TORN + "\n")
    append(tmp_path / "ev", [record("ro-shell", "composed", "blocked")])
    with pytest.raises(
        EvidenceError,
        match=r"evidence\.jsonl:2: not a readable evidence record .*"
        r"agent-box evidence repair --evidence",
    ):
        lookup(tmp_path / "ev", **BUILD)


def test_a_writer_that_waited_for_a_repair_appends_to_the_repaired_file(tmp_path, record):
    first, second = record("ro-shell", "composed", "blocked"), record("ro-file-tool", "composed", "blocked")
    append(tmp_path / "ev", [first])
    path = tmp_path / "ev" / "evidence.jsonl"
    held = os.open(path, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # as `evidence repair` holds it while it rewrites the file
    writer = threading.Thread(target=append, args=(tmp_path / "ev", [second]))
    writer.start()
    writer.join(0.3)
    assert writer.is_alive()  # waiting for the lock
    (tmp_path / "ev" / "new").write_text(first.model_dump_json() + "\n")
    os.replace(tmp_path / "ev" / "new", path)
    os.close(held)
    writer.join(10)
    assert list(read_records(tmp_path / "ev")) == [first, second]
