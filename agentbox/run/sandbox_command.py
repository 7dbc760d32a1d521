"""`agent-box sandbox run`: CMD under the profile's sandbox alone, returning CMD's exit status.

With network `none` and a model, or `restricted`, the egress proxy runs on the host for the run's
length; `--egress-log FILE` keeps its decisions and `--egress-resolve NAME=ADDRESS` (a testing aid)
points a name without DNS at an address.

This is a hot path (the negative suite's sandbox layer calls it per vector), so a compiled run is
cached by the profile's exact bytes, the workspace, the home and the package's own files; a cache
hit imports neither pydantic nor YAML, nor json (the entry is kept in this interpreter's marshal format). The cache also records which project surfaces existed, so a
new `.claude` in the workspace invalidates it.
"""

from __future__ import annotations

import os
import sys

from agentbox.core.console import detail_argv, take_flag
from agentbox.hot import (
    MARSHAL_TAG,
    agentbox_home,
    home_dir,
    package_fingerprint,
    private_folder,
    resolve_profile_path,
    read_marshal,
    sha256,
    which,
    write_marshal_atomic,
)

__all__ = ["fast_main", "sandbox_run", "compiled_entry", "execute"]


def _cache_path(profile_bytes: bytes, profile_path: str, workspace: str) -> str:
    key = sha256(
        b"\0".join(
            [
                profile_bytes,
                os.path.realpath(profile_path).encode(),
                workspace.encode(),
                home_dir().encode(),
                package_fingerprint().encode(),
            ]
        )
    ).hexdigest()
    return os.path.join(agentbox_home(), "cache", "sandbox", f"{key}.{MARSHAL_TAG}")


def _parse(argv: list[str]) -> dict | None:
    """The common spelling only (PROFILE [--cwd DIR] ... -- CMD); anything else goes through the full
    parser and its messages. The old --profile/--workspace reach here already respelled (`cli._respell`)."""
    out: dict = {"profile": None, "cwd": ".", "resolve": {}, "egress_log": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out["cmd"] = argv[i + 1 :]
            return out if out["profile"] and out["cmd"] else None
        if take_flag(a):
            i += 1
            continue
        if not a.startswith("-") and out["profile"] is None:
            out["profile"] = a
            i += 1
            continue
        if i + 1 >= len(argv):
            return None
        value = argv[i + 1]
        if a in ("--cwd", "--egress-log"):
            out[a[2:].replace("-", "_")] = value
        elif a == "--egress-resolve":
            pair = parse_resolve(value)
            if pair is None:
                return None
            out["resolve"][pair[0]] = pair[1]
        else:
            return None
        i += 2
    return None


def parse_resolve(text: str) -> tuple[str, str] | None:
    """`NAME=ADDRESS` (an IP literal), or None."""
    import ipaddress

    name, sep, address = text.partition("=")
    try:
        return (name, str(ipaddress.ip_address(address))) if sep and name else None
    except ValueError:
        return None


def _entry_is_current(entry: dict) -> bool:
    return all(os.path.lexists(p) == seen for p, seen in entry["probe"].items())


def fast_main(argv: list[str]) -> int | None:
    """Run from the cache, or return None to let the full command line handle it."""
    parsed = _parse(argv)
    if parsed is None:
        return None
    workspace, cmd = parsed["cwd"], parsed["cmd"]
    path = resolve_profile_path(parsed["profile"])
    if path is None or not os.path.isdir(workspace):
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    entry = read_marshal(_cache_path(data, path, os.path.realpath(workspace)))
    if not isinstance(entry, dict) or not _entry_is_current(entry):
        return None
    problem = _hidden_command(entry, cmd)
    if which(entry["argv"][0]) is None:  # the sandbox's program, as the run will start it
        problem = "bubblewrap is not installed (bwrap not on PATH): apt-get install bubblewrap"
    if problem:
        print(f"agent-box: {problem}", file=sys.stderr)
        return 4
    return execute(entry, cmd, resolve=parsed["resolve"], egress_log=parsed["egress_log"])


def _hidden_command(entry: dict, cmd: list[str]) -> str | None:
    path_env = os.environ.get("PATH", os.defpath)
    found = which(cmd[0], path=path_env)
    if found is None:
        return None  # bwrap reports a missing command itself
    real = os.path.realpath(found)

    def inside(p: str, roots: list[str]) -> bool:
        return any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)

    if inside(real, entry["hidden"]) and not inside(real, entry["visible"]):
        # a PATH entry that the sandbox hides may have a visible twin further down PATH
        visible_path = os.pathsep.join(
            d for d in path_env.split(os.pathsep) if not inside(os.path.realpath(d or "."), entry["hidden"])
        )
        alt = which(cmd[0], path=visible_path)
        if alt is None:
            return f"{cmd[0]} resolves to {real}, which the sandbox hides (under {', '.join(entry['hidden'])})"
    return None


def execute(entry: dict, cmd: list[str], resolve: dict[str, str] | None = None, egress_log: str | None = None) -> int:
    """Run cmd in the entry's sandbox, in the run lifecycle (`run.lifecycle`), signals forwarded; CMD's exit status.

    Refusals (a proxy that cannot start, one that dies during the run) print one line and return 4.
    """
    from agentbox.errors import AgentBoxError
    from agentbox.run.lifecycle import cannot_start, sandboxed, say
    from agentbox.sandbox.session import run_forwarding

    # the decision log is written by this (host) process after the run: never where the run can write (refused at
    # the start, `refuse_writable_state`)
    if egress_log:
        entry = {**entry, "trusted": {**entry.get("trusted", {}), "the --egress-log file": os.path.abspath(egress_log)}}
    try:
        with sandboxed(entry, private_folder("agentbox-run-"), resolve=resolve, egress_copy=egress_log) as run:
            detail_argv("sandbox run", [*run.argv, *cmd])
            try:
                status = run_forwarding([*run.argv, *cmd], run.env, run.pass_fds)
            except OSError as exc:
                raise cannot_start(exc) from exc
            run.ended(status)
    except AgentBoxError as exc:
        say(str(exc))
        return exc.exit_code
    assert run.status is not None  # run.ended() above gave it the command's exit status
    return run.status


def build_entry(plan, masks, hidden: tuple[str, ...], visible: tuple[str, ...], probe_paths: list[str]) -> dict:
    from agentbox.sandbox.session import entry_from_plan

    entry = entry_from_plan(plan, masks)
    entry.update(
        {"probe": {p: os.path.lexists(p) for p in probe_paths}, "hidden": list(hidden), "visible": list(visible)}
    )
    return entry


def sandbox_run(
    profile_arg: str,
    workspace: str,
    cmd: list[str],
    resolve: dict[str, str] | None = None,
    egress_log: str | None = None,
) -> int:
    """The cold path: validate and compile, cache the result, then run."""
    return execute(compiled_entry(profile_arg, workspace, cmd), cmd, resolve=resolve, egress_log=egress_log)


def compiled_entry(profile_arg: str, workspace: str, cmd: list[str]) -> dict:
    """Validate and compile the profile's sandbox for `workspace` into a run entry, and cache it."""
    from agentbox.compile.compiler import compile_plan
    from agentbox.errors import InputError, SandboxError
    from agentbox.core.profile import load_profile
    from agentbox.sandbox.backend import get_backend
    from agentbox.sandbox.surfaces import _layers, discover

    get_backend().binary()
    loaded = load_profile(profile_arg)
    if not os.path.isdir(workspace):
        raise InputError("not a directory", field=f"--cwd {workspace}")
    ws = os.path.realpath(workspace)
    plan = compile_plan(loaded, ws)
    req = plan.native.requirements
    hidden = get_backend(plan.sandbox.backend).hidden_roots(req, home_dir())
    masks = discover(ws, loaded.profile.name, req.surfaces, hidden)
    visible = (ws, *(dst for _, _, dst in plan.sandbox.binds if not dst.startswith("/tmp/agentbox")))
    probe_paths = sorted(
        {os.path.join(layer, s.path) for s in req.surfaces for layer in _layers(ws, s.discovery)}
        | {os.path.join(ws, ".agentbox")}
    )
    entry = {**build_entry(plan, masks, hidden, visible, probe_paths), "trusted": {"the profile": loaded.source}}
    problem = _hidden_command(entry, cmd)
    if problem:
        raise SandboxError(problem)
    write_marshal_atomic(_cache_path(open(loaded.source, "rb").read(), loaded.source, ws), entry)
    return entry
