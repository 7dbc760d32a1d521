"""`permission compile` and `permission explain`, answered from their own earlier output while nothing they
depend on changed.

Compiling imports pydantic, YAML and every adapter, about 250 ms of CPU before any work (measured:
`benchmarks/compile.py`), while the answer depends on few things: the profile's bytes, the project, HOME,
PATH, the flags, this package's own files (all in the key), and what `launch.plan_current` re-checks in a
few syscalls (the binary `find_binary` picks and its build's files, the project's config surfaces, the
user, bubblewrap, each MCP server's command). The first run writes the exact stdout, stderr and exit code
under `$AGENTBOX_HOME/cache/output/`; a later run whose key and checks hold replays them without importing
anything heavy, as a cached launch does. Only the common spelling is served (`compile|explain PROFILE
[--cwd DIR] [--json]`, default verbosity), and never a plan with an MCP tool allowlist: its servers are
asked for their tools afresh every time.
"""

from __future__ import annotations

import json
import os
import sys

from agentbox.hot import agentbox_home, home_dir, package_fingerprint, resolve_profile_path, sha256, write_json_atomic

__all__ = ["fast_main", "remember", "cache_file"]

FORMAT = "1"
SUBCOMMANDS = ("compile", "explain")


def _parse(argv: list[str]) -> dict | None:
    """`compile|explain PROFILE [--cwd DIR] [--json]`, or None for anything else (argparse handles it)."""
    if not argv or argv[0] not in SUBCOMMANDS:
        return None
    out = {"sub": argv[0], "profile": None, "cwd": ".", "json": False}
    rest = argv[1:]
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--cwd" and i + 1 < len(rest):
            out["cwd"] = rest[i + 1]
            i += 2
            continue
        if a == "--json":
            out["json"] = True
        elif not a.startswith("-") and out["profile"] is None:
            out["profile"] = a
        else:
            return None
        i += 1
    return out if out["profile"] else None


def cache_file(sub: str, as_json: bool, profile_bytes: bytes, profile_path: str, cwd: str) -> str:
    key = sha256(
        b"\0".join(
            [
                FORMAT.encode(),
                sub.encode(),
                b"json" if as_json else b"text",
                profile_bytes,
                os.path.realpath(profile_path).encode(),
                os.path.realpath(cwd).encode(),
                home_dir().encode(),
                os.environ.get("PATH", "").encode(),
                os.uname().release.encode(),
                package_fingerprint().encode(),
            ]
        )
    ).hexdigest()
    return os.path.join(agentbox_home(), "cache", "output", f"{key}.json")


def _located(parsed: dict) -> tuple[str, bytes] | None:
    path = resolve_profile_path(parsed["profile"])
    if path is None or not os.path.isdir(parsed["cwd"]):
        return None
    try:
        with open(path, "rb") as f:
            return path, f.read()
    except OSError:
        return None


def fast_main(argv: list[str]) -> int | None:
    """Replay a current cached answer, or return None to compile."""
    from agentbox.run.launch import plan_current

    parsed = _parse(argv)
    found = _located(parsed) if parsed else None
    if parsed is None or found is None:
        return None
    try:
        with open(cache_file(parsed["sub"], parsed["json"], found[1], found[0], parsed["cwd"])) as f:
            entry = json.load(f)
        if entry.get("format") != FORMAT or not plan_current(entry["check"], None):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    sys.stdout.write(entry["stdout"])
    sys.stderr.write(entry["stderr"])
    return entry["code"]


def remember(argv: list[str], check: dict, stdout: str, stderr: str, code: int) -> None:
    """Keep one answer for `fast_main` (argv as `fast_main` gets it); a spelling it would not serve is not kept."""
    parsed = _parse(argv)
    found = _located(parsed) if parsed else None
    if parsed is None or found is None:
        return
    try:
        write_json_atomic(
            cache_file(parsed["sub"], parsed["json"], found[1], found[0], parsed["cwd"]),
            {"format": FORMAT, "check": check, "stdout": stdout, "stderr": stderr, "code": code},
        )
    except OSError:
        pass  # a cache that cannot be written costs the next run its speed, nothing else
