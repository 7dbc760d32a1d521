"""`agent-box completion bash|zsh|fish`: a completion script generated from the command line's own parser.

Generated, never written by hand, so a new subcommand or option completes the day it is added. The
scripts know the tree of subcommands, each command's options, and what a value completes to: a folder
(a metavar ending in DIR), a file (FILE, PATH, PROFILE), one of an option's choices, or nothing.
After `--` every word belongs to the command `launch` or `sandbox run` starts, so the shell's own
file completion takes over.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Iterator

__all__ = ["SHELLS", "Node", "walk", "nodes", "script"]

SHELLS = ("bash", "zsh", "fish")
PROG = "agent-box"


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    help: str
    value: str | None  # None: a flag; "@dir", "@file", "@none" (free text) or the choices, space-separated


@dataclass(frozen=True)
class Node:
    path: str  # "" for agent-box itself, else the subcommand words: "evidence list"
    commands: tuple[tuple[str, str], ...]  # (name, help) of each subcommand
    options: tuple[Option, ...]
    positional: str | None  # what a bare word completes to, when the node has no subcommands


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the tree with its subcommand path, depth first. argparse has no public way to
    list a parser's arguments or subparsers, so this reads `_actions` (stable since Python 3.2)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*path, name))


def _subcommands(parser: argparse.ArgumentParser) -> tuple[tuple[str, str], ...]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return tuple((choice.dest, choice.help or "") for choice in action._choices_actions)
    return ()


def _value(action: argparse.Action) -> str | None:
    if action.nargs == 0:
        return None
    if action.choices:
        return " ".join(action.choices)
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    if metavar.endswith("DIR"):
        return "@dir"
    return "@file" if metavar in ("FILE", "PATH", "PROFILE") else "@none"


def nodes(parser: argparse.ArgumentParser) -> list[Node]:
    out = []
    for path, sub in walk(parser):
        visible = [
            a for a in sub._actions if a.help != argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)
        ]
        options = tuple(Option(tuple(a.option_strings), a.help or "", _value(a)) for a in visible if a.option_strings)
        positionals = [a for a in visible if not a.option_strings]
        out.append(Node(" ".join(path), _subcommands(sub), options, _value(positionals[0]) if positionals else None))
    return out


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    if shell not in SHELLS:
        from agentbox.errors import InputError

        raise InputError(f"no completion for {shell}; choose one of {', '.join(SHELLS)}")
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](nodes(parser))


# -- the shared lookups: a `case` per node, the same in bash and zsh --------------------------------------


def _q(text: str) -> str:
    """`text` as one single-quoted shell word (bash, zsh and fish alike)."""
    return "'" + text.replace("'", "'\\''") + "'"


def _case(name: str, arms: list[tuple[str, str]]) -> list[str]:
    lines = [f"{name}() {{", '    case "$1" in']
    # printf, not echo: zsh's echo would read a backslash in a description as an escape
    lines += [f"        {_q(pattern)}) printf '%s\\n' {_q(value)} ;;" for pattern, value in arms if value]
    return [*lines, "    esac", "}"]


def _lookups(nodes_: list[Node], described: bool) -> list[str]:
    """_agent_box_names CMD: its subcommands; _agent_box_values 'CMD|OPTION' (or 'CMD|' for a bare word):
    what follows; _agent_box_options CMD: its options. zsh shows descriptions: there the options are
    `flag:help` lines and _agent_box_commands CMD gives the subcommands as `name:help` lines."""

    def shown(name: str, help_: str) -> str:
        return f"{name}:{' '.join(help_.split())}" if described else name

    sep = "\n" if described else " "
    names = [(n.path, " ".join(c for c, _ in n.commands)) for n in nodes_]
    options = [(n.path, sep.join(shown(f, o.help) for o in n.options for f in o.flags)) for n in nodes_]
    values = [(f"{n.path}|{f}", o.value) for n in nodes_ for o in n.options if o.value for f in o.flags]
    values += [(f"{n.path}|", n.positional) for n in nodes_ if n.positional and not n.commands]
    commands = [(n.path, "\n".join(shown(c, h) for c, h in n.commands)) for n in nodes_] if described else []
    return [
        *_case("_agent_box_names", names),
        *(_case("_agent_box_commands", commands) if described else []),
        *_case("_agent_box_options", options),
        *_case("_agent_box_values", values),
    ]


# the word loop both shells share: find the subcommand path typed so far, skipping each option's value
_PATH_LOOP = """\
    for ((i = {first}; i < {current}; i++)); do
        word="${{{words}[i]}}"
        [[ "$word" == "--" ]] && {after_dashes}
        if [[ -n "$(_agent_box_values "$cmd|$word")" ]]; then ((i++)); continue; fi
        if [[ " $(_agent_box_names "$cmd") " == *" $word "* ]]; then cmd="${{cmd:+$cmd }}$word"; fi
    done"""


def _bash(nodes_: list[Node]) -> str:
    loop = _PATH_LOOP.format(
        first=1,
        current="COMP_CWORD",
        words="COMP_WORDS",
        after_dashes="return 0  # the command's own words: the shell's default completion",
    )
    return "\n".join(
        [
            f"# bash completion for {PROG}, generated by `{PROG} completion bash` from its parser.",
            f"# Load it with: source <({PROG} completion bash)",
            *_lookups(nodes_, described=False),
            "_agent_box_complete() {",
            '    case "$1" in',
            '        @dir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")) ;;',
            "        @file | @none | '') COMPREPLY=() ;;  # complete -o default: the shell's file completion",
            '        *) COMPREPLY=($(compgen -W "$1" -- "$cur")) ;;',
            "    esac",
            "}",
            "_agent_box() {",
            '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" word i value=""',
            "    COMPREPLY=()",
            loop,
            '    [[ "$prev" == -* ]] && value="$(_agent_box_values "$cmd|$prev")"',
            '    if [[ -n "$value" ]]; then _agent_box_complete "$value"; return 0; fi',
            '    if [[ "$cur" == -* ]]; then',
            '        COMPREPLY=($(compgen -W "$(_agent_box_options "$cmd")" -- "$cur")); return 0',
            "    fi",
            '    local commands="$(_agent_box_names "$cmd")"',
            '    if [[ -n "$commands" ]]; then COMPREPLY=($(compgen -W "$commands" -- "$cur")); return 0; fi',
            '    _agent_box_complete "$(_agent_box_values "$cmd|")"',
            "}",
            f"complete -o default -F _agent_box {PROG}",
            "",
        ]
    )


def _zsh(nodes_: list[Node]) -> str:
    # `path` is zsh's array tied to PATH: the loop's variable is `cmd`, never `path`
    loop = _PATH_LOOP.format(first=2, current="CURRENT", words="words", after_dashes="{ _files; return }")
    return "\n".join(
        [
            f"#compdef {PROG}",
            f"# zsh completion for {PROG}, generated by `{PROG} completion zsh` from its parser.",
            f"# Load it with: source <({PROG} completion zsh), or save it as _{PROG} in a folder of $fpath",
            *_lookups(nodes_, described=True),
            "_agent_box_complete() {",
            '    case "$1" in',
            "        @dir) _directories ;;",
            "        @file) _files ;;",
            "        @none | '') ;;",
            "        *) compadd -- ${=1} ;;",
            "    esac",
            "}",
            "_agent_box() {",
            '    local cmd="" word i value=""',
            "    local -a items",
            loop,
            '    [[ "${words[CURRENT-1]}" == -* ]] && value="$(_agent_box_values "$cmd|${words[CURRENT-1]}")"',
            '    if [[ -n "$value" ]]; then _agent_box_complete "$value"; return; fi',
            '    if [[ "$PREFIX" == -* ]]; then',
            '        items=("${(@f)$(_agent_box_options "$cmd")}"); _describe option items; return',
            "    fi",
            '    items=("${(@f)$(_agent_box_commands "$cmd")}")',
            '    if [[ -n "${items[1]}" ]]; then _describe command items; return; fi',
            '    _agent_box_complete "$(_agent_box_values "$cmd|")"',
            "}",
            # autoloaded from $fpath the file is the function's body; sourced, it registers the function
            'if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then _agent_box "$@"; else compdef _agent_box '
            f"{PROG}; fi",
            "",
        ]
    )


def _fish(nodes_: list[Node]) -> str:
    valued = [(n.path, "\n".join(f for o in n.options if o.value for f in o.flags)) for n in nodes_]
    lines = [
        f"# fish completion for {PROG}, generated by `{PROG} completion fish` from its parser.",
        f"# Load it with: {PROG} completion fish | source",
        *_fish_switch("__agent_box_names", [(n.path, "\n".join(c for c, _ in n.commands)) for n in nodes_]),
        *_fish_switch("__agent_box_valued", valued),
        "function __agent_box_at --description 'whether the subcommand path typed so far is $argv[1]'",
        "    set -l words (commandline -opc)",
        "    set -e words[1]  # agent-box itself",
        "    set -l cmd ''",
        "    set -l skip 0",
        "    for word in $words",
        "        if test $skip = 1; set skip 0; continue; end",
        "        if test \"$word\" = '--'; return 1; end  # the command's own words",
        "        if contains -- $word (__agent_box_valued $cmd); set skip 1; continue; end",
        '        if contains -- $word (__agent_box_names $cmd); set cmd (string trim -- "$cmd $word"); end',
        "    end",
        '    test "$cmd" = "$argv[1]"',
        "end",
    ]
    for n in nodes_:
        at = f"-n '__agent_box_at \"{n.path}\"'"
        for name, help_ in n.commands:
            lines.append(f"complete -c {PROG} {at} -f -a {_q(name)} -d {_q(' '.join(help_.split()))}")
        for o in n.options:
            spelled = " ".join(f"-l {f[2:]}" if f.startswith("--") else f"-s {f[1:]}" for f in o.flags)
            lines.append(f"complete -c {PROG} {at} {spelled}{_fish_value(o.value)} -d {_q(' '.join(o.help.split()))}")
        if n.positional and not n.commands:
            lines.append(f"complete -c {PROG} {at}{_fish_value(n.positional)}")
    return "\n".join([*lines, ""])


def _fish_switch(name: str, arms: list[tuple[str, str]]) -> list[str]:
    lines = [f"function {name}", '    switch "$argv[1]"']
    for pattern, value in arms:
        if value:
            lines += [f"        case {_q(pattern)}", f"            printf '%s\\n' {' '.join(map(_q, value.split()))}"]
    return [*lines, "    end", "end"]


def _fish_value(value: str | None) -> str:
    if value is None:
        return ""
    if value == "@dir":
        return " -x -a '(__fish_complete_directories)'"
    if value == "@file":
        return " -r -F"
    if value == "@none":
        return " -x"
    return f" -x -a {_q(value)}"
