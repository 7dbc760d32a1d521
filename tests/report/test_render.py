"""The HTML page and the Markdown table, rendered from a built report."""

from __future__ import annotations

import html
import json
import re

from agentbox.report.build import build_report
from agentbox.report.html import render_html
from agentbox.report.legend import MARKS, layer_word
from agentbox.report.markdown import render_markdown


def twisted(harness, version, vector, layer, predicted):
    if (harness, version, vector.id, layer) == ("alpha", "1.1.0", "vec-001", "composed"):
        return "escaped", "passed"  # refutes cap01 on alpha 1.1.0
    if (harness, vector.id, layer) == ("bravo", "vec-000", "harness"):
        return "blocked", "passed"  # drift on cap00 for every bravo version
    return predicted


def embedded(html):
    return json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)[1])


def test_the_page_embeds_the_report_once_and_it_reads_back_unchanged(matrix):
    report = build_report(matrix.records(twisted), matrix.catalogue, matrix.declarations)
    html = render_html(report)
    assert embedded(html) == json.loads(report.model_dump_json())
    assert html.count('id="report-data"') == 1


def test_an_observation_cannot_break_out_of_the_page(matrix):
    excerpt = "</script><script>alert(1)</script>\n<b>bold</b> & \u2028"
    records = [r.model_copy(update={"observation": excerpt}) for r in matrix.records()]
    html = render_html(build_report(records, matrix.catalogue, matrix.declarations))
    assert "alert(1)" in html and "<script>alert" not in html and "<b>bold" not in html
    assert excerpt in {o["observation"] for o in embedded(html)["observations"].values()}


def test_every_cell_shows_its_state_by_class_symbol_and_enforcing_layer(matrix):
    report = build_report(matrix.records(twisted), matrix.catalogue, matrix.declarations)
    html = render_html(report)
    tds = re.findall(
        r'<td class="c s-(\w+)( drift)?" data-i="(\d+)"[^>]*><span class="sym">([^<]*)</span>'
        r"<small>([^<]*)</small>",
        html,
    )
    assert len(tds) == len(report.cells)
    symbols = {s.state: s.symbol for s in report.states}
    for state, drift, i, symbol, layer in tds:
        cell = report.cells[int(i)]
        assert (state, bool(drift)) == (cell.state, cell.drift)
        assert symbol == symbols[cell.state] + (symbols["drift"] if cell.drift else "")
        assert layer == {(): "none", ("sandbox",): "sandbox", ("harness",): "harness"}[cell.enforced_by]
    assert {s for s, *_ in tds} == {"exact", "partial", "unsupported", "refuted"} and any(d for _, d, *_ in tds)


def test_the_legend_explains_every_state(matrix):
    report = build_report(matrix.records(), matrix.catalogue, matrix.declarations)
    html = render_html(report)
    for s in report.states:
        assert f'<span class="swatch s-{s.state}">{s.symbol}</span><b>{s.state}</b>: ' in html


def test_the_markdown_has_a_row_per_capability_and_lists_what_changed(matrix):
    report = build_report(matrix.records(twisted), matrix.catalogue, matrix.declarations)
    lines = render_markdown(report).splitlines()
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in lines if line.startswith("| cap0")}
    assert set(rows) == {"cap00.synthetic", "cap01.synthetic", "cap02.synthetic", "cap03.synthetic"}
    columns = [c.key for c in report.columns]
    assert rows["cap01.synthetic"][columns.index("alpha 1.1.0 box root headless")].startswith("! refuted ")
    assert rows["cap00.synthetic"][columns.index("bravo 1.0.0 box root headless")].startswith("✓ exact ~drift ")
    assert "| alpha | 1.0.0: exact | 1.1.0: refuted | cap01.synthetic | box | regressed |" in lines
    assert "| alpha | 1.1.0: refuted | 1.2.0: exact | cap01.synthetic | box | improved |" in lines


def test_a_markdown_cell_shows_what_the_page_shows_in_words(matrix):
    report = build_report(matrix.records(twisted), matrix.catalogue, matrix.declarations)
    lines = render_markdown(report).splitlines()
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in lines if line.startswith("| cap0")}
    columns = [c.key for c in report.columns]
    cell = next(
        c for c in report.cells if c.column == "alpha 1.1.0 box root headless" and c.capability == "cap01.synthetic"
    )
    shown = rows["cap01.synthetic"][columns.index("alpha 1.1.0 box root headless")].removesuffix(" |")
    assert shown == f"! refuted {cell.as_declared}/{cell.total} · {layer_word(cell.enforced_by)}"
    assert cell.as_declared == cell.total - 1  # the refuting escape is the one vector not as declared


def test_the_sandbox_alone_column_is_named_by_its_backend_and_version(matrix):
    report = build_report(matrix.records(), matrix.catalogue, matrix.declarations)
    header = next(line for line in render_markdown(report).splitlines() if line.startswith("| capability"))
    alone = [c for c in report.columns if c.harness == "-"]
    assert alone and all(f"| {c.backend} {c.version} alone ({c.privilege}) |" in header for c in alone)
    assert "sandbox" not in header


def test_the_markdown_legend_explains_every_mark_the_page_legend_does(matrix):
    report = build_report(matrix.records(twisted), matrix.catalogue, matrix.declarations)
    page = re.search(r'<ul class="legend">(.*?)</ul>', render_html(report), re.S)[1]
    marks = re.findall(r'<span class="swatch[^"]*">([^<]*)</span><b>([^<]*)</b>', page)
    assert len(marks) == len(report.states) + len(MARKS)
    markdown = render_markdown(report)
    for symbol, name in marks:
        assert f"- {html.unescape(symbol)} **{html.unescape(name)}**: " in markdown


def test_markdown_cells_cannot_break_the_table(matrix):
    report = build_report(
        matrix.records(harnesses=("alpha",), versions=("1.0.0",)), matrix.catalogue, matrix.declarations
    )
    odd = report.model_copy(
        update={
            "columns": tuple(
                c.model_copy(update={"version": "1|2\n3"}) if c.harness == "alpha" else c for c in report.columns
            )
        }
    )
    header = next(line for line in render_markdown(odd).splitlines() if line.startswith("| capability"))
    assert "alpha 1\\|2 3 (box, root, headless)" in header and header.count(" | ") == len(report.columns)
