"""`agent-box launch`, `prove` and `acp`: start a harness under a profile once the gate allows it, or record the
evidence it needs first."""

from __future__ import annotations

from agentbox.cli.arguments import EVIDENCE_HELP, command, profile_and_cwd

__all__ = ["register", "cmd_launch", "cmd_prove", "cmd_acp", "acp_fast"]

# Nothing here imports argparse, and the handlers import their work when they run: `acp_fast` answers an editor
# from this module before anything parses, and the parser loads every command group's module (benchmarks/launch.py,
# benchmarks/acp_endpoint.py).


def register(sub) -> None:
    lch = command(
        sub,
        "launch",
        "start a harness under a profile, if the evidence proves every required item",
        "agent-box launch reviewer --cwd ~/src/app",
        "agent-box launch reviewer --accept-unverified shell -- --model gpt-5",
        usage="agent-box launch PROFILE [--cwd DIR] [--evidence DIR] [--accept-unverified ITEM]... "
        "[--binary PATH] [-q] [-v] [-- HARNESS ARGS...]",
    )
    profile_and_cwd(lch)
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
    # the words after `--` are the harness's: `cli.main` splits them off before argparse and puts them here
    lch.set_defaults(fn=cmd_launch, harness_args=[])

    prv = command(
        sub,
        "prove",
        "run exactly the escape vectors a profile's required items need on its harness build, "
        "then say whether launch would pass",
        "agent-box prove reviewer --cwd ~/src/app",
        "agent-box prove reviewer --mode acp --json",
    )
    profile_and_cwd(prv)
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

    acp = command(
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
    profile_and_cwd(acp)
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


def acp_fast(argv: list[str]) -> int | None:
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
