"""The ACP entries of the harnesses (`acp.yaml`: the packaged data folder's, then each registered harness's own):
whether an installable ACP adapter package drives a harness or its binary has a native ACP subcommand, and what
`agent-box acp` must know of the agent's protocol surface. Data only: a matrix reads which adapter a harness needs
(its cells' installs), `agentbox.harnesses.acp` starts the agent. Nothing here names a harness.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict, model_validator

from agentbox.core.registry import PACKAGED_DATA, data_dir, harness_names
from agentbox.harnesses.packages import PACKAGES

__all__ = ["FILE", "AcpMeta", "AcpEntry", "acp_entry", "acp_harnesses", "acp_adapter"]

FILE = "acp.yaml"  # in the packaged data folder, and in a registered harness's own


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

    entries: dict[str, AcpEntry] = {}
    files = [f / FILE for f in dict.fromkeys([PACKAGED_DATA, *(data_dir(n) for n in harness_names())])]
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
