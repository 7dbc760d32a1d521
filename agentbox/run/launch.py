"""`agent-box launch`: the hot half. Start an allowed, compiled launch and record its Run.

The cold half (`launch_plan`) probes, compiles, reconciles the evidence and gates; when the gate
allows, it writes a launch entry to `$AGENTBOX_HOME/cache/launch/`, keyed by everything the decision
was made from: the profile's bytes, the project, HOME, the evidence store, the flags and the
package's own files. The entry also records what it cannot key on but can re-check in a few
syscalls: which binary `find_binary` would pick, that binary's stat and the stat of every file of its
build (the native binary its launcher starts, a Python distribution's files: `build_identity`; the
build digest and version are trusted while dev/inode/size/mtime/ctime are unchanged, as git trusts
its index), the project's config surfaces and git roots, and the evidence store's files. A launch
whose entry is current therefore imports neither pydantic nor YAML, never probes, and never reads an
evidence record.
A refusal is never cached: it is recomputed, so new evidence is seen at once.
"""

from __future__ import annotations

import os

from agentbox.core.console import detail, detail_argv, take_flag, warn
from agentbox.hot import (
    MARSHAL_TAG,
    agentbox_home,
    home_dir,
    kernel_traces,
    package_fingerprint,
    resolve_profile_path,
    sha256,
    private_folder,
    read_marshal,
    stat_key,
    store_signature,
    which,
)

__all__ = [
    "fast_main",
    "execute",
    "cache_file",
    "binary_state",
    "surface_state",
    "stat_key",
    "FORMAT",
    "SENTINEL",
]

FORMAT = "2"
SENTINEL = "\0agentbox-harness-args\0"  # finds where an adapter puts the user's harness args


def _parse(argv: list[str]) -> dict | None:
    """The common spelling only; anything else goes through argparse and its messages."""
    out: dict = {"profile": None, "cwd": ".", "evidence": None, "binary": None, "accept_unverified": []}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out["extra"] = argv[i + 1 :]
            break
        if take_flag(a):
            i += 1
            continue
        if a in ("--cwd", "--evidence", "--binary") and i + 1 < len(argv):
            out[a[2:]] = argv[i + 1]
            i += 2
            continue
        if a == "--accept-unverified" and i + 1 < len(argv):
            out["accept_unverified"].append(argv[i + 1])
            i += 2
            continue
        if not a.startswith("-") and out["profile"] is None:
            out["profile"] = a
        else:
            return None
        i += 1
    else:
        out["extra"] = []
    return out if out["profile"] else None


def cache_file(
    profile_bytes: bytes,
    profile_path: str,
    cwd: str,
    evidence: str,
    binary: str | None,
    accept_unverified: list[str] | tuple[str, ...],
    kind: str = "launch",
    fmt: str = FORMAT,
    ext: str = MARSHAL_TAG,
) -> str:
    """Where an allowed start of these inputs is cached (`kind`: the command, `agent-box launch` or `acp`; `ext`:
    its format, launch's in this interpreter's marshal, which it reads without importing json: benchmarks/launch.py)."""
    key = sha256(
        b"\0".join(
            [
                fmt.encode(),
                profile_bytes,
                os.path.realpath(profile_path).encode(),
                cwd.encode(),
                home_dir().encode(),
                os.path.abspath(evidence).encode(),
                (binary or "").encode(),
                "\n".join(sorted(set(accept_unverified))).encode(),
                package_fingerprint().encode(),
            ]
        )
    ).hexdigest()
    return os.path.join(agentbox_home(), "cache", kind, f"{key}.{ext}")


def binary_state(base: str, rel: str, command: str) -> list:
    """Everything `installs.find_binary(name)` decides from: the version folders and PATH."""
    try:
        names = sorted(n for n in os.listdir(base) if not n.startswith("."))
    except OSError:
        names = []
    listing = [
        [n, os.path.exists(os.path.join(base, n, rel)), os.path.exists(os.path.join(base, n, ".installing"))]
        for n in names
    ]
    return [listing, which(command)]


def _kind(path: str) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "-"
    return "l" if (mode & 0o170000) == 0o120000 else "d" if (mode & 0o170000) == 0o040000 else "f"


def surface_state(paths: list[str]) -> dict[str, str]:
    """Per path: absent, file, directory or symlink; a mask's meaning changes with any of them."""
    return {p: _kind(p) for p in paths}


def plan_current(check: dict, binary_arg: str | None) -> bool:
    """Whether what a compiled plan rests on is as it was: the binary `find_binary` picks and its build, the
    project's config surfaces, the user, the sandbox's program and the MCP servers' commands (a few syscalls each)."""
    if binary_arg is None and binary_state(*check["layout"]) != check["binary_state"]:
        return False
    invoked = binary_arg if binary_arg is not None else check["invoked"]
    if os.path.realpath(invoked) != check["resolved"] or stat_key(check["resolved"]) != check["stat"]:
        return False
    if any(stat_key(path) != stat for path, stat in check["build"]):
        return False
    if surface_state(list(check["surfaces"])) != check["surfaces"]:
        return False
    if any([which(command), stat_key(which(command) or "")] != seen for command, seen in check.get("mcp", ())):
        return False
    if "kernel" in check and check["kernel"] != os.uname().release:
        return False  # the gate read evidence of this kernel release only: after an upgrade it must read again
    if "kernel_traces" in check and check["kernel_traces"] != kernel_traces():
        return False  # a gate's check: the kernel it judged claims resting on inapplicable vectors for
    sandbox = which(check.get("sandbox_program") or "")  # an entry without it is older: compiled again
    return check.get("uid") == os.geteuid() and stat_key(sandbox or "") == check.get("sandbox_binary")


def _current(entry: dict, binary_arg: str | None) -> bool:
    check = entry["check"]
    return plan_current(check, binary_arg) and store_signature(check["evidence"]) == check["evidence_signature"]


def fast_main(argv: list[str]) -> int | None:
    """Launch from the cache, or return None to let the full command line (and the gate) handle it."""
    parsed = _parse(argv)
    if parsed is None:
        return None
    path = resolve_profile_path(parsed["profile"])
    cwd = os.path.realpath(parsed["cwd"])
    if path is None or not os.path.isdir(cwd):
        return None
    evidence = parsed["evidence"] or os.path.join(agentbox_home(), "evidence")
    try:
        with open(path, "rb") as f:
            data = f.read()
        entry = read_marshal(cache_file(data, path, cwd, evidence, parsed["binary"], parsed["accept_unverified"]))
        if not isinstance(entry, dict) or entry.get("format") != FORMAT or not _current(entry, parsed["binary"]):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    detail("launching from the cache: the gate allowed this launch and nothing it decided from has changed")
    return execute(entry, parsed["extra"])


def execute(entry: dict, extra: list[str]) -> int:
    """Start the harness with the terminal attached, in the run lifecycle (`run.lifecycle`): recorded, cleaned up."""
    # the hot path's imports, deferred: a launch from its cache imports no more than it runs (benchmarks/launch.py)
    from agentbox.errors import AgentBoxError
    from agentbox.run.lifecycle import Record, cannot_start, sandboxed, say
    from agentbox.run.runs import RunStore, egress_log
    from agentbox.sandbox.session import run_attached

    if entry.get("notice"):
        say(entry["notice"])
    key_env = entry.get("key_env")
    if key_env and not os.environ.get(key_env):
        warn(
            f"model.api_key_env names {key_env}, which is not set here: the harness starts without its model key "
            f"(export {key_env}=... first)"
        )
    store = RunStore(os.path.join(agentbox_home(), "agentbox.db"))
    store.reap()
    run_dir = private_folder("agentbox-launch-")
    record = Record(store, {**entry["run"], "harness_args": extra})
    kept = None
    if entry["sandbox"].get("state_files"):
        # json and fnmatch (re, enum: ~5 ms) only for a harness whose answers are kept (benchmarks/launch.py)
        from agentbox.run.profile_state import state_dir

        kept = state_dir(agentbox_home(), entry["run"]["profile"], entry["run"]["harness"])
    try:
        with sandboxed(
            entry["sandbox"],
            run_dir,
            record=record,
            egress_copy=lambda rid: egress_log(agentbox_home(), rid),
            state_dir=kept,
        ) as run:
            argv = [*run.argv, *entry["harness"], *extra]
            detail_argv(f"run {run.run_id}", argv)
            try:
                status = run_attached(argv, run.env, run.run_id, run.pass_fds)
            except OSError as exc:
                raise cannot_start(exc) from exc
            run.ended(status)
    except AgentBoxError as exc:
        say(str(exc))
        return exc.exit_code
    finally:
        store.close()
    assert run.status is not None  # run.ended() above gave it the harness's exit status
    return run.status
