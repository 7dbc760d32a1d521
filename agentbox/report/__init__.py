"""The compatibility report: `agent-box report --evidence DIR... [-o report.html] [--json-out F] [--markdown-out F]`.

`build` turns evidence into the report model (`model`), which `html` and `markdown` render; `generate`
ties them together for the command line. Every output is rendered, then written to a temporary file
beside its target, before any target is replaced, so a failure leaves the previous report (or none).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

__all__ = ["generate"]


PathArg = str | os.PathLike


def generate(
    evidence: Iterable[PathArg],
    html: PathArg | None,
    *,
    json_path: PathArg | None = None,
    markdown_path: PathArg | None = None,
    catalogue_dir: PathArg | None = None,
    declarations=None,
):
    """Read the stores, build the report and write the requested outputs; returns the Report.

    `declarations` (a layer name -> Declarations source) defaults to the package's declaration files.
    Each output is optional: `report --json` asks for the model alone.
    """
    from agentbox.core.atomic import write_files
    from agentbox.core.capability import load_declarations
    from agentbox.prove.claims import default_catalogue_dir
    from agentbox.errors import InputError
    from agentbox.prove.evidence_merge import collect
    from agentbox.prove.vectors import load_catalogue
    from agentbox.report.build import build_report
    from agentbox.report.html import render_html
    from agentbox.report.markdown import render_markdown

    wanted = [p for p in (html, json_path, markdown_path) if p is not None]
    if len({Path(p).resolve() for p in wanted}) < len(wanted):
        raise InputError("each output needs its own file", file=", ".join(str(p) for p in wanted))
    catalogue_dir = Path(catalogue_dir or default_catalogue_dir())
    if not any(catalogue_dir.glob("*.yaml")):
        raise InputError("no vector catalogue (*.yaml) here", file=str(catalogue_dir))
    collected = collect(evidence)
    if not collected.records:
        raise InputError(
            "no evidence records here; record some first: agent-box prove PROFILE, or the whole "
            "suite: pytest --agentbox-suite",
            file=", ".join(collected.inputs),
        )
    notes = (
        [f"{collected.duplicates} duplicate record(s) across the stores counted once"] if collected.duplicates else []
    )
    report = build_report(
        collected.records, load_catalogue(catalogue_dir), declarations or load_declarations, notes=notes
    )
    outputs = {html: render_html(report)} if html is not None else {}
    if json_path is not None:
        outputs[json_path] = report.model_dump_json(indent=2) + "\n"
    if markdown_path is not None:
        outputs[markdown_path] = render_markdown(report)
    write_files(outputs)
    return report
