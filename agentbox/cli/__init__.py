"""The `agent-box` command line. Parsing only: each subcommand hands off to its module, imported lazily
so that the hot paths (`sandbox run`, `launch`) pay for nothing they do not use."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from agentbox.core import console

if TYPE_CHECKING:  # argparse loads lazily: a cached launch never parses (benchmarks/launch.py)
    import argparse

__all__ = ["main"]


def _profile_and_probe(args) -> tuple:
    from agentbox.harnesses.installs import find_binary
    from agentbox.core.profile import load_profile

    loaded = load_profile(args.profile)
    console.detail(f"profile {loaded.source} ({loaded.profile.harness})")
    probe = None
    binary = getattr(args, "binary", None)
    if binary is None and getattr(args, "harness_version", None) is None:
        found = find_binary(loaded.profile.harness)
        if found is None:
            from agentbox.errors import HarnessError

            raise HarnessError(
                f"{loaded.profile.harness} is not installed (neither under $AGENTBOX_HOME/harnesses "
                f"nor on PATH): agent-box harness install {loaded.profile.harness}@VERSION, give "
                "--binary PATH, or --harness-version VERSION to compile for a version without its binary"
            )
        from agentbox.run.launch_plan import probe_and_check

        # the installed binary: probed once, with what a cached answer must find unchanged (`output_cache`)
        probe, args.probe_check = probe_and_check(loaded, None, getattr(args, "cwd", None))
        console.detail(f"probed {probe.binary}: version {probe.version}, build {probe.sha256 or '-'}")
    elif binary is not None:
        from agentbox.compile.adapters import get_adapter
        from agentbox.run.launch_plan import refuse_planted

        refuse_planted(loaded, getattr(args, "cwd", None), binary)
        probe, _ = get_adapter(loaded.profile.harness).known_probe(binary)
        console.detail(f"probed {probe.binary}: version {probe.version}, build {probe.sha256 or '-'}")
    else:
        console.detail(f"no binary probed; compiling for version {getattr(args, 'harness_version', None)}")
    return loaded, probe


def _compile(args):
    from agentbox.compile.compiler import compile_plan
    from agentbox.compile.mcp_inventory import for_profile

    loaded, probe = _profile_and_probe(args)
    plan = compile_plan(
        loaded,
        args.cwd,
        harness_version=args.harness_version,
        probe=probe,
        **for_profile(loaded.profile).compile_args(),
    )
    check = getattr(args, "probe_check", None)
    if check is not None and not loaded.profile.permission_intent.mcp.tools:
        from agentbox.run.launch_plan import surfaces_check

        args.cache_check = {**check, "surfaces": surfaces_check(plan)}
    return plan


def cmd_capabilities(args) -> int:
    from agentbox.compile.adapters import get_adapter
    from agentbox.core.table import table

    loaded, probe = _profile_and_probe(args)
    adapter = get_adapter(loaded.profile.harness)
    version = probe.version if probe else args.harness_version
    reports = adapter.capabilities(version, loaded.profile.permission_intent)
    if args.json:
        print(
            json.dumps(
                {
                    "harness": adapter.name,
                    "version": version,
                    "dialect": adapter.declarations.dialect_for(version),
                    "probe": probe.model_dump() if probe else None,
                    "capabilities": [r.model_dump(mode="json") for r in reports],
                },
                indent=2,
            )
        )
    else:
        print(f"{adapter.name} {version or '(version unknown)'} dialect {adapter.declarations.dialect_for(version)}")
        if probe and probe.problem:
            print(f"  note: {probe.problem}")
        rows = [
            (
                r.capability,
                r.support,
                r.reason + (f"  bypass: {', '.join(r.bypass_surfaces)}" if r.bypass_surfaces else ""),
            )
            for r in reports
        ]
        print("\n".join(table(("capability", "support", "reason"), rows, indent="  ")))
    return 0


def cmd_compile(args) -> int:
    from agentbox.compile.compiler import refusal_message
    from agentbox.core.table import table

    plan = _compile(args)
    if args.json:
        print(json.dumps(plan.to_json(), indent=2, sort_keys=True))
    else:
        print(f"plan {plan.hash}")
        rows = [(i.item, i.capability, i.requirement, i.effective) for i in plan.items]
        print("\n".join(table(("item", "capability", "requirement", "effective"), rows, indent="  ")))
    if plan.errors:
        print(refusal_message(plan), file=sys.stderr)
        return 3
    for w in plan.warnings:
        console.warn(w)
    return 0


def cmd_explain(args) -> int:
    from agentbox.compile.explain import explain, explanation

    plan = _compile(args)
    if args.json:
        print(json.dumps(explanation(plan), indent=2))
    else:
        sys.stdout.write(explain(plan))
    return 3 if plan.errors else 0


def cmd_sandbox_run(args) -> int:
    from agentbox.errors import InputError
    from agentbox.run.sandbox_command import parse_resolve, sandbox_run

    cmd = args.cmd
    if not cmd:
        raise InputError(
            "give a command after --: agent-box sandbox run PROFILE [--cwd DIR] -- CMD...", field="sandbox run"
        )
    resolve = {}
    for spec in args.egress_resolve:
        pair = parse_resolve(spec)
        if pair is None:
            raise InputError("expected NAME=ADDRESS, ADDRESS an IP address", field=f"--egress-resolve {spec}")
        resolve[pair[0]] = pair[1]
    return sandbox_run(args.profile, args.cwd, cmd, resolve=resolve, egress_log=args.egress_log)


def cmd_harness_install(args) -> int:
    from agentbox.harnesses.installs import install, parse_spec
    from agentbox.harnesses.matrix import load_matrix

    log = (lambda s: print(s, file=sys.stderr)) if not args.quiet else (lambda s: None)
    todo: list[tuple[str, str]] = []
    if args.matrix:
        matrix = load_matrix(args.matrix)
        todo += [(n, v) for n, vs in matrix.harnesses.items() for v in vs]
        todo += list(matrix.acp_adapters.items())
    todo += [parse_spec(spec) for spec in args.specs]
    if not todo:
        from agentbox.errors import InputError

        raise InputError("nothing to install: give NAME@VERSION or --matrix FILE")
    results = [install(n, v, log) for n, v in todo]
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2))
    return 0


def cmd_harness_list(args) -> int:
    from agentbox.harnesses.installs import installed
    from agentbox.core.table import table

    rows = installed(probe=not args.no_probe)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return 0
    if not rows:
        print("no harness installed; try: agent-box harness install --matrix matrices/default.yaml")
        return 0
    print(
        "\n".join(
            table(
                ("harness", "version", "probed", "source", "binary"),
                [(r.name, r.version, r.probed, r.source, r.binary) for r in rows],
            )
        )
    )
    return 0


def cmd_matrix_list(args) -> int:
    from agentbox.cli.matrix import cmd_list

    return cmd_list(args.matrix, args.json)


def cmd_evidence_claims(args) -> int:
    from pathlib import Path

    from agentbox.prove.claims import default_catalogue_dir, reconcile
    from agentbox.errors import InputError
    from agentbox.prove.evidence import read_records
    from agentbox.core.home import evidence_store
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
    from agentbox.core.home import evidence_store
    from agentbox.core.table import table

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
    from agentbox.core.home import evidence_store

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
    from agentbox.core.home import evidence_store

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


def cmd_report(args) -> int:
    from agentbox.errors import InputError
    from agentbox.core.home import evidence_dir, evidence_store
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


def cmd_launch(args) -> int:
    from agentbox.run.launch_plan import launch

    return launch(
        args.profile,
        args.cwd,
        args.harness_args,
        evidence=args.evidence,
        accept_unverified=tuple(args.accept_unverified),
        binary=args.binary,
    )


def _acp_fast(argv: list[str]) -> int | None:
    """`agent-box acp` in its common spelling, parsed without argparse (whose import and parser cost an editor
    waits for at every start); None for anything else (help, a typo), which argparse then handles."""
    from agentbox.run.launch import _parse

    parsed = _parse(argv)
    if parsed is None or parsed["extra"]:
        return None
    from agentbox.acp_endpoint import main as acp_main

    return acp_main(
        parsed["profile"],
        parsed["cwd"],
        evidence=parsed["evidence"],
        accept_unverified=tuple(parsed["accept_unverified"]),
        binary=parsed["binary"],
    )


def cmd_prove(args) -> int:
    from agentbox.cli.prove import prove

    return prove(
        args.profile,
        args.cwd,
        evidence=args.evidence,
        mode=args.mode,
        again=args.again,
        timeout=args.timeout,
        as_json=args.json,
        workers=args.workers,
    )


def cmd_acp(args) -> int:
    from agentbox.acp_endpoint import main as acp_main

    return acp_main(
        args.profile,
        args.cwd,
        evidence=args.evidence,
        accept_unverified=tuple(args.accept_unverified),
        binary=args.binary,
    )


def cmd_runs_list(args) -> int:
    from agentbox.core.home import db_path
    from agentbox.run.runs import RunStore
    from agentbox.core.table import table

    console.detail(f"run database {db_path()}")
    store = RunStore(db_path())
    rows = store.list(limit=args.limit)
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
        return 0
    if not rows:
        print("no runs yet; start one with: agent-box launch PROFILE --cwd DIR")
        return 0
    print(
        "\n".join(
            table(
                ("id", "started", "status", "exit", "harness", "profile", "project"),
                [
                    (
                        r["id"],
                        r["started_at"][:19],
                        r["status"],
                        r["exit_status"],
                        f"{r['harness']} {r['version'] or '?'}",
                        r["profile"],
                        r["project_root"],
                    )
                    for r in rows
                ],
            )
        )
    )
    return 0


def cmd_runs_show(args) -> int:
    from agentbox.core.home import agentbox_home, db_path
    from agentbox.run.runs import RunStore, egress_log
    from agentbox.core.table import table

    console.detail(f"run database {db_path()}")
    run = RunStore(db_path()).get(args.id)
    log = egress_log(str(agentbox_home()), run["id"])
    run["egress_log"] = log if os.path.exists(log) else None
    if args.json:
        print(json.dumps(run, indent=2, sort_keys=True))
        return 0
    for key in (
        "id",
        "status",
        "mode",
        "profile",
        "profile_digest",
        "profile_source",
        "project_root",
        "harness",
        "version",
        "binary",
        "binary_sha256",
        "backend",
        "intent_hash",
        "plan_hash",
        "accepted_items",
        "harness_args",
        "started_at",
        "ended_at",
        "exit_status",
        "cleanup",
    ):
        print(f"{key:<18} {run[key]}")
    print("claims:")
    print(
        "\n".join(
            table(
                ("item", "capability", "requirement", "coverage", "claim", "verdict"),
                [
                    (item, c["capability"], c["requirement"], c["coverage"], c["claim"], c["verdict"])
                    for item, c in run["claims"].items()
                ],
                indent="  ",
            )
        )
    )
    print(f"evidence records   {len(run['evidence_ids'])}")
    if run.get("mode") == "acp":
        print(f"acp sessions       {', '.join(run['acp_sessions']) or '(none opened)'}")
    if run["egress_log"]:
        print(f"egress log         {run['egress_log']}")
    if run["overrides"]:
        print(f"overrides          {json.dumps(run['overrides'])}")
    if run["refusal"]:
        print(run["refusal"])
    return 0


def cmd_completion(args) -> int:
    from agentbox.cli.completion import script

    sys.stdout.write(script(args.shell, _parser()))
    return 0


# -- the parser: one spelling per idea, shared by every command through the helpers below -----------------

PROFILE_HELP = "a profile path, or a name under $AGENTBOX_HOME/profiles"
CWD_HELP = "the project directory (default: the current one)"
JSON_HELP = "print JSON to stdout instead of the table"
EVIDENCE_HELP = "the evidence store, a folder or a .jsonl file (default $AGENTBOX_HOME/evidence)"
CATALOGUE_HELP = "the vector catalogue (default: the package's)"
EXIT_CODES = (
    "exit codes: 0 ok, 1 evidence verify found bad lines, 2 bad input, 3 a required item cannot be\n"
    "  enforced, 4 the sandbox cannot be built, 5 a harness binary problem"
)


def _verbosity(parser, root: bool = False) -> None:
    """-q and -v on every command, before or after the subcommand. Only the root parser has defaults: a
    subcommand's copies default to SUPPRESS, so they set what was given and never reset the root's."""
    import argparse

    quiet, verbose = ({"default": False}, {"default": 0}) if root else ({"default": argparse.SUPPRESS},) * 2
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print no progress or warnings on stderr, only errors", **quiet
    )
    parser.add_argument(
        "-v", "--verbose", action="count", help="say on stderr what was read, probed and run", **verbose
    )


def _command(group, name: str, help_: str, *examples: str, **kwargs):
    """A subcommand whose help describes it and ends with examples, taking -q and -v."""
    import argparse

    epilog = "\n".join(["example:" if len(examples) == 1 else "examples:", *(f"  {e}" for e in examples)])
    parser = group.add_parser(
        name,
        help=help_,
        description=help_[0].upper() + help_[1:] + ".",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )
    _verbosity(parser)
    return parser


def _group(sub, name: str, help_: str, *examples: str):
    """A command of subcommands. Alone (`agent-box evidence`) it prints its help and succeeds, as gh does."""
    parser = _command(sub, name, help_, *examples)
    parser.set_defaults(fn=lambda args: _help(parser))
    return parser.add_subparsers(dest="sub", title="commands", metavar="COMMAND")


def _help(parser) -> int:
    parser.print_help()
    return 0


def _profile(parser, cwd_help: str = CWD_HELP) -> None:
    """The one spelling wherever a profile is taken: PROFILE first, then --cwd DIR (default: here)."""
    parser.add_argument("profile", metavar="PROFILE", help=PROFILE_HELP)
    parser.add_argument("--cwd", default=".", metavar="DIR", help=cwd_help)


def _parser() -> "argparse.ArgumentParser":
    import argparse  # lazy: a cached launch never parses with it

    from agentbox import __version__

    p = argparse.ArgumentParser(
        prog="agent-box",
        description="Compile and prove coding-agent permissions.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(
            [
                EXIT_CODES,
                "",
                "examples:",
                "  agent-box permission explain reviewer --cwd ~/src/app",
                "  agent-box launch reviewer --cwd ~/src/app",
            ]
        ),
    )
    p.add_argument(
        "--version", action="version", version=f"agent-box {__version__}", help="print agent-box's version and exit"
    )
    _verbosity(p, root=True)
    p.set_defaults(fn=lambda args: _help(p))
    sub = p.add_subparsers(dest="command", title="commands", metavar="COMMAND")

    perm = _group(
        sub,
        "permission",
        "inspect how a profile's intent compiles",
        "agent-box permission explain examples/profiles/codex-worker.yaml",
    )
    for name, fn, help_, example in (
        (
            "capabilities",
            cmd_capabilities,
            "what the harness declares it enforces, per intent item",
            "agent-box permission capabilities reviewer --json",
        ),
        (
            "compile",
            cmd_compile,
            "the EffectiveRunPlan with its stable hash; exit 3 when a required item is not exact",
            "agent-box permission compile reviewer --cwd ~/src/app --json",
        ),
        (
            "explain",
            cmd_explain,
            "intent item -> mechanism -> enforcement scope -> bypass -> gap",
            "agent-box permission explain reviewer --cwd ~/src/app",
        ),
    ):
        sp = _command(perm, name, help_, example)
        _profile(
            sp, CWD_HELP + "; what a harness declares does not depend on it" if name == "capabilities" else CWD_HELP
        )
        sp.add_argument(
            "--json",
            action="store_true",
            help="print the explanation as JSON to stdout" if name == "explain" else JSON_HELP,
        )
        sp.add_argument(
            "--harness-version", metavar="VERSION", help="compile for this version without probing a binary"
        )
        sp.add_argument("--binary", metavar="PATH", help="probe this harness binary instead of the installed one")
        sp.set_defaults(fn=fn)

    sbx = _group(sub, "sandbox", "the OS sandbox alone", "agent-box sandbox run reviewer -- ls -la")
    run = _command(
        sbx,
        "run",
        "run CMD under the profile's sandbox and return its exit status",
        "agent-box sandbox run reviewer --cwd ~/src/app -- sh -c 'echo x > f'",
        usage="agent-box sandbox run PROFILE [--cwd DIR] [--egress-log FILE] "
        "[--egress-resolve NAME=ADDRESS]... [-q] [-v] -- CMD...",
    )
    _profile(run, "the workspace the profile's intent applies to (default: the current folder)")
    run.add_argument(
        "--egress-resolve",
        action="append",
        default=[],
        metavar="NAME=ADDRESS",
        help="testing aid: the egress proxy resolves NAME to ADDRESS (names without DNS); repeatable",
    )
    run.add_argument("--egress-log", metavar="FILE", help="keep the egress proxy's decisions (JSON Lines) in FILE")
    run.set_defaults(fn=cmd_sandbox_run, cmd=[])

    har = _group(sub, "harness", "pinned harness installs", "agent-box harness list")
    inst = _command(
        har,
        "install",
        "install NAME@VERSION (or every version a matrix names)",
        "agent-box harness install codex@0.171.0",
        "agent-box harness install --matrix default",
    )
    inst.add_argument(
        "specs",
        nargs="*",
        metavar="NAME@VERSION",
        help="a harness and its version, such as codex@0.171.0 (a bare NAME lists its tested versions)",
    )
    inst.add_argument(
        "--matrix", metavar="FILE", help="a matrices/*.yaml file, or a packaged matrix by name (default, supported)"
    )
    inst.add_argument("--json", action="store_true", help="print what was installed as JSON to stdout")
    inst.set_defaults(fn=cmd_harness_install)
    lst = _command(
        har, "list", "installed and PATH-found harnesses with their probed versions", "agent-box harness list --json"
    )
    lst.add_argument("--json", action="store_true", help=JSON_HELP)
    lst.add_argument("--no-probe", action="store_true", help="skip running each binary's version command")
    lst.set_defaults(fn=cmd_harness_list)

    mtx = _group(sub, "matrix", "harness version matrices", "agent-box matrix list")
    mls = _command(
        mtx,
        "list",
        "one line per harness version (--json: a GitHub Actions job matrix)",
        "agent-box matrix list --matrix matrices/supported.yaml --json",
    )
    mls.add_argument(
        "--matrix",
        action="append",
        default=[],
        metavar="FILE",
        help="a matrices/*.yaml file or a packaged matrix by name, repeatable "
        "(default: every matrices/*.yaml here, else the packaged ones)",
    )
    mls.add_argument("--json", action="store_true", help=JSON_HELP)
    mls.set_defaults(fn=cmd_matrix_list)

    lch = _command(
        sub,
        "launch",
        "start a harness under a profile, if the evidence proves every required item",
        "agent-box launch reviewer --cwd ~/src/app",
        "agent-box launch reviewer --accept-unverified shell -- --model gpt-5",
        usage="agent-box launch PROFILE [--cwd DIR] [--evidence DIR] [--accept-unverified ITEM]... "
        "[--binary PATH] [-q] [-v] [-- HARNESS ARGS...]",
    )
    _profile(lch)
    lch.add_argument("--evidence", metavar="DIR", help=EVIDENCE_HELP)
    lch.add_argument(
        "--accept-unverified",
        action="append",
        default=[],
        metavar="ITEM",
        help="run past this required item (a profile item or its capability) if its claim is only "
        "unverified, never refuted or partial; repeat it for each item",
    )
    lch.add_argument("--binary", metavar="PATH", help="launch this harness binary instead of the installed one")
    lch.set_defaults(fn=cmd_launch, harness_args=[])

    prv = _command(
        sub,
        "prove",
        "run exactly the escape vectors a profile's required items need on its harness build, "
        "then say whether launch would pass",
        "agent-box prove reviewer --cwd ~/src/app",
        "agent-box prove reviewer --mode acp --json",
    )
    _profile(prv)
    prv.add_argument(
        "--mode",
        choices=("tui", "headless", "acp"),
        default="tui",
        help="the launch mode to prove: tui (what `agent-box launch` starts, the default), acp (what "
        "`agent-box acp` starts) or headless",
    )
    prv.add_argument("--evidence", metavar="DIR", help=EVIDENCE_HELP)
    prv.add_argument(
        "--again",
        action="store_true",
        help="run every required item's vectors, not only those of the items the gate refuses",
    )
    prv.add_argument("--timeout", type=float, metavar="SECONDS", help="bound on each harness run (default 120)")
    prv.add_argument("--workers", type=int, metavar="N", help="harness runs at once (default: one per core)")
    prv.add_argument(
        "--json",
        action="store_true",
        help="print the passes, the items' claims and the gate's answer "
        "as JSON to stdout (pytest's progress goes to stderr)",
    )
    prv.set_defaults(fn=cmd_prove)

    acp = _command(
        sub,
        "acp",
        "serve an editor as an ACP agent on stdio: gate, then the harness's ACP agent in the sandbox",
        "agent-box acp reviewer --cwd ~/src/app",
        'Zed settings.json: "agent_servers": {"Agent-Box reviewer": {"command": "agent-box", '
        '"args": ["acp", "reviewer", "--cwd", "/path/to/project"]}}',
    )
    acp.description = (
        "Speaks the Agent Client Protocol on stdin/stdout, for an editor to start as its agent server. "
        "Gates like launch (on evidence taken in ACP mode); a refusal answers the client's initialize "
        "with an error naming the items and exits 3 before anything starts. Otherwise the profile's "
        "harness runs as an ACP agent inside the sandbox, and what the client would do for it outside "
        "(file reads and writes, terminals, permission answers) is held to the intent."
    )
    _profile(acp)
    acp.add_argument("--evidence", metavar="DIR", help=EVIDENCE_HELP)
    acp.add_argument(
        "--accept-unverified",
        action="append",
        default=[],
        metavar="ITEM",
        help="run past this required item if its claim is only unverified; repeat it for each item",
    )
    acp.add_argument("--binary", metavar="PATH", help="start this harness binary instead of the installed one")
    acp.set_defaults(fn=cmd_acp)

    rns = _group(sub, "runs", "recorded launches", "agent-box runs list")
    rl = _command(rns, "list", "every Run, newest first", "agent-box runs list --limit 5")
    rl.add_argument("--json", action="store_true", help=JSON_HELP)
    rl.add_argument("--limit", type=int, default=None, metavar="N", help="only the newest N runs")
    rl.set_defaults(fn=cmd_runs_list)
    rs = _command(rns, "show", "one Run: its plan, claims, evidence and outcome", "agent-box runs show 3f2a --json")
    rs.add_argument("id", help="a run id (or a unique prefix)")
    rs.add_argument("--json", action="store_true", help="print the Run as JSON to stdout")
    rs.set_defaults(fn=cmd_runs_show)

    evd = _group(sub, "evidence", "what the negative suite recorded", "agent-box evidence claims")
    clm = _command(
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
    els = _command(evd, "list", "every record, newest last", "agent-box evidence list --json")
    els.add_argument("--evidence", metavar="DIR", help=EVIDENCE_HELP)
    els.add_argument("--json", action="store_true", help=JSON_HELP)
    els.set_defaults(fn=cmd_evidence_list)
    mrg = _command(
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
        sp = _command(evd, name, about, f"agent-box evidence {name} --evidence ci-evidence")
        sp.add_argument("--evidence", metavar="DIR", help=EVIDENCE_HELP)
        sp.add_argument("--json", action="store_true", help=JSON_HELP)
        sp.set_defaults(fn=fn)

    rpt = _command(
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

    cmp = _command(
        sub,
        "completion",
        "print a shell completion script, generated from these commands",
        "source <(agent-box completion bash)",
        "agent-box completion fish | source",
    )
    cmp.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete for")
    cmp.set_defaults(fn=cmd_completion)
    return p


# Old spellings that still work: each is rewritten to its one spelling before anything parses it, the hot
# paths included, and shown nowhere. Per command: old option -> new option ("" makes its value the positional
# PROFILE). `report --json FILE` is the old `--json-out FILE`; a bare `--json` is the new flag.
_RESPELLED = {
    ("sandbox", "run"): {"--profile": "", "--workspace": "--cwd"},
    ("report",): {"--json": "--json-out", "--markdown": "--markdown-out"},
}


def _respell(argv: list[str]) -> list[str]:
    cut = argv.index("--") if "--" in argv else len(argv)
    head, tail = argv[:cut], argv[cut:]
    start = 0
    while start < len(head) and head[start] in console.FLAGS:
        start += 1
    for command, renames in _RESPELLED.items():
        if tuple(head[start : start + len(command)]) == command:
            return _renamed(head, start + len(command), renames) + tail
    return argv


def _renamed(words: list[str], start: int, renames: dict[str, str]) -> list[str]:
    out, positional, i = words[:start], [], start
    while i < len(words):
        name, eq, value = words[i].partition("=")
        following = words[i + 1] if i + 1 < len(words) else None
        # `--json` takes a value only in its old spelling, and never one that looks like an option
        has_value = bool(eq) or (following is not None and (name != "--json" or not following.startswith("-")))
        if name not in renames or not has_value:
            out.append(words[i])
            i += 1
            continue
        if not eq:
            assert following is not None  # has_value: the next word is the value
            value = following
        new = renames[name]
        console.deprecated(f"{name} {value}", f"{new} {value}" if new else f"{' '.join(words[:start])} {value}")
        if new:
            out += [new, value]
        else:
            positional.append(value)
        i += 1 if eq else 2
    return out[:start] + positional + out[start:]


def _remembered(args, argv: list[str]) -> int:
    """Run compile or explain, passing its output through, and keep the answer for `output_cache`."""
    import contextlib
    import io

    from agentbox.run.output_cache import remember

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = args.fn(args)
    finally:
        sys.stdout.write(out.getvalue())
        sys.stderr.write(err.getvalue())
    if getattr(args, "cache_check", None) is not None:
        remember(argv, args.cache_check, out.getvalue(), err.getvalue(), code)
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    from agentbox.errors import AgentBoxError

    console.set_level()  # main() runs many times in one test process: each call starts at the default
    try:
        start = 0
        while start < len(argv) and console.take_flag(argv[start]):  # `agent-box -q launch ...` stays hot
            start += 1
        argv = _respell(argv)  # keeps the leading flags where they are
        words = argv[start:]
        if words[:2] == ["sandbox", "run"]:
            from agentbox.run.sandbox_command import fast_main

            rc = fast_main(words[2:])
            if rc is not None:
                return rc
        remembered = start == 0 and words[:1] == ["permission"] and words[1:2] in (["compile"], ["explain"])
        if remembered:
            from agentbox.run.output_cache import fast_main as output_fast

            rc = output_fast(words[1:])
            if rc is not None:
                return rc
        if words[:1] == ["launch"]:
            from agentbox.run.launch import fast_main as launch_fast

            rc = launch_fast(words[1:])
            if rc is not None:
                return rc
        if words[:1] == ["acp"]:
            rc = _acp_fast(words[1:])  # an editor waits for this command's `initialize` answer: no argparse
            if rc is not None:
                return rc
        trailing: list[str] = []
        if (words[:1] == ["launch"] or words[:2] == ["sandbox", "run"]) and "--" in argv:
            # split here: argparse would read the command's (or the harness's) own options as ours
            cut = argv.index("--")
            argv, trailing = argv[:cut], argv[cut + 1 :]
        args = _parser().parse_args(argv)
        console.set_level(args.quiet, args.verbose)
        if args.fn is cmd_launch:
            args.harness_args = trailing
        elif args.fn is cmd_sandbox_run:
            args.cmd = trailing
        if remembered:
            return _remembered(args, words[1:])
        return args.fn(args)
    except AgentBoxError as exc:
        console.error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`agent-box evidence list | head`): stop quietly, as a tool killed by SIGPIPE
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
