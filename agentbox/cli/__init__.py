"""The `agent-box` command line: `main` answers the hot paths (`sandbox run`, `launch`, `acp`, a remembered
`permission compile`/`explain`) from their caches before anything parses, and hands every other command to the
parser (`parser.py`) and its command group's module, both imported only then."""

from __future__ import annotations

import os
import sys

from agentbox.core import console

__all__ = ["main"]


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
            from agentbox.cli.launch import acp_fast

            rc = acp_fast(words[1:])  # an editor waits for this command's `initialize` answer: no argparse
            if rc is not None:
                return rc
        trailing: list[str] = []
        if (words[:1] == ["launch"] or words[:2] == ["sandbox", "run"]) and "--" in argv:
            # split here: argparse would read the command's (or the harness's) own options as ours
            cut = argv.index("--")
            argv, trailing = argv[:cut], argv[cut + 1 :]
        # the parser and the command groups load only now: a cached run never parses (benchmarks/sandbox_run.py,
        # benchmarks/launch.py)
        from agentbox.cli.launch import cmd_launch
        from agentbox.cli.parser import build_parser
        from agentbox.cli.sandbox import cmd_sandbox_run

        args = build_parser().parse_args(argv)
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
