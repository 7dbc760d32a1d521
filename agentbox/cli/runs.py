"""`agent-box runs list|show`: the recorded launches, from the run database."""

from __future__ import annotations

import json
import os

from agentbox.cli.arguments import JSON_HELP, command, group
from agentbox.core import console
from agentbox.core.home import agentbox_home, db_path
from agentbox.core.table import table

__all__ = ["register", "cmd_runs_list", "cmd_runs_show"]

# The handlers import the run database (SQLite) when they run: the parser loads every command group's module, and
# `sandbox run` or `launch` parse whenever their cache cannot answer (benchmarks/sandbox_run.py,
# benchmarks/launch.py).


def register(sub) -> None:
    rns = group(sub, "runs", "recorded launches", "agent-box runs list")
    rl = command(rns, "list", "every Run, newest first", "agent-box runs list --limit 5")
    rl.add_argument("--json", action="store_true", help=JSON_HELP)
    rl.add_argument("--limit", type=int, default=None, metavar="N", help="only the newest N runs")
    rl.set_defaults(fn=cmd_runs_list)
    rs = command(rns, "show", "one Run: its plan, claims, evidence and outcome", "agent-box runs show 3f2a --json")
    rs.add_argument("id", help="a run id (or a unique prefix)")
    rs.add_argument("--json", action="store_true", help="print the Run as JSON to stdout")
    rs.set_defaults(fn=cmd_runs_show)


def cmd_runs_list(args) -> int:
    from agentbox.run.runs import RunStore

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
    from agentbox.run.runs import RunStore, egress_log

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
