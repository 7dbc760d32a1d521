"""`agent-box evidence verify` lists the lines a reader refuses; `agent-box evidence repair` moves them aside."""

from __future__ import annotations

import json

import pytest

from agentbox.cli import main
from agentbox.prove.evidence import append, read_records
from agentbox.prove.evidence_index import lookup
from synthetic import observed

TORN = '{"schema_version": 1, "run_in'
BUILD = dict(
    harness="toy", version="1.0", sha="sha-a", backend="box", kernel="6.1", privilege="root", backend_version="0.8.0"
)


@pytest.fixture
def damaged(tmp_path, record):
    """A store of three good records around a torn line in the middle, a newer schema's record and a torn tail."""
    store = tmp_path / "ev"
    good = [observed(record("ro-shell", "composed", "blocked")) for _ in range(3)]
    newer = json.dumps({**json.loads(good[0].model_dump_json()), "schema_version": 2})
    append(store, good[:1])
    with open(store / "evidence.jsonl", "a") as f:
        f.write(f"{TORN}\n{good[1].model_dump_json()}\n{newer}\n{good[2].model_dump_json()}\n{TORN}")
    return store, good


def test_verify_of_a_clean_store_exits_0(tmp_path, record, capsys):
    append(tmp_path / "ev", [record("ro-shell", "composed", "blocked")])
    assert main(["evidence", "verify", "--evidence", str(tmp_path / "ev")]) == 0
    assert "1 record(s) in 1 file(s)" in capsys.readouterr().out


def test_verify_lists_every_bad_line_with_file_line_and_reason_and_exits_1(damaged, capsys):
    store, _ = damaged
    before = sorted((p.name, p.stat().st_mtime_ns) for p in store.iterdir())
    assert main(["evidence", "verify", "--evidence", str(store)]) == 1
    lines = capsys.readouterr().out.splitlines()
    path = store / "evidence.jsonl"
    assert lines[0] == f"{path}:2: not JSON (a write cut short?)"
    assert lines[1].startswith(f"{path}:4: schema_version 2 is not 1")
    assert lines[2] == f"{path}:6: an incomplete last line (a write cut short)"
    assert lines[3] == f"3 bad line(s) in {store}; move them aside with: agent-box evidence repair --evidence {store}"
    assert sorted((p.name, p.stat().st_mtime_ns) for p in store.iterdir()) == before  # verify writes nothing


def test_verify_as_json_says_which_bad_line_is_a_torn_tail_readers_skip(damaged, capsys):
    store, _ = damaged
    assert main(["evidence", "verify", "--json", "--evidence", str(store)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["files"], data["records"]) == (1, 3)
    assert [(b["line"], b["torn_tail"]) for b in data["bad"]] == [(2, False), (4, False), (6, True)]


def test_repair_moves_bad_lines_to_the_quarantine_and_keeps_every_good_record_in_order(damaged, capsys):
    store, good = damaged
    path = store / "evidence.jsonl"
    assert main(["evidence", "repair", "--evidence", str(store)]) == 0
    out = capsys.readouterr().out.splitlines()
    quarantine = store / "evidence.jsonl.quarantine"
    assert out[0] == f"moved {path}:2 (not JSON (a write cut short?)) to {quarantine}"
    assert out[-1] == "3 bad line(s) moved aside; 3 record(s) kept in order"
    assert list(read_records(store)) == good
    assert quarantine.read_text().splitlines() == [
        TORN,
        json.dumps({**json.loads(good[0].model_dump_json()), "schema_version": 2}),
        TORN,
    ]
    assert main(["evidence", "verify", "--evidence", str(store)]) == 0


def test_repair_as_json_names_each_moved_line_and_its_quarantine(damaged, capsys):
    store, _ = damaged
    assert main(["evidence", "repair", "--json", "--evidence", str(store)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kept"] == 3
    assert [(m["line"], m["quarantine"]) for m in data["moved"]] == [
        (n, str(store / "evidence.jsonl.quarantine")) for n in (2, 4, 6)
    ]


def test_a_launch_lookup_reads_the_repaired_store_afresh(damaged):
    store, good = damaged
    main(["evidence", "repair", "--evidence", str(store)])
    assert [r["id"] for r in lookup(store, **BUILD)] == [good[2].id]  # the latest of their (vector, layer)
    append(store, [good[0].model_copy(update={"id": "after", "timestamp": "2030-01-01T00:00:00.000+00:00"})])
    assert [r["id"] for r in lookup(store, **BUILD)] == ["after"]


def test_repair_of_a_clean_store_leaves_every_file_as_it_was(tmp_path, record, capsys):
    append(tmp_path / "ev", [record("ro-shell", "composed", "blocked")])
    st = (tmp_path / "ev" / "evidence.jsonl").stat()
    assert main(["evidence", "repair", "--evidence", str(tmp_path / "ev")]) == 0
    assert capsys.readouterr().out == f"nothing to repair: no bad line in {tmp_path / 'ev'}\n"
    after = (tmp_path / "ev" / "evidence.jsonl").stat()
    assert (after.st_ino, after.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    assert [p.name for p in (tmp_path / "ev").iterdir()] == ["evidence.jsonl"]


def test_each_file_of_a_store_folder_is_repaired_on_its_own(tmp_path, record):
    kept = [record("ro-shell", "composed", "blocked"), record("ro-shell", "composed", "blocked")]
    append(tmp_path / "ev", kept[:1])
    append(tmp_path / "ev" / "ci", kept[1:])
    with open(tmp_path / "ev" / "ci" / "evidence.jsonl", "a") as f:
        f.write("garbage\n\n")
    main(["evidence", "repair", "--evidence", str(tmp_path / "ev")])
    assert (tmp_path / "ev" / "ci" / "evidence.jsonl.quarantine").read_text() == "garbage\n"
    assert not (tmp_path / "ev" / "evidence.jsonl.quarantine").exists()
    assert sorted(r.id for r in read_records(tmp_path / "ev")) == sorted(r.id for r in kept)


def test_one_file_given_as_the_store_is_verified_and_repaired(tmp_path, record):
    append(tmp_path, [record("ro-shell", "composed", "blocked")])
    with open(tmp_path / "evidence.jsonl", "a") as f:
        f.write("garbage\n")
    assert main(["evidence", "verify", "--evidence", str(tmp_path / "evidence.jsonl")]) == 1
    assert main(["evidence", "repair", "--evidence", str(tmp_path / "evidence.jsonl")]) == 0
    assert main(["evidence", "verify", "--evidence", str(tmp_path / "evidence.jsonl")]) == 0


@pytest.mark.parametrize("command", ["verify", "repair"])
def test_a_store_that_does_not_exist_is_a_typo_exit_2(tmp_path, capsys, command):
    assert main(["evidence", command, "--evidence", str(tmp_path / "evidnce")]) == 2
    assert f"{tmp_path / 'evidnce'}: no such evidence store (a typo?)" in capsys.readouterr().err


def test_the_default_store_is_clean_until_a_suite_writes_it(capsys):
    assert main(["evidence", "verify"]) == 0
    assert main(["evidence", "repair"]) == 0
