"""`agent-box harness install|list` and `agent-box matrix list`: the pinned harness builds and the version
matrices that name them."""

from __future__ import annotations

import json
import sys

from agentbox.cli.arguments import JSON_HELP, command, group
from agentbox.core.table import table
from agentbox.errors import InputError

__all__ = ["register", "cmd_harness_install", "cmd_harness_list", "cmd_matrix_list"]

# The handlers import the installs, the matrices (pydantic, YAML) and `cli.matrix` when they run: the parser loads
# every command group's module, and `sandbox run` or `launch` parse whenever their cache cannot answer
# (benchmarks/sandbox_run.py, benchmarks/launch.py).


def register(sub) -> None:
    har = group(sub, "harness", "pinned harness installs", "agent-box harness list")
    inst = command(
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
    lst = command(
        har, "list", "installed and PATH-found harnesses with their probed versions", "agent-box harness list --json"
    )
    lst.add_argument("--json", action="store_true", help=JSON_HELP)
    lst.add_argument("--no-probe", action="store_true", help="skip running each binary's version command")
    lst.set_defaults(fn=cmd_harness_list)

    mtx = group(sub, "matrix", "harness version matrices", "agent-box matrix list")
    mls = command(
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
        raise InputError("nothing to install: give NAME@VERSION or --matrix FILE")
    results = [install(n, v, log) for n, v in todo]
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2))
    return 0


def cmd_harness_list(args) -> int:
    from agentbox.harnesses.installs import installed

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
