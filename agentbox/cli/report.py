"""`agent-box report`: the compatibility report of evidence stores, as HTML, JSON or Markdown."""

from __future__ import annotations

from agentbox.cli.arguments import CATALOGUE_HELP, command
from agentbox.core import console
from agentbox.core.home import evidence_dir, evidence_store
from agentbox.errors import InputError

__all__ = ["register", "cmd_report"]


def register(sub) -> None:
    rpt = command(
        sub,
        "report",
        "the compatibility report: capabilities x harness versions, as HTML, JSON or Markdown",
        "agent-box report --evidence merged -o report.html --json-out report.json --markdown-out report.md",
        "agent-box report --evidence merged --json",
    )
    rpt.add_argument("--evidence", nargs="+", metavar="DIR", help="evidence stores (default $AGENTBOX_HOME/evidence)")
    rpt.add_argument("-o", "--output", metavar="FILE", help="write the HTML report to FILE")
    rpt.add_argument("--json-out", metavar="FILE", help="write the report model as JSON to FILE")
    rpt.add_argument(
        "--markdown-out", metavar="FILE", help="write a Markdown table to FILE (for a pull-request comment)"
    )
    rpt.add_argument("--json", action="store_true", help="print the report model as JSON to stdout")
    rpt.add_argument("--catalogue", metavar="DIR", help=CATALOGUE_HELP)
    rpt.set_defaults(fn=cmd_report)


def cmd_report(args) -> int:
    # the report (Jinja, pydantic, YAML) loads when it runs: the parser loads every command group's module, and
    # `sandbox run` or `launch` parse whenever their cache cannot answer (benchmarks/sandbox_run.py,
    # benchmarks/launch.py)
    from agentbox.report import generate

    files = [p for p in (args.output, args.json_out, args.markdown_out) if p]
    if not files and not args.json:
        raise InputError("nothing to write: give -o FILE (HTML), --json-out FILE, --markdown-out FILE or --json")
    stores = [evidence_store(e) for e in args.evidence] if args.evidence else [evidence_dir()]
    console.detail(f"evidence stores {', '.join(map(str, stores))}")
    report = generate(
        stores, args.output, json_path=args.json_out, markdown_path=args.markdown_out, catalogue_dir=args.catalogue
    )
    summary = f"report of {report.recorded.records} record(s), {len(report.columns)} column(s)" + (
        f": {', '.join(map(str, files))}" if files else ""
    )
    if args.json:  # stdout is the report model alone; the summary is progress
        print(report.model_dump_json(indent=2))
        console.note(summary)
    else:
        print(summary)
    return 0
