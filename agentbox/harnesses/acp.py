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
from agentbox.harnesses.build_identity import BuildFiles, Identity, identify, single_file, tree

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
    return [program, *(_fill(a, subs) for a in entry.args)], env, _install_roots(adapter_binary)


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


def adapter_build(harness: str, found: Installed | None = None) -> tuple[AgentBuild, Identity] | None:
    """The build of the ACP adapter that drives `harness` (None: its ACP agent is the harness binary itself, or it
    has no ACP entry), with its identity (whose `state` a cached start re-checks). `found`: the adapter's install
    (`installs.Installed`) as the caller resolved it for `acp_command`; by default the newest installed one, the one
    `acp_command` starts.

    Its digest is `build_identity`'s, of what `launched` starts: the native binary the npm launcher would pick (which
    for codex-acp holds its own codex core), or, where the launcher runs itself, its npm package's files (a
    `#!/usr/bin/env node` entry imports the rest of its package: claude-agent-acp's `dist/`)."""
    from agentbox.harnesses.installs import package_version

    entry = acp_entry(harness)
    if entry is None or entry.adapter is None:
        return None
    found = found or _installed(harness, entry.adapter)
    identity = identify(_adapter_files(launched(entry, found.binary)))
    return AgentBuild(name=entry.adapter, version=package_version(found), sha256=identity.sha256), identity


def _adapter_files(program: str) -> BuildFiles:
    """The files that run when the adapter's `program` starts: a native binary itself; a script, its npm package."""
    import os

    resolved = os.path.realpath(program)
    if resolved.endswith(".js"):
        for parent in Path(resolved).parents:
            if parent.name == "node_modules":
                break  # no package of its own: the script alone
            if (parent / "package.json").is_file():
                files, folders = tree(str(parent), parent.name)
                return BuildFiles(files=files, watched=folders)
    return single_file(program)


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
