"""`agent-box evidence claims` and `agent-box evidence list`."""

from __future__ import annotations

import json

import pytest

from agentbox.cli import main
from agentbox.prove.evidence import append


def test_claims_print_one_row_per_harness_version_backend_and_capability(tmp_path, catalogue, record, capsys):
    append(
        tmp_path / "ev", [record("ro-shell", "composed", "blocked", harness="codex", version="0.1.0", backend="bwrap")]
    )
    assert (
        main(["evidence", "claims", "--evidence", str(tmp_path / "ev"), "--catalogue", str(tmp_path / "vectors")]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["tested", "sandbox", "ran"]
    row = lines[1].split()
    assert row[:6] == ["codex", "0.1.0", "bwrap", "root", "headless", "workspace.read_only"] and row[7] == "unverified"
    assert row[8:11] == ["1", "of", "2"] and row[11] == "1/2"
    assert "missing: ro-file-tool" in lines[1]


def test_claims_as_json_carry_the_catalogue_digest_and_every_claim(tmp_path, catalogue, record, capsys):
    append(
        tmp_path / "ev", [record("ro-shell", "composed", "blocked", harness="codex", version="0.1.0", backend="bwrap")]
    )
    assert (
        main(
            [
                "evidence",
                "claims",
                "--json",
                "--evidence",
                str(tmp_path / "ev"),
                "--catalogue",
                str(tmp_path / "vectors"),
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["catalogue_digest"] == catalogue.digest
    assert [(c["harness"], c["claim"], c["unverified"]) for c in data["claims"]] == [
        ("codex", "unverified", {"ro-file-tool": "missing"})
    ]


def test_claims_as_markdown_are_a_table_of_the_same_rows_with_the_key_below(tmp_path, catalogue, record, capsys):
    append(
        tmp_path / "ev", [record("ro-shell", "composed", "blocked", harness="codex", version="0.1.0", backend="bwrap")]
    )
    assert (
        main(
            [
                "evidence",
                "claims",
                "--markdown",
                "--evidence",
                str(tmp_path / "ev"),
                "--catalogue",
                str(tmp_path / "vectors"),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "| harness | version | backend | ran as | mode | capability | declared | claim | "
        "vectors blocked / run | as declared | notes |"
    )
    assert lines[1] == "|" + "---|" * 11
    cells = [cell.strip() for cell in lines[2].strip("|").split("|")]
    assert cells[:8] == ["codex", "0.1.0", "bwrap", "root", "headless", "workspace.read_only", "exact", "unverified"]
    assert cells[8:] == ["1 / 1 of 2", "1/2", "missing: ro-file-tool"]
    assert lines[3] == "" and lines[4].startswith("- run n of m: ")
    assert all(line.startswith("- ") for line in lines[4:])


def test_claims_take_json_or_markdown_not_both(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["evidence", "claims", "--json", "--markdown", "--evidence", str(tmp_path)])
    assert exit_.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_claims_refuse_a_store_of_an_unknown_schema_version_with_exit_2(tmp_path, catalogue, record, capsys):
    line = json.loads(record("ro-shell", "composed", "blocked").model_dump_json())
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "evidence.jsonl").write_text(json.dumps({**line, "schema_version": 2}) + "\n")
    assert (
        main(["evidence", "claims", "--evidence", str(tmp_path / "ev"), "--catalogue", str(tmp_path / "vectors")]) == 2
    )
    assert f"{tmp_path / 'ev' / 'evidence.jsonl'}:1: schema_version 2" in capsys.readouterr().err


def test_claims_without_a_catalogue_are_an_input_error(tmp_path, capsys):
    assert main(["evidence", "claims", "--evidence", str(tmp_path), "--catalogue", str(tmp_path / "none")]) == 2
    assert "no vector catalogue" in capsys.readouterr().err


def test_an_empty_store_says_so_and_succeeds(tmp_path, catalogue, capsys):
    (tmp_path / "ev").mkdir()
    assert (
        main(["evidence", "claims", "--evidence", str(tmp_path / "ev"), "--catalogue", str(tmp_path / "vectors")]) == 0
    )
    assert "no evidence" in capsys.readouterr().out


def test_list_prints_one_line_per_record_newest_last(tmp_path, record, capsys):
    old, new = record("ro-shell", "composed", "blocked"), record("ro-shell", "harness", "escaped")
    append(tmp_path, [new])
    append(tmp_path, [old])
    assert main(["evidence", "list", "--evidence", str(tmp_path)]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["when", "harness", "layer"]
    assert len(lines) == 2 and "composed" in lines[0] and "harness" in lines[1]
    assert main(["evidence", "list", "--json", "--evidence", str(tmp_path)]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [old.id, new.id]


@pytest.mark.parametrize("command", [["claims"], ["claims", "--json"], ["list"], ["list", "--json"]])
def test_a_store_that_does_not_exist_is_a_typo_exit_2_naming_it(tmp_path, capsys, command):
    assert main(["evidence", *command, "--evidence", str(tmp_path / "evidnce")]) == 2
    assert f"{tmp_path / 'evidnce'}: no such evidence store (a typo?)" in capsys.readouterr().err


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path, record):
    import subprocess
    import sys

    append(tmp_path / "ev", [record("ro-shell", "composed", "blocked") for _ in range(3000)])
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentbox.cli", "evidence", "list", "--evidence", str(tmp_path / "ev")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and "Traceback" not in err


def test_claims_never_count_records_made_up_for_tests(abhome, tmp_path, capsys):
    from agentbox.prove.claims import default_catalogue_dir
    from agentbox.prove.evidence import append
    from agentbox.prove.vectors import load_catalogue
    from synthetic_evidence import proving_records

    store = tmp_path / "ev"
    append(
        store,
        proving_records(load_catalogue(default_catalogue_dir()), "codex", "0.171.0", "0" * 64, ["workspace.read_only"]),
    )
    assert main(["evidence", "claims", "--evidence", str(store)]) == 0
    assert "exact" not in capsys.readouterr().out
