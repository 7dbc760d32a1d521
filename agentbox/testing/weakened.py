"""The sandbox with one protection removed: how a control proves its oracle for attacks on the sandbox itself.

An attack on the OS sandbox (a remount, a nested user namespace, a host daemon's socket) has no intent
under which it is allowed, so its positive control runs the same plan with the protection under test
taken out, and must then see the side effect. A vector's control names what it removes (`weaken`):

- `privilege`: the run keeps every capability (`--cap-add ALL`; as root, in the host's own user
  namespace), may create user namespaces, and runs without the seccomp denylist;
- `host_sockets`: the host's /run (docker, D-Bus, systemd sockets) stays in view.

Test code only: nothing outside the conformance suite imports it, and `agent-box` has no spelling for it.

    python -m agentbox.testing.weakened --weaken privilege --profile P --workspace W [--egress-log F]
        [--egress-resolve NAME=ADDRESS] -- CMD...
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Iterable

__all__ = ["MUTATIONS", "weaken", "entry_hook", "main"]

_PRIVILEGE_FLAGS = {"--unshare-user": 0, "--disable-userns": 0, "--cap-drop": 1}


def _without_privilege(entry: dict) -> dict:
    argv, out, skip = entry["argv"], [], 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        if arg in _PRIVILEGE_FLAGS:
            skip = _PRIVILEGE_FLAGS[arg]
            continue
        out.append(arg)
    # Root keeps the host's own user namespace; anyone else needs one to hold capabilities in, and uid 0 in it
    # (mount(8) and umount(8) refuse any other uid before they ask the kernel).
    extra = [] if os.geteuid() == 0 else ["--unshare-user", "--uid", "0", "--gid", "0"]
    return {**entry, "argv": [*out, *extra, "--cap-add", "ALL"], "seccomp": False}


def _with_host_sockets(entry: dict) -> dict:
    argv = entry["argv"]
    out = []
    i = 0
    while i < len(argv):
        if argv[i] == "--tmpfs" and i + 1 < len(argv) and argv[i + 1] == "/run":
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return {**entry, "argv": out}


MUTATIONS: dict[str, Callable[[dict], dict]] = {"privilege": _without_privilege, "host_sockets": _with_host_sockets}


def weaken(entry: dict, names: Iterable[str]) -> dict:
    for name in names:
        entry = MUTATIONS[name](entry)
    return entry


def entry_hook(names: Iterable[str]) -> Callable[[dict], dict] | None:
    """A RunRequest.entry_hook that removes `names` (None when there is nothing to remove)."""
    names = tuple(names)
    return (lambda entry: weaken(entry, names)) if names else None


def main(argv: list[str] | None = None) -> int:
    from ..sandbox.runner import compiled_entry, execute, parse_resolve

    parser = argparse.ArgumentParser(prog="python -m agentbox.testing.weakened")
    parser.add_argument("--weaken", action="append", choices=sorted(MUTATIONS), required=True)
    parser.add_argument("--profile", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--egress-log")
    parser.add_argument("--egress-resolve", action="append", default=[])
    parser.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    resolve = dict(p for p in map(parse_resolve, args.egress_resolve) if p)
    entry = weaken(compiled_entry(args.profile, os.path.realpath(args.workspace), cmd), args.weaken)
    return execute(entry, cmd, resolve=resolve, egress_log=args.egress_log)


if __name__ == "__main__":
    sys.exit(main())
