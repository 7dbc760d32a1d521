"""The command line's shared argparse vocabulary: one spelling per idea, used by every command group's parser."""

from __future__ import annotations

__all__ = [
    "PROFILE_HELP",
    "CWD_HELP",
    "JSON_HELP",
    "EVIDENCE_HELP",
    "CATALOGUE_HELP",
    "verbosity",
    "command",
    "group",
    "print_help",
    "profile_and_cwd",
]

PROFILE_HELP = "a profile path, or a name under $AGENTBOX_HOME/profiles"
CWD_HELP = "the project directory (default: the current one)"
JSON_HELP = "print JSON to stdout instead of the table"
EVIDENCE_HELP = "the evidence store, a folder or a .jsonl file (default $AGENTBOX_HOME/evidence)"
CATALOGUE_HELP = "the vector catalogue (default: the package's)"


def verbosity(parser, root: bool = False) -> None:
    """-q and -v on every command, before or after the subcommand. Only the root parser has defaults: a
    subcommand's copies default to SUPPRESS, so they set what was given and never reset the root's."""
    # argparse loads lazily: `agent-box acp` imports this module through `cli.launch.acp_fast`, which answers
    # an editor without argparse (benchmarks/acp_endpoint.py, benchmarks/launch.py)
    import argparse

    quiet, verbose = ({"default": False}, {"default": 0}) if root else ({"default": argparse.SUPPRESS},) * 2
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print no progress or warnings on stderr, only errors", **quiet
    )
    parser.add_argument(
        "-v", "--verbose", action="count", help="say on stderr what was read, probed and run", **verbose
    )


def command(group, name: str, help_: str, *examples: str, **kwargs):
    """A subcommand whose help describes it and ends with examples, taking -q and -v."""
    import argparse  # lazy, as in `verbosity`

    epilog = "\n".join(["example:" if len(examples) == 1 else "examples:", *(f"  {e}" for e in examples)])
    parser = group.add_parser(
        name,
        help=help_,
        description=help_[0].upper() + help_[1:] + ".",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )
    verbosity(parser)
    return parser


def group(sub, name: str, help_: str, *examples: str):
    """A command of subcommands. Alone (`agent-box evidence`) it prints its help and succeeds, as gh does."""
    parser = command(sub, name, help_, *examples)
    parser.set_defaults(fn=lambda args: print_help(parser))
    return parser.add_subparsers(dest="sub", title="commands", metavar="COMMAND")


def print_help(parser) -> int:
    parser.print_help()
    return 0


def profile_and_cwd(parser, cwd_help: str = CWD_HELP) -> None:
    """The one spelling wherever a profile is taken: PROFILE first, then --cwd DIR (default: here)."""
    parser.add_argument("profile", metavar="PROFILE", help=PROFILE_HELP)
    parser.add_argument("--cwd", default=".", metavar="DIR", help=cwd_help)
