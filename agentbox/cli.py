"""The `agent-box` command line. Parsing only: each subcommand hands off to its module, imported lazily
so that the hot paths (`sandbox run`, `launch`) pay for nothing they do not use."""

from __future__ import annotations

import json
import os
import sys

__all__ = ["main"]


def _profile_and_probe(args) -> tuple:
    from .installs import find_binary
    from .profile import load_profile

    loaded = load_profile(args.profile)
    probe = None
    binary = getattr(args, "binary", None)
    if binary is None and getattr(args, "harness_version", None) is None:
        found = find_binary(loaded.profile.harness)
        if found is None:
            from .errors import HarnessError

            raise HarnessError(f"{loaded.profile.harness} is not installed (neither under $AGENTBOX_HOME/harnesses "
                               f"nor on PATH): agent-box harness install {loaded.profile.harness}@VERSION, give "
                               "--binary PATH, or --harness-version VERSION to compile for a version without its binary")
        binary = found.binary
    if binary is not None:
        from .adapters import get_adapter

        probe, _ = get_adapter(loaded.profile.harness).known_probe(binary)
    return loaded, probe


def _compile(args):
    from .compiler import compile_plan

    from .mcp_inventory import for_profile

    loaded, probe = _profile_and_probe(args)
    return compile_plan(loaded, args.cwd, harness_version=args.harness_version, probe=probe,
                        **for_profile(loaded.profile).compile_args())


def cmd_capabilities(args) -> int:
    from .adapters import get_adapter

    loaded, probe = _profile_and_probe(args)
    adapter = get_adapter(loaded.profile.harness)
    version = probe.version if probe else args.harness_version
    reports = adapter.capabilities(version, loaded.profile.permission_intent)
    if args.json:
        print(json.dumps({"harness": adapter.name, "version": version,
                          "dialect": adapter.declarations.dialect_for(version),
                          "probe": probe.model_dump() if probe else None,
                          "capabilities": [r.model_dump(mode="json") for r in reports]}, indent=2))
    else:
        print(f"{adapter.name} {version or '(version unknown)'} dialect {adapter.declarations.dialect_for(version)}")
        if probe and probe.problem:
            print(f"  note: {probe.problem}")
        for r in reports:
            bypass = f"  bypass: {', '.join(r.bypass_surfaces)}" if r.bypass_surfaces else ""
            print(f"  {r.capability:<28} {r.support:<11} {r.reason}{bypass}")
    return 0


def cmd_compile(args) -> int:
    from .compiler import refusal_message

    plan = _compile(args)
    if args.json:
        print(json.dumps(plan.to_json(), indent=2, sort_keys=True))
    else:
        print(f"plan {plan.hash}")
        for item in plan.items:
            print(f"  {item.item:<16} {item.capability:<28} {item.requirement:<9} {item.effective}")
    if plan.errors:
        print(refusal_message(plan), file=sys.stderr)
        return 3
    for w in plan.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


def cmd_explain(args) -> int:
    from .explain import explain

    plan = _compile(args)
    sys.stdout.write(explain(plan))
    return 3 if plan.errors else 0


def cmd_sandbox_run(args) -> int:
    from .errors import InputError
    from .sandbox.runner import parse_resolve, sandbox_run

    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not cmd:
        raise InputError("give a command after --", field="sandbox run")
    resolve = {}
    for spec in args.egress_resolve:
        pair = parse_resolve(spec)
        if pair is None:
            raise InputError("expected NAME=ADDRESS, ADDRESS an IP address", field=f"--egress-resolve {spec}")
        resolve[pair[0]] = pair[1]
    return sandbox_run(args.profile, args.workspace, cmd, resolve=resolve, egress_log=args.egress_log)


def cmd_harness_install(args) -> int:
    from .installs import install, load_matrix, parse_spec

    log = (lambda s: print(s, file=sys.stderr)) if not args.quiet else (lambda s: None)
    todo: list[tuple[str, str]] = []
    if args.matrix:
        matrix = load_matrix(args.matrix)
        todo += [(n, v) for n, vs in matrix.harnesses.items() for v in vs]
        todo += list(matrix.acp_adapters.items())
    todo += [parse_spec(spec) for spec in args.specs]
    if not todo:
        from .errors import InputError

        raise InputError("nothing to install: give NAME@VERSION or --matrix FILE")
    results = [install(n, v, log) for n, v in todo]
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2))
    return 0


def cmd_harness_list(args) -> int:
    from .installs import installed

    rows = installed(probe=not args.no_probe)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return 0
    if not rows:
        print("no harness installed; try: agent-box harness install --matrix matrices/default.yaml")
    for r in rows:
        probed = r.probed if r.probed is not None else "-"
        print(f"{r.name:<18} {r.version:<10} probed {probed:<10} {r.source:<8} {r.binary}")
    return 0


def cmd_matrix_list(args) -> int:
    from .matrix import cmd_list

    return cmd_list(args.matrix, args.json)


def cmd_evidence_claims(args) -> int:
    from pathlib import Path

    from .claims import default_catalogue_dir, reconcile
    from .errors import InputError
    from .evidence import read_records
    from .home import evidence_store
    from .vectors import load_catalogue

    catalogue_dir = args.catalogue or default_catalogue_dir()
    if not any(Path(catalogue_dir).glob("*.yaml")):
        raise InputError("no vector catalogue (*.yaml) here", file=str(catalogue_dir))
    store = evidence_store(args.evidence)
    records = list(read_records(store)) if store.exists() else []
    table = reconcile(records, load_catalogue(catalogue_dir))
    if args.json:
        print(table.model_dump_json(indent=2))
    elif not table.claims:
        print(f"no evidence in {store} for this catalogue; run the negative suite (pytest negative)")
    else:
        print("\n".join(table.lines()))
    return 0


def cmd_evidence_list(args) -> int:
    from .evidence import read_records
    from .home import evidence_store

    store = evidence_store(args.evidence)
    indexed = list(enumerate(read_records(store))) if store.exists() else []
    records = [r for _, r in sorted(indexed, key=lambda ir: (ir[1].when, ir[0]))]  # newest last
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
        return 0
    for r in records:
        ri = r.run_info
        who = f"{ri.harness} {ri.version}" if ri.harness else f"- {ri.sandbox_backend} {ri.sandbox_version}"
        print(f"{r.timestamp}  {who:<24} {r.layer:<8} {r.vector_id:<32} {r.outcome:<8} "
              f"control {r.control_outcome:<7} {r.observation}")
    return 0


def cmd_evidence_merge(args) -> int:
    from .evidence_merge import merge

    summary = merge(args.stores, args.output)
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        print(f"{summary.written} record(s) from {len(summary.inputs)} store(s) ({summary.files} file(s)) written to "
              f"{summary.output}; {summary.duplicates} duplicate(s) dropped")
    return 0


def cmd_evidence_verify(args) -> int:
    from .evidence_repair import verify
    from .home import evidence_store

    store = evidence_store(args.evidence)
    found = verify(store)
    if args.json:
        print(found.model_dump_json(indent=2))
    else:
        for bad in found.bad:
            print(f"{bad.file}:{bad.line}: {bad.reason}")
        if found.bad:
            print(f"{len(found.bad)} bad line(s) in {store}; move them aside with: "
                  f"agent-box evidence repair --evidence {store}")
        else:
            print(f"{found.records} record(s) in {found.files} file(s) of {store}, no bad line")
    return 1 if found.bad else 0


def cmd_evidence_repair(args) -> int:
    from .evidence_repair import repair
    from .home import evidence_store

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
    from .home import evidence_dir, evidence_store
    from .report import generate

    stores = [evidence_store(e) for e in args.evidence] if args.evidence else [evidence_dir()]
    report = generate(stores, args.output, json_path=args.json,
                      markdown_path=args.markdown, catalogue_dir=args.catalogue)
    written = ", ".join(str(p) for p in (args.output, args.json, args.markdown) if p)
    print(f"report of {report.recorded.records} record(s), {len(report.columns)} column(s): {written}")
    return 0


def cmd_launch(args) -> int:
    from .launch_plan import launch

    return launch(args.profile, args.cwd, args.harness_args, evidence=args.evidence,
                  accept_unverified=tuple(args.accept_unverified), binary=args.binary)


def cmd_acp(args) -> int:
    from .acp_endpoint import main as acp_main

    return acp_main(args.profile, args.cwd, evidence=args.evidence, accept_unverified=tuple(args.accept_unverified),
                    binary=args.binary)


def cmd_runs_list(args) -> int:
    from .home import db_path
    from .runs import RunStore

    store = RunStore(db_path())
    rows = store.list(limit=args.limit)
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
        return 0
    if not rows:
        print("no runs yet; start one with: agent-box launch PROFILE --cwd DIR")
    for r in rows:
        exit_status = "-" if r["exit_status"] is None else str(r["exit_status"])
        print(f"{r['id']}  {r['started_at'][:19]}  {r['status']:<11} exit {exit_status:<4} "
              f"{r['harness']} {r['version'] or '?'}  {r['profile']}  {r['project_root']}")
    return 0


def cmd_runs_show(args) -> int:
    from .home import agentbox_home, db_path
    from .runs import RunStore, egress_log

    run = RunStore(db_path()).get(args.id)
    log = egress_log(str(agentbox_home()), run["id"])
    run["egress_log"] = log if os.path.exists(log) else None
    if args.json:
        print(json.dumps(run, indent=2, sort_keys=True))
        return 0
    for key in ("id", "status", "mode", "profile", "profile_digest", "profile_source", "project_root", "harness", "version",
                "binary", "binary_sha256", "backend", "intent_hash", "plan_hash", "accepted_items",
                "harness_args", "started_at", "ended_at", "exit_status", "cleanup"):
        print(f"{key:<18} {run[key]}")
    print("claims:")
    for item, c in run["claims"].items():
        print(f"  {item:<16} {c['capability']:<28} {c['requirement']:<9} coverage {c['coverage']:<11} "
              f"claim {c['claim']:<10} {c['verdict']}")
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


def _parser() -> "argparse.ArgumentParser":
    import argparse  # lazy: a cached launch never parses with it

    p = argparse.ArgumentParser(prog="agent-box", description="Compile and prove coding-agent permissions.")
    sub = p.add_subparsers(dest="command", required=True)

    perm = sub.add_parser("permission", help="inspect how a profile's intent compiles").add_subparsers(dest="sub", required=True)
    for name, fn, needs_cwd in (("capabilities", cmd_capabilities, False), ("compile", cmd_compile, True),
                                ("explain", cmd_explain, True)):
        sp = perm.add_parser(name)
        sp.add_argument("profile", help="a profile path or a name under $AGENTBOX_HOME/profiles")
        if needs_cwd:
            sp.add_argument("--cwd", required=True, help="the project directory the run would work in")
        if name != "explain":
            sp.add_argument("--json", action="store_true")
        sp.add_argument("--harness-version", help="compile for this version without probing a binary")
        sp.add_argument("--binary", help="probe this harness binary instead of the installed one")
        sp.set_defaults(fn=fn)

    sbx = sub.add_parser("sandbox", help="the OS sandbox alone").add_subparsers(dest="sub", required=True)
    run = sbx.add_parser("run", help="run CMD under the profile's sandbox and return its exit status")
    run.add_argument("--profile", required=True)
    run.add_argument("--workspace", required=True)
    run.add_argument("--egress-resolve", action="append", default=[], metavar="NAME=ADDRESS",
                     help="testing aid: the egress proxy resolves NAME to ADDRESS (names without DNS); repeatable")
    run.add_argument("--egress-log", metavar="FILE", help="keep the egress proxy's decisions (JSON Lines) in FILE")
    run.add_argument("cmd", nargs=argparse.REMAINDER)
    run.set_defaults(fn=cmd_sandbox_run)

    har = sub.add_parser("harness", help="pinned harness installs").add_subparsers(dest="sub", required=True)
    inst = har.add_parser("install", help="install NAME@VERSION (or every version a matrix names)")
    inst.add_argument("specs", nargs="*", metavar="NAME@VERSION")
    inst.add_argument("--matrix", help="a matrices/*.yaml file, or a packaged matrix by name (default, supported)")
    inst.add_argument("--json", action="store_true")
    inst.add_argument("--quiet", action="store_true")
    inst.set_defaults(fn=cmd_harness_install)
    lst = har.add_parser("list", help="installed and PATH-found harnesses with their probed versions")
    lst.add_argument("--json", action="store_true")
    lst.add_argument("--no-probe", action="store_true", help="skip running each binary's version command")
    lst.set_defaults(fn=cmd_harness_list)

    mtx = sub.add_parser("matrix", help="harness version matrices").add_subparsers(dest="sub", required=True)
    mls = mtx.add_parser("list", help="one line per harness version (--json: a GitHub Actions job matrix)")
    mls.add_argument("--matrix", action="append", default=[], metavar="FILE",
                     help="a matrices/*.yaml file or a packaged matrix by name, repeatable "
                          "(default: every matrices/*.yaml here, else the packaged ones)")
    mls.add_argument("--json", action="store_true")
    mls.set_defaults(fn=cmd_matrix_list)

    lch = sub.add_parser("launch", help="start a harness under a profile, if the evidence proves every required item",
                         usage="agent-box launch PROFILE [--cwd DIR] [--evidence DIR] [--accept-unverified ITEM]... "
                               "[--binary PATH] [-- HARNESS ARGS...]")
    lch.add_argument("profile", help="a profile path or a name under $AGENTBOX_HOME/profiles")
    lch.add_argument("--cwd", default=".", help="the project directory (default: the current one)")
    lch.add_argument("--evidence", metavar="DIR", help="the evidence store (default $AGENTBOX_HOME/evidence)")
    lch.add_argument("--accept-unverified", action="append", default=[], metavar="ITEM",
                     help="run past this required item (a profile item or its capability) if its claim is only "
                          "unverified, never refuted or partial; repeat it for each item")
    lch.add_argument("--binary", help="launch this harness binary instead of the installed one")
    lch.set_defaults(fn=cmd_launch, harness_args=[])

    acp = sub.add_parser(
        "acp", help="serve an editor as an ACP agent on stdio: gate, then the harness's ACP agent in the sandbox",
        description="Speaks the Agent Client Protocol on stdin/stdout, for an editor to start as its agent server. "
                    "Gates like launch (on evidence taken in ACP mode); a refusal answers the client's initialize "
                    "with an error naming the items and exits 3 before anything starts. Otherwise the profile's "
                    "harness runs as an ACP agent inside the sandbox, and what the client would do for it outside "
                    "(file reads and writes, terminals, permission answers) is held to the intent.",
        epilog="example (Zed settings.json): \"agent_servers\": {\"Agent-Box reviewer\": {\"command\": \"agent-box\", "
               "\"args\": [\"acp\", \"reviewer\", \"--cwd\", \"/path/to/project\"]}}")
    acp.add_argument("profile", help="a profile path or a name under $AGENTBOX_HOME/profiles")
    acp.add_argument("--cwd", default=".", help="the project directory (default: the current one); every ACP "
                                                 "session must work inside it")
    acp.add_argument("--evidence", metavar="DIR", help="the evidence store (default $AGENTBOX_HOME/evidence)")
    acp.add_argument("--accept-unverified", action="append", default=[], metavar="ITEM",
                     help="run past this required item if its claim is only unverified; repeat it for each item")
    acp.add_argument("--binary", help="start this harness binary instead of the installed one")
    acp.set_defaults(fn=cmd_acp)

    rns = sub.add_parser("runs", help="recorded launches").add_subparsers(dest="sub", required=True)
    rl = rns.add_parser("list", help="every Run, newest first")
    rl.add_argument("--json", action="store_true")
    rl.add_argument("--limit", type=int, default=None)
    rl.set_defaults(fn=cmd_runs_list)
    rs = rns.add_parser("show", help="one Run: its plan, claims, evidence and outcome")
    rs.add_argument("id", help="a run id (or a unique prefix)")
    rs.add_argument("--json", action="store_true")
    rs.set_defaults(fn=cmd_runs_show)

    evd = sub.add_parser("evidence", help="what the negative suite recorded").add_subparsers(dest="sub", required=True)
    clm = evd.add_parser("claims", help="reconcile declared capabilities with the evidence")
    clm.add_argument("--evidence", metavar="DIR", help="the evidence store (default $AGENTBOX_HOME/evidence)")
    clm.add_argument("--catalogue", metavar="DIR", help="the vector catalogue (default: the package's)")
    clm.add_argument("--json", action="store_true")
    clm.set_defaults(fn=cmd_evidence_claims)
    els = evd.add_parser("list", help="every record, newest last")
    els.add_argument("--evidence", metavar="DIR", help="the evidence store (default $AGENTBOX_HOME/evidence)")
    els.add_argument("--json", action="store_true")
    els.set_defaults(fn=cmd_evidence_list)
    mrg = evd.add_parser("merge", help="merge evidence stores into one, without duplicates")
    mrg.add_argument("stores", nargs="+", metavar="DIR", help="an evidence store (a folder of *.jsonl) or one file")
    mrg.add_argument("-o", "--output", required=True, metavar="DIR",
                     help="the merged store, DIR/evidence.jsonl (records already there are kept)")
    mrg.add_argument("--json", action="store_true", help="print the summary as JSON")
    mrg.set_defaults(fn=cmd_evidence_merge)
    for name, fn, about in (
            ("verify", cmd_evidence_verify, "list the lines a reader refuses (file, line, reason); exit 1 if any"),
            ("repair", cmd_evidence_repair, "move bad lines to FILE.quarantine beside their file, keep the rest")):
        sp = evd.add_parser(name, help=about)
        sp.add_argument("--evidence", metavar="DIR", help="the evidence store (default $AGENTBOX_HOME/evidence)")
        sp.add_argument("--json", action="store_true")
        sp.set_defaults(fn=fn)

    rpt = sub.add_parser("report", help="the compatibility report: capabilities x harness versions, as HTML")
    rpt.add_argument("--evidence", nargs="+", metavar="DIR", help="evidence stores (default $AGENTBOX_HOME/evidence)")
    rpt.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML report")
    rpt.add_argument("--json", metavar="FILE", help="also write the report model as JSON")
    rpt.add_argument("--markdown", metavar="FILE", help="also write a Markdown table (for a pull-request comment)")
    rpt.add_argument("--catalogue", metavar="DIR", help="the vector catalogue (default: the package's)")
    rpt.set_defaults(fn=cmd_report)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from .errors import AgentBoxError

    try:
        if argv[:2] == ["sandbox", "run"]:
            from .sandbox.runner import fast_main

            rc = fast_main(argv[2:])
            if rc is not None:
                return rc
        harness_args: list[str] = []
        if argv[:1] == ["launch"]:
            from .launch import fast_main as launch_fast

            rc = launch_fast(argv[1:])
            if rc is not None:
                return rc
            if "--" in argv:  # split here: argparse would read the harness's own options as ours
                cut = argv.index("--")
                argv, harness_args = argv[:cut], argv[cut + 1:]
        args = _parser().parse_args(argv)
        if args.fn is cmd_launch:
            args.harness_args = harness_args
        return args.fn(args)
    except AgentBoxError as exc:
        print(f"agent-box: {exc}", file=sys.stderr)
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
