"""Start a harness as an ACP agent (Agent Client Protocol over stdio), from data.

`agentbox/data/acp.yaml` says, per harness, whether an installable ACP adapter package drives it
(with the environment that points the adapter at the pinned harness) or the harness binary has a
native ACP subcommand, and what `agent-box acp` must know about the agent's protocol surface: which
`_meta` keys of a client's session request it reads (and which of them widen the plan), which of its
session modes widen the plan, and whether it takes MCP servers only from the client. Nothing here names
a harness.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

from agentbox.errors import HarnessError
from agentbox.core.plan import CompileResult
from agentbox.core.registry import PACKAGED_DATA, data_dir, harness_names

__all__ = [
    "AcpEntry",
    "unsupported",
    "AcpMeta",
    "acp_entry",
    "acp_harnesses",
    "acp_adapter",
    "acp_command",
    "acp_binds",
    "launched",
    "AcpUnavailable",
]

_FILE = "acp.yaml"  # in the packaged data folder, and in a registered harness's own


class AcpUnavailable(HarnessError):
    """The harness has no ACP entry, or its ACP adapter package is not installed."""


class AcpMeta(BaseModel):
    """What the agent reads from the `_meta` of a client's session request (session/new, load, resume, fork).

    Dotted paths (`claudeCode.options`). `refuse`: keys that would widen the plan; a request carrying one is
    refused, naming it. `keep`: keys that cannot widen it, passed on. Every other key is stripped: the endpoint
    cannot judge what it does."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    keep: tuple[str, ...] = ()
    refuse: dict[str, str] = {}  # key -> why it widens the plan


class AcpEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    adapter: str | None = None  # an installable from packages.yaml
    args: tuple[str, ...] = ()
    native: tuple[str, ...] | None = None  # a subcommand of the harness binary
    global_args: bool = False
    env: dict[str, str] = {}
    meta: AcpMeta = AcpMeta()
    # session modes (session/set_mode, the `mode` config option, a permission option of that id) that widen the
    # plan, with why; the endpoint refuses switching to them
    refuse_modes: dict[str, str] = {}
    # the agent loads MCP servers only from the client's session request (not from the compiled config): the
    # endpoint then hands it the profile's allowed servers in place of the client's
    mcp_from_session: bool = False
    # the client methods (fs/*, terminal/*) the agent called, per version of the agent (the adapter's, or the
    # harness's for a native one), when a client offered them all and the scripted model wrote, read and ran a
    # command; conformance/test_acp_endpoint.py observes it and fails on a version not recorded here
    client_methods: dict[str, tuple[str, ...]] = {}
    # what the adapter's npm launcher (a `#!/usr/bin/env node` script that only picks its platform package's
    # native binary and runs it with the same arguments, stdio and environment) would start, by machine: a path
    # relative to the launcher package's npm scope folder. The endpoint starts that binary itself, sparing the
    # editor a node start (~60 ms) on every `initialize`; where it is not installed, the launcher runs
    launches: dict[str, str] = {}

    @model_validator(mode="after")
    def _one_way(self) -> "AcpEntry":
        if (self.adapter is None) == (self.native is None):
            raise ValueError("give exactly one of `adapter` and `native`")
        if self.native is not None and self.args:
            raise ValueError("`args` belongs to an adapter entry; put a native entry's arguments in `native`")
        if self.launches and self.adapter is None:
            raise ValueError("`launches` names what an adapter's launcher starts; a native entry has no launcher")
        if self.adapter is not None and self.global_args:
            raise ValueError("an adapter is not the harness CLI: it cannot take the plan's global flags")
        return self


@lru_cache(maxsize=None)
def _entries() -> dict[str, AcpEntry]:
    import yaml

    from agentbox.harnesses.packages import PACKAGES

    entries: dict[str, AcpEntry] = {}
    files = [f / _FILE for f in dict.fromkeys([PACKAGED_DATA, *(data_dir(n) for n in harness_names())])]
    for path in (p for p in files if p.is_file()):
        raw = yaml.safe_load(path.read_text()) or {}
        entries.update({name: AcpEntry.model_validate(spec) for name, spec in raw.items()})
    known = harness_names()
    unknown = sorted(
        {
            *(n for n in entries if n not in known),
            *(e.adapter for e in entries.values() if e.adapter and e.adapter not in PACKAGES()),
        }
    )
    if unknown:
        raise ValueError(
            f"{', '.join(map(str, files))}: unknown harness(es) or ACP adapter package(s): {', '.join(unknown)}"
        )
    return entries


def acp_harnesses() -> tuple[str, ...]:
    return tuple(_entries())


def acp_entry(harness: str) -> AcpEntry | None:
    return _entries().get(harness)


def acp_adapter(harness: str) -> str | None:
    """The adapter package the harness needs for ACP (None: native or no ACP entry)."""
    entry = acp_entry(harness)
    return entry.adapter if entry else None


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
        from agentbox.harnesses.installs import find_binary

        found = find_binary(entry.adapter)
        if found is None:
            raise AcpUnavailable(
                f"{harness}: the ACP adapter {entry.adapter} is not installed "
                f"(agent-box harness install {entry.adapter}@VERSION)"
            )
        adapter_binary = found.binary
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


def acp_binds(harness: str, adapter_binary: str | None) -> tuple[str, ...]:
    """The read-only binds the harness's ACP agent needs (its adapter's install folder); () for a native one."""
    entry = acp_entry(harness)
    if entry is None or entry.adapter is None or adapter_binary is None:
        return ()
    return _install_roots(adapter_binary)


def _install_roots(binary: str) -> tuple[str, ...]:
    """The package prefix that holds the adapter (npm prefix or venv parent), plus node's folder."""
    import os
    import shutil

    roots: list[str] = []
    resolved = Path(binary).resolve()
    for parent in resolved.parents:
        if parent.name in ("node_modules", "venv", ".venv"):
            roots.append(str(parent.parent))
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
