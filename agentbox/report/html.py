"""The report as one self-contained HTML page (Jinja2; CSS and script inline, no remote asset).

The page renders the matrix itself, so it reads without a script, and embeds the report model once
as JSON; the drill-downs, filters and the version diff are built from that data by the page's
script when used, which keeps a page of many versions small and quick to write.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import groupby
from pathlib import Path

from agentbox.report.legend import MARKS, layer_word
from agentbox.report.model import Report

__all__ = ["render_html"]


@lru_cache(maxsize=1)
def _template():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2")


def _embedded(report: Report) -> str:
    # Inside <script> only "</script" could end the block early; "<", ">" and "&" can only occur in
    # JSON strings, where their \u escapes parse back to the same text.
    text = report.model_dump_json()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(report: Report) -> str:
    from markupsafe import Markup

    index = {(cell.column, cell.capability): i for i, cell in enumerate(report.cells)}
    rows = [(cap, [(index.get((col.key, cap)), col) for col in report.columns]) for cap in report.capabilities]
    groups = [(harness, len(list(cols))) for harness, cols in groupby(report.columns, key=lambda c: c.harness)]
    return _template().render(
        report=report,
        rows=rows,
        groups=groups,
        marks=MARKS,
        layer_word=layer_word,
        states={s.state: s for s in report.states},
        data=Markup(_embedded(report)),
    )
