"""Start a harness as an ACP agent (Agent Client Protocol over stdio), from data.

`agentbox/data/acp.yaml` (read by `agentbox.harnesses.acp_entries`) says, per harness, whether an
installable ACP adapter package drives it (with the environment that points the adapter at the pinned
harness) or the harness binary has a native ACP subcommand, and what `agent-box acp` must know about the
agent's protocol surface: which `_meta` keys of a client's session request it reads (and which of them
widen the plan), which of its session modes widen the plan, and whether it takes MCP servers only from
the client. This module turns an entry into the command that starts the agent, with the adapter's
installed binary. Nothing here names a harness.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentbox.errors import HarnessError
from agentbox.core.plan import CompileResult
from agentbox.harnesses.acp_entries import FILE as _FILE
from agentbox.harnesses.acp_entries import AcpEntry, AcpMeta, acp_adapter, acp_entry, acp_harnesses
from agentbox.harnesses.agent_build import AgentBuild
from agentbox.harnesses.build_identity import BuildFile, BuildFiles, Identity, identify, single_file, tree

if TYPE_CHECKING:
    from agentbox.harnesses.installs import Installed

__all__ = [
    "AcpEntry",
    "unsupported",
    "AcpMeta",
    "acp_entry",
    "acp_harnesses",
    "acp_adapter",
    "acp_command",
    "adapter_build",
    "interpreter",
    "AgentBuild",
    "acp_binds",
    "launched",
    "AcpUnavailable",
]


class AcpUnavailable(HarnessError):
    """The harness has no ACP entry, or its ACP adapter package is not installed."""


def _fill(value: str, subs: dict[str, str]) -> str:
    for key, sub in subs.items():
        value = value.replace("{" + key + "}", sub)
    return value


def acp_command(
    harness: str, result: CompileResult, harness_binary: str, adapter_binary: str | None = None
) -> tuple[list[str], dict[str, str], tuple[str, ...]]:
    """(argv, extra_env, extra_ro_binds) that start `harness` as an ACP agent with the compiled plan.

    The binds are the adapter package's install folder (and whatever its binary needs), so it stays
    visible when the sandbox hides the home it lives under; they depend only on the binaries. The
    adapter binary is the newest installed one unless `adapter_binary` is given.
    """
    entry = acp_entry(harness)
    if entry is None:
        raise AcpUnavailable(f"{harness}: no ACP entry in {_FILE}")
    subs = {"harness_binary": harness_binary}
    env = {k: _fill(v, subs) for k, v in entry.env.items()}
    if entry.native is not None:
        argv = [harness_binary, *(result.argv if entry.global_args else ()), *entry.native]
        return argv, env, ()
    assert entry.adapter is not None
    if adapter_binary is None:
        adapter_binary = _installed(harness, entry.adapter).binary
    program = launched(entry, adapter_binary)
    # a script is started by the interpreter its `#!` line names, resolved here and named outright: inside the
    # sandbox `env node` would take whichever `node` the PATH finds first (a project's node_modules/.bin)
    runner = interpreter(program)
    argv = [runner, program] if runner is not None else [program]
    return [*argv, *(_fill(a, subs) for a in entry.args)], env, _install_roots(adapter_binary)


def interpreter(program: str) -> str | None:
    """The interpreter a script's `#!` line names (`/usr/bin/env node`: node as this machine's PATH finds it),
    symlinks resolved; None for a program that is no script. The adapter's build includes it (`adapter_build`)."""
    import os
    import shutil

    from agentbox.core.paths import shebang

    words = shebang(program)
    if words is None:
        return None
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        found = shutil.which(words[0]) if words else None
        return os.path.realpath(found) if found else None
    return os.path.realpath(words[0]) if words else None


def launched(entry: AcpEntry, adapter_binary: str) -> str:
    """The program to start for the adapter: the native binary its npm launcher would start (`launches`, this
    machine's entry, resolved from the launcher's real path) where that is installed, else the launcher itself."""
    import os
    import platform

    relative = entry.launches.get(platform.machine())
    launcher = os.path.realpath(adapter_binary)
    if relative is None or not launcher.endswith(".js"):
        return adapter_binary
    scope = os.path.dirname(os.path.dirname(os.path.dirname(launcher)))  # node_modules/@scope/<pkg>/bin/x.js
    native = os.path.join(scope, relative)
    return native if os.path.isfile(native) and os.access(native, os.X_OK) else adapter_binary


def _installed(harness: str, adapter: str) -> Installed:
    """The newest installed build of the harness's ACP adapter, the one an `agent-box acp` start picks."""
    from agentbox.harnesses.installs import find_binary

    found = find_binary(adapter)
    if found is None:
        raise AcpUnavailable(
            f"{harness}: the ACP adapter {adapter} is not installed (agent-box harness install {adapter}@VERSION)"
        )
    return found


def adapter_build(
    harness: str, found: Installed | None = None, project: str | None = None
) -> tuple[AgentBuild, Identity] | None:
    """The build of the ACP adapter that drives `harness` (None: its ACP agent is the harness binary itself, or it
    has no ACP entry), with its identity (whose `state` a cached start re-checks). `found`: the adapter's install
    (`installs.Installed`) as the caller resolved it for `acp_command`; by default the newest installed one, the one
    `acp_command` starts. `project`: where a run could write; a build with a file there is refused.

    Its digest is `build_identity`'s, of what `launched` starts: the native binary the npm launcher would pick (which
    for codex-acp holds its own codex core), or, where a script runs, every package it can load (its npm package and
    the dependencies Node resolves for it, optional ones included: claude-agent-acp's Claude Agent SDK holds its
    permission handling) and the interpreter that runs it."""
    from agentbox.harnesses.installs import package_version

    entry = acp_entry(harness)
    if entry is None or entry.adapter is None:
        return None
    found = found or _installed(harness, entry.adapter)
    files = _adapter_files(launched(entry, found.binary))
    if project is not None:
        _refuse_planted(harness, files, project)
    identity = identify(files)
    return AgentBuild(name=entry.adapter, version=package_version(found), sha256=identity.sha256), identity


def _refuse_planted(harness: str, files: BuildFiles, project: str) -> None:
    """A file of the adapter's build inside the project is one a run could replace for the next start (the
    project's node_modules on PATH): refused, as a harness binary there is (`launch_plan.refuse_planted`)."""
    import os

    from agentbox.core.paths import is_within
    from agentbox.errors import SandboxError

    root = os.path.realpath(project)
    for f in files.files:
        if is_within(os.path.realpath(f.path), root):
            raise SandboxError(
                f"{harness}: the ACP adapter's file {f.path} lies inside the project {root}, which a run "
                "with a read_write workspace can write (sandbox layer): a run could replace what the next start "
                "runs; install the adapter outside the project (agent-box harness install ADAPTER@VERSION)"
            )


def _adapter_files(program: str) -> BuildFiles:
    """The files that run when the adapter's `program` starts: a native binary itself; a script, the packages it
    can load and its interpreter."""
    import os

    resolved = os.path.realpath(program)
    runner = interpreter(resolved)
    if runner is None:
        return single_file(program)
    package = None
    for parent in Path(resolved).parents:
        if parent.name == "node_modules":
            break  # no package of its own: the script alone
        if (parent / "package.json").is_file():
            package = parent
            break
    if package is None:
        return BuildFiles(files=(*single_file(resolved).files, BuildFile("interpreter", runner)))
    files: dict[str, BuildFile] = {}
    folders: list[str] = []
    for name, folder in _closure(package):
        found, watched = tree(str(folder), name)
        files.update((f.path, f) for f in found)
        folders += watched
    files[runner] = BuildFile("interpreter", runner)
    return BuildFiles(files=tuple(files.values()), watched=tuple(dict.fromkeys(folders)))


def _closure(package: Path) -> list[tuple[str, Path]]:
    """The npm packages Node can load for `package`: itself and, by Node's resolution (its own node_modules, then
    each folder's above it), every dependency, optional and peer ones included where installed, and theirs.
    (name, folder), in a stable order."""
    import json

    seen: dict[Path, str] = {}
    todo = [("", package)]
    while todo:
        name, folder = todo.pop()
        real = folder.resolve()
        if real in seen:
            continue
        try:
            meta = json.loads((folder / "package.json").read_text())
        except (OSError, ValueError):
            meta = {}
        seen[real] = name or str(meta.get("name") or folder.name)
        wanted = {
            **(meta.get("peerDependencies") or {}),
            **(meta.get("optionalDependencies") or {}),
            **(meta.get("dependencies") or {}),
        }
        for dep in sorted(wanted):
            at = _resolve(folder, dep)
            if at is not None:
                todo.append((dep, at))
    return sorted(((n, f) for f, n in seen.items()), key=lambda x: (x[0], str(x[1])))


def _resolve(folder: Path, name: str) -> Path | None:
    """Where Node finds package `name` from `folder`: the nearest node_modules/<name> on the way up."""
    for base in (folder, *folder.parents):
        if base.name == "node_modules":
            continue
        candidate = base / "node_modules" / name
        if (candidate / "package.json").is_file():
            return candidate
    return None


def acp_binds(harness: str, adapter_binary: str | None) -> tuple[str, ...]:
    """The read-only binds the harness's ACP agent needs (its adapter's install folder); () for a native one."""
    entry = acp_entry(harness)
    if entry is None or entry.adapter is None or adapter_binary is None:
        return ()
    return _install_roots(adapter_binary)


def _install_roots(binary: str) -> tuple[str, ...]:
    """The package folder that holds the adapter (its `node_modules` or its venv), plus node's folder. The package
    folder itself, not the prefix above it: an adapter installed with `npm i` in a home has the home as its prefix,
    and a bind of that would put back a hidden home (`sandbox.cover` refuses it)."""
    import os
    import shutil

    roots: list[str] = []
    resolved = Path(binary).resolve()
    for parent in resolved.parents:
        if parent.name in ("node_modules", "venv", ".venv"):
            roots.append(str(parent))
            break
    else:
        roots.append(str(resolved.parent))
    node = shutil.which("node")
    if node:  # `#!/usr/bin/env node` adapters need the interpreter's folder too
        folder = os.path.dirname(os.path.realpath(node))
        if folder not in roots:
            roots.append(folder)
    return tuple(roots)


def unsupported(harness: str) -> str | None:
    """Why the harness cannot be driven as an ACP agent here, or None."""
    from agentbox.harnesses.installs import find_binary

    entry = acp_entry(harness)
    if entry is None:
        return "it has no ACP entry (agentbox/data/acp.yaml)"
    if entry.adapter is not None and find_binary(entry.adapter) is None:
        return f"its ACP adapter {entry.adapter} is not installed"
    return None
