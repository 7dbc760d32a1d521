"""The report as Markdown for a pull-request comment: the matrix, what changed, and the legend.

GitHub renders a table no wider than the comment, so a column is one harness version on one
backend (or the backend alone) and a cell is what the HTML page's cell shows, in words: its symbol
and state (the symbol keeps it readable without colour), how many vectors behaved as declared, and
the layer that enforces it. The legend lists the same entries as the page's (`legend`).
"""

from __future__ import annotations

from agentbox.report.legend import MARKS, NOT_APPLICABLE, layer_word
from agentbox.report.model import Cell, Column, Report

__all__ = ["render_markdown"]


def _escape(text: str) -> str:
    # A pipe would end the table cell; a newline would end the table.
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _row(values: list[str]) -> str:
    return "| " + " | ".join(_escape(v) for v in values) + " |"


def _head(col: Column) -> str:
    if col.harness == "-" and col.mode == "acp":  # the ACP endpoint alone, over the backend
        return f"acp endpoint on {col.backend} {col.version} ({col.privilege})"
    if col.harness == "-":  # the sandbox-alone column: its version is the backend's
        return f"{col.backend} {col.version} alone ({col.privilege})"
    via = f" via {col.adapter.label}" if col.adapter is not None else ""
    return f"{col.harness} {col.version}{via} ({col.backend}, {col.privilege}, {col.mode})"


def _cell(cell: Cell, symbols: dict[str, str]) -> str:
    drift = f" {symbols['drift']}drift" if cell.drift else ""
    counts = f"{cell.as_declared}/{cell.total}"
    return f"{symbols[cell.state]} {cell.state}{drift} {counts} · {layer_word(cell.enforced_by)}"


def render_markdown(report: Report) -> str:
    symbols: dict[str, str] = {s.state: s.symbol for s in report.states}
    cells = {(c.column, c.capability): c for c in report.cells}
    lines = [
        "## Agent-Box compatibility report",
        "",
        f"{report.recorded.records} evidence records, recorded {report.recorded.first or '-'} .. "
        f"{report.recorded.last or '-'}; kernel {', '.join(report.host.kernels) or '-'}; "
        f"suite {', '.join(report.host.suite_revisions) or '-'}.",
        "",
    ]
    if not report.columns:
        lines += ["No claims: no record names a vector of this catalogue.", ""]
    else:
        heads = [_head(col) for col in report.columns]
        lines += [_row(["capability", *heads]), "| --- " * (len(heads) + 1) + "|"]
        for cap in report.capabilities:
            row = [cap]
            for col in report.columns:
                cell = cells.get((col.key, cap))
                row.append(NOT_APPLICABLE if cell is None else _cell(cell, symbols))
            lines.append(_row(row))
        lines.append("")
    changed = [(d, c) for d in report.diffs for c in d.changes if c.change != "unchanged"]
    if changed:
        lines += [
            "### Changes between versions",
            "",
            _row(["harness", "from", "to", "capability", "backend", "change"]),
            "| --- " * 6 + "|",
        ]
        lines += [
            _row(
                [
                    d.harness,
                    f"{d.old_version}: {c.old or '-'}",
                    f"{d.new_version}: {c.new or '-'}",
                    c.capability,
                    c.backend,
                    c.change,
                ]
            )
            for d, c in changed
        ]
        lines.append("")
    lines += [
        "Legend:",
        *(f"- {s.symbol} **{s.state}**: {s.meaning}" for s in report.states),
        *(f"- {m.symbol} **{m.name}**: {m.meaning}" for m in MARKS),
    ]
    if report.notes:
        lines += ["", "Notes:", *(f"- {n}" for n in report.notes)]
    return "\n".join(lines) + "\n"
