"""The sandbox with one protection removed: how a control proves its oracle for attacks on the sandbox itself.

An attack on the OS sandbox (a remount, a nested user namespace, a host daemon's socket) has no intent
under which it is allowed, so its positive control runs the same plan with the protection under test
taken out, and must then see the side effect. A vector's control names what it removes (`weaken`):

- `privilege`: the run keeps every capability (`--cap-add ALL`; as root, in the host's own user
  namespace), may create user namespaces, and runs without the seccomp denylist;
- `host_sockets`: the host's /run (docker, D-Bus, systemd sockets) stays in view;
- `process`: the run shares the host's PID namespace and outlives its parent (no `--unshare-pid`,
  `--die-with-parent`, `--new-session`);
- `project_config`: the project's own config files are not covered by the profile's read-only copies;
- `backings`: the profile backings under the workspace's `.agentbox` stay in view (no tmpfs over them);
- `policy_files`: the harness's compiled policy files are bound writable;
- `root_writable`: the host's root is bound writable instead of read-only (writes outside the workspace);
- `host_tmp`, `host_home`: the host's /tmp, the host home, are not replaced by private ones;
- `abstract_sockets`: no Landlock scope, so the host's abstract unix sockets are reachable on a shared network;
- `credentials`: no placeholders and no swap: the real values of the run's credentials (the model key, the
  profile's secrets) enter the sandbox as themselves;
- `proc_writable`: /proc as bubblewrap mounts it, writable (host sysctls, other processes' memory by uid);
- `relay_writable`: the run's relay folder bound writable (its socket paths replaceable);
- `unix_sockets`: new unix sockets allowed (no seccomp rule refusing them);
- `trusted_state`: a run is not refused when it could write Agent-Box's own state (AGENTBOX_HOME, its run folder),
  nor when a bind of its plan puts back what a private mount hid (AGENTBOX_HOME inside the workspace);
- `state_visible`: AGENTBOX_HOME is not hidden from the run (the host's read-only view of it stays);
- `loopback_listeners`: on a shared network the egress proxy sends to a loopback port whoever listens there
  (no check that the listener is the host's, not a process of the run).

Test code only: nothing outside the conformance suite imports it, and `agent-box` has no spelling for it.

    python -m agentbox.testing.weakened --weaken privilege PROFILE --cwd W [--egress-log F]
        [--egress-resolve NAME=ADDRESS] -- CMD...
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Iterable

__all__ = ["MUTATIONS", "SINGLE", "NOT_APPLICABLE", "weaken", "mutate", "mutation_names", "entry_hook", "main"]

NOT_APPLICABLE = "agentbox-mutation-not-applicable"

# How many arguments each bwrap option the backend emits takes: an option is dropped with its arguments.
_ARITY = {
    "--remount-ro": 1,
    "--ro-bind": 2,
    "--bind": 2,
    "--dev-bind": 2,
    "--symlink": 2,
    "--dev": 1,
    "--proc": 1,
    "--tmpfs": 1,
    "--dir": 1,
    "--chdir": 1,
    "--cap-drop": 1,
    "--cap-add": 1,
    "--seccomp": 1,
    "--uid": 1,
    "--gid": 1,
}


def _edit(argv: list[str], chosen: Callable[[list[str]], bool], how: str = "drop") -> tuple[list[str], bool]:
    """`argv` with every option `chosen` names (taken with its arguments, e.g. ["--tmpfs", "/run"]) dropped
    or made a writable bind in place (mount order is meaning), and whether any was."""
    out, hit, i = [], False, 0
    while i < len(argv):
        group = argv[i : i + 1 + _ARITY.get(argv[i], 0)]
        i += len(group)
        if not chosen(group):
            out.extend(group)
            continue
        hit = True
        if how == "writable":
            out.extend(["--bind", *group[1:]])
        elif how == "host":  # a private mount replaced by the host's own folder there, writable
            out.extend(["--bind", group[1], group[1]])
    return out, hit


def _drop(argv: list[str], unwanted: Callable[[list[str]], bool]) -> list[str]:
    return _edit(argv, unwanted)[0]


def _without_privilege(entry: dict) -> dict:
    # /proc writable too: a nested user namespace is set up through /proc/self/uid_map
    argv = _drop(
        entry["argv"],
        lambda g: g[0] in ("--unshare-user", "--disable-userns", "--cap-drop") or g == ["--remount-ro", "/proc"],
    )
    # Root keeps the host's own user namespace; anyone else needs one to hold capabilities in, and uid 0 in it
    # (mount(8) and umount(8) refuse any other uid before they ask the kernel).
    extra = [] if os.geteuid() == 0 else ["--unshare-user", "--uid", "0", "--gid", "0"]
    return {**entry, "argv": [*argv, *extra, "--cap-add", "ALL"], "seccomp": False}


def _sharing_processes(entry: dict) -> dict:
    return {
        **entry,
        "argv": _drop(entry["argv"], lambda g: g[0] in ("--unshare-pid", "--die-with-parent", "--new-session")),
    }


def _without_host_guard(entry: dict) -> dict:
    # the host-executed guard holds the project's harness configs and .agentbox read-only too (defence in depth):
    # a control that shows a mask's or the hidden backings' own effect goes without both
    return {**entry, "host_executed": None}


def _without_config_masks(entry: dict) -> dict:
    backings = {backing for backing, _kind, _content in entry.get("masks", [])}
    return _without_host_guard(
        {**entry, "argv": _drop(entry["argv"], lambda g: g[0] == "--ro-bind" and g[1] in backings)}
    )


def _with_backings_in_view(entry: dict) -> dict:
    return _without_host_guard(
        {**entry, "argv": _drop(entry["argv"], lambda g: g[0] == "--tmpfs" and g[1].endswith("/.agentbox"))}
    )


def _single(name: str) -> Callable[[dict], dict]:
    """A control's weakening that is one of the mutation check's single protections (one without {ws} or
    {home} in its pattern); a plan without that protection is left as it is."""
    return lambda entry: mutate(entry, name, "", "") or entry


def _with_host_home(entry: dict) -> dict:
    # the hidden home is the run's HOME (a harness run's entry has no `hidden` list)
    homes = (set(entry.get("hidden", ())) | {entry.get("env", {}).get("HOME")}) - {"/tmp", None}
    return {**entry, "argv": _drop(entry["argv"], lambda g: g[0] == "--tmpfs" and g[1] in homes)}


def _with_unix_sockets(entry: dict) -> dict:
    # a run without a relay (a shared network): the denylist bwrap installs then leaves out its unix-socket rule
    return {**entry, "unix_filter": False}


def _trusting_writable_state(entry: dict) -> dict:
    return {**entry, "trust_writable_state": True}


def _with_state_in_view(entry: dict) -> dict:
    return {**entry, "state_visible": True}


def _trusting_loopback_listeners(entry: dict) -> dict:
    egress = entry.get("egress")
    return {**entry, "egress": {**egress, "shared_loopback": False}} if egress else entry


def _with_real_credentials(entry: dict) -> dict:
    names = {c["variable"] for c in entry.get("credentials", ())}
    return {**entry, "credentials": [], "env_allow": sorted(set(entry["env_allow"]) | names)}


MUTATIONS: dict[str, Callable[[dict], dict]] = {
    "privilege": _without_privilege,
    "host_sockets": _single("no-private-run"),
    "process": _sharing_processes,
    "project_config": _without_config_masks,
    "backings": _with_backings_in_view,
    "policy_files": _single("writable-policy-files"),
    "root_writable": _single("writable-root"),
    "host_tmp": _single("no-private-tmp"),
    "host_home": _with_host_home,
    "abstract_sockets": _single("no-abstract-scope"),
    "credentials": _with_real_credentials,
    "proc_writable": _single("writable-proc"),
    "relay_writable": _single("writable-relay"),
    "unix_sockets": _with_unix_sockets,
    "trusted_state": _trusting_writable_state,
    "state_visible": _with_state_in_view,
    "loopback_listeners": _trusting_loopback_listeners,
}


# -- single protections, for the mutation check -----------------------------------------------------------
# Every protection the backend puts in a plan, one at a time: the mutation check removes each and needs some
# vector to escape. `{ws}` is the run's workspace and `{home}` the host home; a mutation whose option is not
# in a plan does not apply to it. Name -> (the option group it matches, drop it or make it a writable bind).
SINGLE: dict[str, tuple[tuple[str, ...], str]] = {
    "writable-root": (("--ro-bind", "/", "/"), "writable"),
    "writable-workspace": (("--ro-bind", "{ws}", "{ws}"), "writable"),
    "no-empty-workspace": (("--tmpfs", "{ws}"), "drop"),
    # the host's /tmp in view: bound, since bubblewrap makes the run's own folders under it (/tmp/agentbox), which it
    # could not on the read-only host root of a machine where none was made yet
    "no-private-tmp": (("--tmpfs", "/tmp"), "host"),
    "writable-proc": (("--remount-ro", "/proc"), "drop"),
    "writable-relay": (("--ro-bind", "{run_dir}/relay", "/tmp/agentbox/relay"), "writable"),
    "no-hidden-home": (("--tmpfs", "{home}"), "drop"),
    "no-private-run": (("--tmpfs", "/run"), "drop"),
    "writable-policy-files": (("--ro-bind", "{run_dir}/config/*", "*"), "writable"),
    "no-unshare-net": (("--unshare-net",), "drop"),
    "no-unshare-pid": (("--unshare-pid",), "drop"),
    "no-unshare-ipc": (("--unshare-ipc",), "drop"),
    "no-unshare-uts": (("--unshare-uts",), "drop"),
    "no-disable-userns": (("--disable-userns",), "drop"),
    "no-cap-drop": (("--cap-drop", "ALL"), "drop"),
    "no-die-with-parent": (("--die-with-parent",), "drop"),
    "no-new-session": (("--new-session",), "drop"),
}
# bwrap refuses --disable-userns without --unshare-user, so the user namespace goes with both flags
# and the masks and the hidden backings each go with the host-executed guard, which holds the same paths read-only
_TOGETHER = {
    "no-unshare-user": ("no-disable-userns", (("--unshare-user",), "drop")),
    "no-hidden-backings": ("no-host-guard", (("--tmpfs", "{ws}/.agentbox"), "drop")),
    "no-config-masks": ("no-host-guard", (("--ro-bind", "{ws}/.agentbox/profiles/*", "*"), "drop")),
}
NO_SECCOMP = "no-seccomp"  # the denylist (and the unix-socket filter) not installed
NO_SCOPE = "no-abstract-scope"  # the Landlock scope over abstract unix sockets not applied
NO_STATE_CHECK = "no-state-check"  # a run that could write Agent-Box's own state is not refused
NO_HOST_GUARD = "no-host-guard"  # the workspace's host-executed paths not held (agentbox.sandbox.host_guard)
NO_HIDDEN_STATE = "no-hidden-state"  # AGENTBOX_HOME left in the run's (read-only) view
NO_LISTENER_CHECK = "no-listener-check"  # the proxy does not check who listens on a shared loopback
# single checks of the host-executed guard's scan, each taken out on its own (its spec's `unchecked`)
GUARD_CHECKS = {
    "no-guard-followed": "followed",  # what a held folder's links lead to, and a held file's other names
    "no-guard-gitdir-link": "gitdir-link",  # a link on the way to the repository a .git file names
    "no-guard-user-git-config": "user-git-config",  # the hooks path and includes of the user's own git config
}


def _matches(group: list[str], pattern: tuple[str, ...], ws: str, home: str) -> bool:
    import fnmatch

    return len(group) == len(pattern) and all(
        fnmatch.fnmatchcase(g, p.replace("{ws}", ws).replace("{home}", home)) for g, p in zip(group, pattern)
    )


def mutate(entry: dict, name: str, ws: str, home: str) -> dict | None:
    """`entry` with the single protection `name` removed, or None when its plan does not have it."""
    if name == NO_SECCOMP:
        had = entry.get("seccomp") or entry.get("unix_filter")
        return {**entry, "seccomp": False, "unix_filter": False} if had else None
    if name == NO_SCOPE:
        return {**entry, "landlock_scope": False} if entry.get("landlock_scope") else None
    if name == NO_STATE_CHECK:
        return _trusting_writable_state(entry)
    if name == NO_HOST_GUARD:
        return _without_host_guard(entry) if entry.get("host_executed") else None
    if name in GUARD_CHECKS:
        spec = entry.get("host_executed")
        return {**entry, "host_executed": {**spec, "unchecked": [GUARD_CHECKS[name]]}} if spec else None
    if name == NO_HIDDEN_STATE:
        return _with_state_in_view(entry)
    if name == NO_LISTENER_CHECK:
        shared = (entry.get("egress") or {}).get("shared_loopback")
        return _trusting_loopback_listeners(entry) if shared else None
    if name in _TOGETHER:
        first, (pattern, how) = _TOGETHER[name]
        entry = mutate(entry, first, ws, home) or entry
    else:
        pattern, how = SINGLE[name]
    argv, hit = _edit(entry["argv"], lambda g: _matches(g, pattern, ws, home), how)
    if not hit:
        return None
    # A host folder bound writable (the root, /tmp) may hold the run's own folder or AGENTBOX_HOME, and a run is
    # refused when it could write those: the protection under test is the bind, so that refusal is set aside
    return {**entry, "argv": argv, **({"trust_writable_state": True} if how != "drop" else {})}


def mutation_names() -> list[str]:
    return [
        *SINGLE,
        *_TOGETHER,
        NO_SECCOMP,
        NO_SCOPE,
        NO_STATE_CHECK,
        NO_HOST_GUARD,
        *GUARD_CHECKS,
        NO_HIDDEN_STATE,
        NO_LISTENER_CHECK,
    ]


def weaken(entry: dict, names: Iterable[str]) -> dict:
    for name in names:
        entry = MUTATIONS[name](entry)
    return entry


def entry_hook(names: Iterable[str]) -> Callable[[dict], dict] | None:
    """A RunRequest.entry_hook that removes `names` (None when there is nothing to remove)."""
    names = tuple(names)
    return (lambda entry: weaken(entry, names)) if names else None


def main(argv: list[str] | None = None) -> int:
    from agentbox.run.sandbox_command import compiled_entry, execute, parse_resolve

    argv = sys.argv[1:] if argv is None else argv
    # the command is what follows `--`, as for `agent-box sandbox run`: split before argparse, which would
    # otherwise read the command's own options (or, after PROFILE, everything) as its own
    cut = argv.index("--") if "--" in argv else len(argv)
    argv, cmd = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(prog="python -m agentbox.testing.weakened")
    parser.add_argument("--weaken", action="append", choices=sorted(MUTATIONS), default=[])
    parser.add_argument(
        "--mutate",
        choices=mutation_names(),
        help="remove this one protection (exit 3, running nothing, when the plan has none)",
    )
    parser.add_argument("profile")
    parser.add_argument("--cwd", default=".")
    parser.add_argument("--egress-log")
    parser.add_argument("--egress-resolve", action="append", default=[])
    args = parser.parse_args(argv)
    resolve = dict(p for p in map(parse_resolve, args.egress_resolve) if p)
    ws = os.path.realpath(args.cwd)
    entry = weaken(compiled_entry(args.profile, ws, cmd), args.weaken)
    if args.mutate:
        from agentbox.hot import home_dir

        mutated = mutate(entry, args.mutate, ws, home_dir())
        if mutated is None:
            print(f"{NOT_APPLICABLE}: the plan has no {args.mutate} protection", file=sys.stderr)
            return 3
        entry = mutated
    return execute(entry, cmd, resolve=resolve, egress_log=args.egress_log)


if __name__ == "__main__":
    sys.exit(main())
