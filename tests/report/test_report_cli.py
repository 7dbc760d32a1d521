"""`agent-box report`: the files it writes, its exit codes, and that an error writes nothing."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import pytest

from agentbox.cli import main
from agentbox.prove.evidence import append, read_records
from agentbox.report.model import Report


@pytest.fixture
def store(tmp_path, matrix):
    append(tmp_path / "ev", matrix.records())
    return tmp_path / "ev"


def run(matrix, *args):
    return main(["report", "--catalogue", matrix.catalogue_dir, *map(str, args)])


def test_the_report_writes_html_json_and_markdown(tmp_path, matrix, store, capsys):
    out = tmp_path / "out"
    out.mkdir()
    assert (
        run(
            matrix,
            "--evidence",
            store,
            "-o",
            out / "r.html",
            "--json-out",
            out / "r.json",
            "--markdown-out",
            out / "r.md",
        )
        == 0
    )
    assert "report of 144 record(s), 7 column(s)" in capsys.readouterr().out
    report = Report.model_validate_json((out / "r.json").read_text())
    assert report.recorded.records == 144 and len(report.columns) == 7
    html = (out / "r.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and 'id="report-data"' in html
    md = (out / "r.md").read_text().splitlines()
    assert md[0] == "## Agent-Box compatibility report"
    header = next(line for line in md if line.startswith("| capability |"))
    assert "| alpha 1.0.0 (box, root, headless) |" in header and "| box 1.0 alone (root) |" in header
    assert sum(line.startswith("| cap0") for line in md) == 4


def test_several_stores_make_one_report_and_shared_records_count_once(tmp_path, matrix, store):
    append(
        tmp_path / "ev2",
        matrix.records(versions=("2.0.0",), harnesses=("alpha",), start=datetime(2026, 1, 1, tzinfo=timezone.utc)),
    )
    append(tmp_path / "copy", list(read_records(store))[:3])
    assert (
        run(
            matrix,
            "--evidence",
            store,
            tmp_path / "ev2",
            tmp_path / "copy",
            "-o",
            tmp_path / "r.html",
            "--json-out",
            tmp_path / "r.json",
        )
        == 0
    )
    report = Report.model_validate_json((tmp_path / "r.json").read_text())
    assert "alpha 2.0.0 box root headless" in {c.key for c in report.columns}
    assert "3 duplicate record(s) across the stores counted once" in report.notes


def test_the_html_loads_nothing_from_the_network(tmp_path, matrix, store):
    assert run(matrix, "--evidence", store, "-o", tmp_path / "r.html") == 0
    html = (tmp_path / "r.html").read_text()
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html, re.I)
    assert not re.search(r"<(link|img|iframe)\b|<script[^>]*\bsrc=|@import|url\(", html, re.I)


def test_a_missing_store_exits_2_naming_it_and_writes_nothing(tmp_path, matrix, capsys):
    assert (
        run(matrix, "--evidence", tmp_path / "nope", "-o", tmp_path / "r.html", "--json-out", tmp_path / "r.json") == 2
    )
    assert f"{tmp_path / 'nope'}: no such evidence store" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "r.json").exists()


def test_an_unreadable_evidence_file_exits_2_naming_it(tmp_path, matrix, store, capsys):
    (store / "binary.jsonl").write_bytes(b"\xff\xfe\x00garbage\n")
    assert run(matrix, "--evidence", store, "-o", tmp_path / "r.html") == 2
    assert f"{store / 'binary.jsonl'}:1: not UTF-8 text" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_an_unknown_schema_version_exits_2_naming_file_and_line_and_keeps_the_old_report(
    tmp_path, matrix, store, capsys
):
    (tmp_path / "r.html").write_text("previous report")
    line = json.loads((store / "evidence.jsonl").read_text().splitlines()[0])
    with open(store / "evidence.jsonl", "a") as f:
        f.write(json.dumps({**line, "id": "n" * 32, "schema_version": 2}) + "\n")
    assert run(matrix, "--evidence", store, "-o", tmp_path / "r.html", "--markdown-out", tmp_path / "r.md") == 2
    assert f"{store / 'evidence.jsonl'}:145: schema_version 2 is not 1" in capsys.readouterr().err
    assert (tmp_path / "r.html").read_text() == "previous report" and not (tmp_path / "r.md").exists()


def test_an_empty_store_exits_2(tmp_path, matrix, capsys):
    (tmp_path / "ev").mkdir()
    assert run(matrix, "--evidence", tmp_path / "ev", "-o", tmp_path / "r.html") == 2
    assert "no evidence records here" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_an_output_in_a_missing_folder_exits_2_and_writes_no_other_output(tmp_path, matrix, store, capsys):
    assert run(matrix, "--evidence", store, "-o", tmp_path / "r.html", "--json-out", tmp_path / "no" / "r.json") == 2
    assert f"{tmp_path / 'no'}: no such folder to write into" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_two_outputs_in_one_file_are_refused(tmp_path, matrix, store, capsys):
    assert run(matrix, "--evidence", store, "-o", tmp_path / "r", "--json-out", tmp_path / "r") == 2
    assert "each output needs its own file" in capsys.readouterr().err


def test_json_prints_the_report_model_to_stdout_and_needs_no_file(tmp_path, matrix, store, capsys):
    before = set(tmp_path.iterdir())
    assert run(matrix, "--evidence", store, "--json") == 0
    out, err = capsys.readouterr()
    assert Report.model_validate_json(out).recorded.records == 144
    assert "report of 144 record(s)" in err and set(tmp_path.iterdir()) == before


def test_a_report_with_nothing_to_write_is_an_input_error(tmp_path, matrix, store, capsys):
    assert run(matrix, "--evidence", store) == 2
    assert "nothing to write" in capsys.readouterr().err


def test_the_old_json_and_markdown_file_spellings_still_write_their_files(tmp_path, matrix, store):
    assert (
        run(
            matrix,
            "--evidence",
            store,
            "-o",
            tmp_path / "r.html",
            "--json",
            tmp_path / "r.json",
            "--markdown",
            tmp_path / "r.md",
        )
        == 0
    )
    assert Report.model_validate_json((tmp_path / "r.json").read_text()).recorded.records == 144
    assert (tmp_path / "r.md").read_text().startswith("## Agent-Box compatibility report")
