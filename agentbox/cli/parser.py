"""The `agent-box` argument parser: the root command, then each command group's subcommands in help order."""

from __future__ import annotations

import argparse
import sys

from agentbox import __version__
from agentbox.cli import evidence, harness, launch, permission, report, runs, sandbox
from agentbox.cli.arguments import command, print_help, verbosity

__all__ = ["EXIT_CODES", "build_parser", "cmd_completion"]

EXIT_CODES = (
    "exit codes: 0 ok, 1 evidence verify found bad lines, 2 bad input, 3 a required item cannot be\n"
    "  enforced, 4 the sandbox cannot be built, 5 a harness binary problem"
)


def build_parser() -> argparse.ArgumentParser:
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
    verbosity(p, root=True)
    p.set_defaults(fn=lambda args: print_help(p))
    sub = p.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    # the order of `agent-box --help` and of the completion scripts; harness also adds matrix, and launch adds
    # prove and acp
    for register in (
        permission.register,
        sandbox.register,
        harness.register,
        launch.register,
        runs.register,
        evidence.register,
        report.register,
        _completion,
    ):
        register(sub)
    return p


def _completion(sub) -> None:
    cmp = command(
        sub,
        "completion",
        "print a shell completion script, generated from these commands",
        "source <(agent-box completion bash)",
        "agent-box completion fish | source",
    )
    cmp.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete for")
    cmp.set_defaults(fn=cmd_completion)


def cmd_completion(args) -> int:
    # the generator (dataclasses, inspect) loads for this command alone: every command parses with this module,
    # `sandbox run` and `launch` too whenever their cache cannot answer (benchmarks/sandbox_run.py,
    # benchmarks/launch.py)
    from agentbox.cli.completion import script

    sys.stdout.write(script(args.shell, build_parser()))
    return 0
