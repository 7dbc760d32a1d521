"""`agent-box evidence claims|list|merge|verify|repair`: what the negative suite recorded, and what it proves."""

from __future__ import annotations

import json
from pathlib import Path

from agentbox.cli.arguments import CATALOGUE_HELP, EVIDENCE_HELP, JSON_HELP, command, group
from agentbox.core import console
from agentbox.core.home import evidence_store
from agentbox.core.table import table
from agentbox.errors import InputError

__all__ = [
    "register",
    "cmd_evidence_claims",
    "cmd_evidence_list",
    "cmd_evidence_merge",
    "cmd_evidence_verify",
    "cmd_evidence_repair",
]

# The handlers import the evidence readers and the catalogue (pydantic, YAML) when they run: the parser loads
# every command group's module, and `sandbox run` or `launch` parse whenever their cache cannot answer
# (benchmarks/sandbox_run.py, benchmarks/launch.py).


def register(sub) -> None:
    evd = group(sub, "evidence", "what the negative suite recorded", "agent-box evidence claims")
    clm = command(
        evd,
        "claims",
        "reconcile declared capabilities with the evidence",
        "agent-box evidence claims --evidence merged --json",
    )
    clm.add_argument("--evidence", metavar="DIR", help=EVIDENCE_HELP)
    clm.add_argument("--catalogue", metavar="DIR", help=CATALOGUE_HELP)
    # Markdown for a documentation page or a pull-request comment: the docs' claims tables are this output.
    clm_format = clm.add_mutually_exclusive_group()
    clm_format.add_argument("--json", action="store_true", help=JSON_HELP)
    clm_format.add_argument("--markdown", action="store_true", help="print the table as Markdown to stdout")
    clm.set_defaults(fn=cmd_evidence_claims)
    els = command(evd, "list", "every record, newest last", "agent-box evidence list --json")
    els.add_argument("--evidence", metavar="DIR", help=EVIDENCE_HELP)
    els.add_argument("--json", action="store_true", help=JSON_HELP)
    els.set_defaults(fn=cmd_evidence_list)
    mrg = command(
        evd,
        "merge",
        "merge evidence stores into one, without duplicates",
        "agent-box evidence merge ci-evidence/*/ -o merged",
    )
    mrg.add_argument("stores", nargs="+", metavar="DIR", help="an evidence store (a folder of *.jsonl) or one file")
    mrg.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="the merged store, DIR/evidence.jsonl (records already there are kept)",
    )
    mrg.add_argument("--json", action="store_true", help="print the summary as JSON to stdout")
    mrg.set_defaults(fn=cmd_evidence_merge)
    for name, fn, about in (
        ("verify", cmd_evidence_verify, "list the lines a reader refuses (file, line, reason); exit 1 if any"),
        ("repair", cmd_evidence_repair, "move bad lines to FILE.quarantine beside their file, keep the rest"),
    ):
        sp = command(evd, name, about, f"agent-box evidence {name} --evidence ci-evidence")
        sp.add_argument("--evidence", metavar="DIR", help=EVIDENCE_HELP)
        sp.add_argument("--json", action="store_true", help=JSON_HELP)
        sp.set_defaults(fn=fn)


def cmd_evidence_claims(args) -> int:
    from agentbox.prove.claims import default_catalogue_dir, reconcile
    from agentbox.prove.evidence import read_records
    from agentbox.prove.vectors import load_catalogue

    catalogue_dir = args.catalogue or default_catalogue_dir()
    if not any(Path(catalogue_dir).glob("*.yaml")):
        raise InputError("no vector catalogue (*.yaml) here", file=str(catalogue_dir))
    store = evidence_store(args.evidence)
    everything = list(read_records(store)) if store.exists() else []
    # a record made up for tests or benchmarks is never a claim's evidence, here as at the gate
    records = [r for r in everything if r.run_info.provenance != "synthetic"]
    console.detail(
        f"{len(everything)} record(s) from {store} ({len(everything) - len(records)} synthetic, left "
        f"out), judged by the catalogue in {catalogue_dir}"
    )
    claims = reconcile(records, load_catalogue(catalogue_dir))
    if args.json:
        print(claims.model_dump_json(indent=2))
    elif not claims.claims:
        print(f"no evidence in {store} for this catalogue; run the escape suite (pytest --agentbox-suite)")
    else:
        print("\n".join(claims.markdown() if args.markdown else claims.lines()))
    return 0


def cmd_evidence_list(args) -> int:
    from agentbox.prove.evidence import read_records

    store = evidence_store(args.evidence)
    indexed = list(enumerate(read_records(store))) if store.exists() else []
    records = [r for _, r in sorted(indexed, key=lambda ir: (ir[1].when, ir[0]))]  # newest last
    console.detail(f"{len(records)} record(s) from {store}")
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
        return 0
    if not records:
        print(
            f"no evidence in {store}; record some: agent-box prove PROFILE, or the whole suite: pytest --agentbox-suite"
        )
        return 0
    rows = [
        (
            r.timestamp,
            f"{r.run_info.harness} {r.run_info.version}"
            if r.run_info.harness
            else f"- {r.run_info.sandbox_backend} {r.run_info.sandbox_version}",
            r.layer,
            r.vector_id,
            r.outcome,
            r.control_outcome,
            r.observation,
        )
        for r in records
    ]
    print("\n".join(table(("when", "harness", "layer", "vector", "outcome", "control", "observation"), rows)))
    return 0


def cmd_evidence_merge(args) -> int:
    from agentbox.prove.evidence_merge import merge

    summary = merge(args.stores, args.output)
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        print(
            f"{summary.written} record(s) from {len(summary.inputs)} store(s) ({summary.files} file(s)) written to "
            f"{summary.output}; {summary.duplicates} duplicate(s) dropped"
        )
    return 0


def cmd_evidence_verify(args) -> int:
    from agentbox.prove.evidence_repair import verify

    store = evidence_store(args.evidence)
    found = verify(store)
    if args.json:
        print(found.model_dump_json(indent=2))
    else:
        for bad in found.bad:
            print(f"{bad.file}:{bad.line}: {bad.reason}")
        if found.bad:
            print(
                f"{len(found.bad)} bad line(s) in {store}; move them aside with: "
                f"agent-box evidence repair --evidence {store}"
            )
        else:
            print(f"{found.records} record(s) in {found.files} file(s) of {store}, no bad line")
    return 1 if found.bad else 0


def cmd_evidence_repair(args) -> int:
    from agentbox.prove.evidence_repair import repair

    store = evidence_store(args.evidence)
    done = repair(store)
    if args.json:
        print(done.model_dump_json(indent=2))
        return 0
    for bad in done.moved:
        print(f"moved {bad.file}:{bad.line} ({bad.reason}) to {bad.quarantine}")
    if done.moved:
        print(f"{len(done.moved)} bad line(s) moved aside; {done.kept} record(s) kept in order")
    else:
        print(f"nothing to repair: no bad line in {store}")
    return 0
