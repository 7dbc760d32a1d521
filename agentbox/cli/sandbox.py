"""`agent-box sandbox run`: a command under a profile's OS sandbox alone, when its cache cannot answer."""

from __future__ import annotations

from agentbox.cli.arguments import command, group, profile_and_cwd
from agentbox.errors import InputError

__all__ = ["register", "cmd_sandbox_run"]


def register(sub) -> None:
    sbx = group(sub, "sandbox", "the OS sandbox alone", "agent-box sandbox run reviewer -- ls -la")
    run = command(
        sbx,
        "run",
        "run CMD under the profile's sandbox and return its exit status",
        "agent-box sandbox run reviewer --cwd ~/src/app -- sh -c 'echo x > f'",
        usage="agent-box sandbox run PROFILE [--cwd DIR] [--egress-log FILE] "
        "[--egress-resolve NAME=ADDRESS]... [-q] [-v] -- CMD...",
    )
    profile_and_cwd(run, "the workspace the profile's intent applies to (default: the current folder)")
    run.add_argument(
        "--egress-resolve",
        action="append",
        default=[],
        metavar="NAME=ADDRESS",
        help="testing aid: the egress proxy resolves NAME to ADDRESS (names without DNS); repeatable",
    )
    run.add_argument("--egress-log", metavar="FILE", help="keep the egress proxy's decisions (JSON Lines) in FILE")
    # the words after `--` are the command's: `cli.main` splits them off before argparse and puts them here
    run.set_defaults(fn=cmd_sandbox_run, cmd=[])


def cmd_sandbox_run(args) -> int:
    # imported when it runs, as every handler's work: the parser loads every command group's module
    # (benchmarks/sandbox_run.py)
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
