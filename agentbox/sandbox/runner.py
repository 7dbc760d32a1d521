"""`agent-box sandbox run`: CMD under the profile's sandbox alone, returning CMD's exit status.

This is a hot path (the negative suite's sandbox layer calls it per vector), so a compiled run is
cached by the profile's exact bytes, the workspace, the home and the package's own files; a cache
hit imports neither pydantic nor YAML. The cache also records which project surfaces existed, so a
new `.claude` in the workspace invalidates it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

__all__ = ["fast_main", "sandbox_run", "execute"]

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE_FORMAT = "1"


def _home() -> str:
    return os.environ.get("HOME") or "/root"


def _agentbox_home() -> str:
    env = os.environ.get("AGENTBOX_HOME")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    from ..home import agentbox_home

    return str(agentbox_home())


def _package_fingerprint() -> str:
    h = hashlib.sha256(CACHE_FORMAT.encode())
    for root, dirs, files in os.walk(_PKG):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".yaml", ".json")):
                st = os.stat(os.path.join(root, name))
                h.update(f"{name}:{st.st_mtime_ns}:{st.st_size};".encode())
    return h.hexdigest()


def _cache_path(profile_bytes: bytes, profile_path: str, workspace: str) -> str:
    key = hashlib.sha256(b"\0".join([
        profile_bytes, os.path.realpath(profile_path).encode(), workspace.encode(), _home().encode(),
        _package_fingerprint().encode(),
    ])).hexdigest()
    return os.path.join(_agentbox_home(), "cache", "sandbox", f"{key}.json")


def _resolve_profile_path(arg: str) -> str | None:
    if "/" in arg or arg.endswith((".yaml", ".yml")) or os.path.exists(arg):
        return arg
    for suffix in (".yaml", ".yml"):
        candidate = os.path.join(_agentbox_home(), "profiles", arg + suffix)
        if os.path.exists(candidate):
            return candidate
    return None


def _parse(argv: list[str]) -> tuple[str, str, list[str]] | None:
    profile = workspace = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return (profile, workspace, argv[i + 1:]) if profile and workspace and argv[i + 1:] else None
        if a in ("--profile", "--workspace") and i + 1 < len(argv):
            if a == "--profile":
                profile = argv[i + 1]
            else:
                workspace = argv[i + 1]
            i += 2
            continue
        return None  # anything unusual goes through the full parser and its messages
    return None


def _entry_is_current(entry: dict) -> bool:
    return all(os.path.lexists(p) == seen for p, seen in entry["probe"].items())


def fast_main(argv: list[str]) -> int | None:
    """Run from the cache, or return None to let the full command line handle it."""
    parsed = _parse(argv)
    if parsed is None:
        return None
    profile_arg, workspace, cmd = parsed
    path = _resolve_profile_path(profile_arg)
    if path is None or not os.path.isdir(workspace):
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
        with open(_cache_path(data, path, os.path.realpath(workspace))) as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    if not _entry_is_current(entry):
        return None
    problem = _hidden_command(entry, cmd)
    if shutil.which("bwrap") is None:
        problem = "bubblewrap is not installed (bwrap not on PATH): apt-get install bubblewrap"
    if problem:
        print(f"agent-box: {problem}", file=sys.stderr)
        return 4
    return execute(entry, cmd)


def _hidden_command(entry: dict, cmd: list[str]) -> str | None:
    path_env = os.environ.get("PATH", os.defpath)
    found = shutil.which(cmd[0], path=path_env)
    if found is None:
        return None  # bwrap reports a missing command itself
    real = os.path.realpath(found)
    inside = lambda p, roots: any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)
    if inside(real, entry["hidden"]) and not inside(real, entry["visible"]):
        # a PATH entry that the sandbox hides may have a visible twin further down PATH
        visible_path = os.pathsep.join(d for d in path_env.split(os.pathsep)
                                       if not inside(os.path.realpath(d or "."), entry["hidden"]))
        alt = shutil.which(cmd[0], path=visible_path)
        if alt is None:
            return f"{cmd[0]} resolves to {real}, which the sandbox hides (under {', '.join(entry['hidden'])})"
    return None


def _materialize(entry: dict, run_dir: str) -> None:
    os.makedirs(os.path.join(run_dir, "config"), exist_ok=True)
    for rel, content in entry.get("config", {}).items():
        path = os.path.join(run_dir, "config", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(content)
    for backing, kind, default_text in entry["masks"]:
        parent = os.path.dirname(backing)
        os.makedirs(parent, exist_ok=True)
        if os.path.islink(backing):
            raise OSError(f"private backing {backing} is a symlink")
        if kind == "directory":
            os.makedirs(backing, exist_ok=True)
        elif not os.path.exists(backing):
            with open(backing, "w") as f:
                f.write(default_text)


def execute(entry: dict, cmd: list[str], run_dir: str | None = None, extra_env: dict | None = None,
            stdin=None, stdout=None, stderr=None) -> int:
    own = run_dir is None
    run_dir = run_dir or tempfile.mkdtemp(prefix="agentbox-run-")
    try:
        _materialize(entry, run_dir)
        env = {k: os.environ[k] for k in entry["env_allow"] if k in os.environ}
        env.update(entry["env"])
        env.update(extra_env or {})
        argv = [a.replace("{run_dir}", run_dir) for a in entry["argv"]]
        argv[0] = shutil.which("bwrap") or argv[0]
        proc = subprocess.Popen([*argv, "--", *cmd], env=env, stdin=stdin, stdout=stdout, stderr=stderr)
        forward = lambda signum, frame: proc.send_signal(signum)
        previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            return proc.wait()
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
    finally:
        if own:
            shutil.rmtree(run_dir, ignore_errors=True)


def build_entry(plan, masks, hidden: tuple[str, ...], visible: tuple[str, ...], probe_paths: list[str]) -> dict:
    from .bwrap import BASE_ENV

    return {
        "argv": list(plan.sandbox.argv),
        "env": dict(plan.sandbox.env),
        "env_allow": sorted({*BASE_ENV, *plan.native.requirements.env_allow}),
        "masks": [[m.backing, m.surface.kind, m.surface.default_text] for m in masks],
        "config": {a.path: a.content for a in plan.native.artifacts},
        "probe": {p: os.path.lexists(p) for p in probe_paths},
        "hidden": list(hidden),
        "visible": list(visible),
    }


def sandbox_run(profile_arg: str, workspace: str, cmd: list[str]) -> int:
    """The cold path: validate and compile, cache the result, then run."""
    from ..compiler import compile_plan
    from ..errors import InputError, SandboxError
    from ..profile import load_profile
    from .bwrap import SandboxRequest, bwrap_binary, hidden_paths, hidden_roots
    from .surfaces import _layers, discover

    bwrap_binary()
    loaded = load_profile(profile_arg)
    if not os.path.isdir(workspace):
        raise InputError("not a directory", field=f"--workspace {workspace}")
    ws = os.path.realpath(workspace)
    plan = compile_plan(loaded, ws)
    req = plan.native.requirements
    masks = discover(ws, loaded.profile.name, req.surfaces, hidden_roots(req, _home()))
    request = SandboxRequest(requirements=req, workspace=ws, home=_home(), masks=masks)
    hidden = hidden_paths(request)
    visible = (ws, *(dst for _, _, dst in plan.sandbox.binds if not dst.startswith("/tmp/agentbox")))
    probe_paths = sorted({os.path.join(layer, s.path) for s in req.surfaces for layer in _layers(ws, s.discovery)}
                         | {os.path.join(ws, ".agentbox")})
    entry = build_entry(plan, masks, hidden, visible, probe_paths)
    problem = _hidden_command(entry, cmd)
    if problem:
        raise SandboxError(problem)
    cache = _cache_path(open(loaded.source, "rb").read(), loaded.source, ws)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    tmp = f"{cache}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(entry, f)
    os.replace(tmp, cache)
    return execute(entry, cmd)
