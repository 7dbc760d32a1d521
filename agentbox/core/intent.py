"""PermissionIntent: the small, portable statement of what one run may do.

Every item carries a requirement. An item the profile states is `required` unless it says
otherwise; an item it leaves out takes the default below as `advisory`, so nothing the user did
not ask for can refuse a launch, and nothing they did ask for can silently degrade.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "Requirement",
    "WorkspaceIntent",
    "ShellIntent",
    "NetworkIntent",
    "McpIntent",
    "HostHomeIntent",
    "EnvironmentIntent",
    "HostExecutedIntent",
    "PermissionIntent",
    "ITEMS",
    "LEVELS",
    "strength",
]


Requirement = Literal["required", "advisory"]


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    requirement: Requirement = "required"


WorkspaceAccess = Literal["none", "read_only", "read_write"]
ShellAccess = Literal["deny", "ask", "allow"]
NetworkAccess = Literal["none", "restricted", "unrestricted"]
HomeAccess = Literal["hidden", "visible"]
HostExecutedAccess = Literal["protected", "writable"]

# Ordered from strongest (most restrictive) to weakest; `strength` compares two values of an item.
LEVELS: dict[str, tuple[str, ...]] = {
    "workspace": ("none", "read_only", "read_write"),
    "shell": ("deny", "ask", "allow"),
    "command_network": ("none", "restricted", "unrestricted"),
    "host_home": ("hidden", "visible"),
    "host_executed": ("protected", "writable"),
}

_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class WorkspaceIntent(_Item):
    access: WorkspaceAccess


class ShellIntent(_Item):
    access: ShellAccess


class NetworkIntent(_Item):
    access: NetworkAccess
    allow_domains: tuple[str, ...] = ()

    @field_validator("allow_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # The egress proxy's own parser: an entry the intent accepts is one the proxy enforces as written
        # (`host`, `host:port`, `*.suffix[:port]`, `ip[:port]`, `[v6][:port]`; no numeric IPv4 spellings).
        from agentbox.egress.policy import parse_entry

        for entry in value:
            parse_entry(entry)
        return tuple(sorted(set(value)))

    @model_validator(mode="after")
    def _domains_fit_access(self) -> "NetworkIntent":
        if self.access == "restricted" and not self.allow_domains:
            raise ValueError("access 'restricted' needs at least one entry in allow_domains")
        if self.access != "restricted" and self.allow_domains:
            raise ValueError(f"allow_domains only applies to access 'restricted', not {self.access!r}")
        return self


class McpIntent(_Item):
    servers: tuple[str, ...] = ()
    tools: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _servers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _NAME_RE.match(name):
                raise ValueError(f"{name!r} is not a valid MCP server name")
        return tuple(sorted(set(value)))

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        out = {}
        for server, tools in value.items():
            for tool in tools:
                if not _NAME_RE.match(tool):
                    raise ValueError(f"{server}: {tool!r} is not a valid MCP tool name")
            out[server] = tuple(sorted(set(tools)))
        return dict(sorted(out.items()))

    @model_validator(mode="after")
    def _tools_name_allowed_servers(self) -> "McpIntent":
        stray = sorted(set(self.tools) - set(self.servers))
        if stray:
            raise ValueError(f"tools names servers not in servers: {', '.join(stray)}")
        return self

    def allowed_tools(self, server: str) -> tuple[str, ...] | None:
        """The tool allowlist of a server, or None when every tool of an allowed server is allowed."""
        return self.tools.get(server)


class HostHomeIntent(_Item):
    access: HomeAccess


class EnvironmentIntent(_Item):
    allow: tuple[str, ...] = ()

    @field_validator("allow")
    @classmethod
    def _names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _ENV_RE.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return tuple(sorted(set(value)))


class HostExecutedIntent(_Item):
    """What programs on the host run or load later from a writable workspace (git's hooks and config, editors'
    tasks, rc files, the harnesses' project configs: agentbox/data/host_executed.yaml). `protected`: read-only to
    the run, and not creatable where absent at the root, except the names in `writable` (a bare name frees it
    everywhere, a path with a slash that one path). `writable`: the run may write all of them."""

    access: HostExecutedAccess
    writable: tuple[str, ...] = ()

    @field_validator("writable")
    @classmethod
    def _paths(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from agentbox.core.paths import check_relative

        for path in value:
            check_relative(path)
        return tuple(sorted(set(value)))

    @model_validator(mode="after")
    def _names_fit_access(self) -> "HostExecutedIntent":
        if self.access == "writable" and self.writable:
            raise ValueError("writable names only apply to access 'protected': 'writable' frees every one already")
        return self


def _shorthand(key: str) -> Callable[[Any], Any]:
    """Let `host_home: hidden` stand for `host_home: {access: hidden}`."""

    def before(value: Any) -> Any:
        return {key: value} if isinstance(value, str) else value

    return before


_ADVISORY: Requirement = "advisory"


class PermissionIntent(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    workspace: WorkspaceIntent = WorkspaceIntent(access="read_write", requirement=_ADVISORY)
    shell: ShellIntent = ShellIntent(access="allow", requirement=_ADVISORY)
    command_network: NetworkIntent = NetworkIntent(access="unrestricted", requirement=_ADVISORY)
    mcp: McpIntent = McpIntent(requirement=_ADVISORY)
    host_home: HostHomeIntent = HostHomeIntent(access="hidden", requirement=_ADVISORY)
    environment: EnvironmentIntent = EnvironmentIntent(requirement=_ADVISORY)
    host_executed: HostExecutedIntent = HostExecutedIntent(access="protected", requirement=_ADVISORY)

    @field_validator("host_executed", mode="before")
    @classmethod
    def _host_executed_shorthand(cls, value: Any) -> Any:
        return _shorthand("access")(value)

    @field_validator("host_home", mode="before")
    @classmethod
    def _home_shorthand(cls, value: Any) -> Any:
        return _shorthand("access")(value)

    def item(self, name: str) -> _Item:
        item: _Item = getattr(self, name)  # NAME is one of ITEMS, each field an _Item
        return item

    def provenance(self) -> dict[str, Literal["intent", "default"]]:
        return {name: ("intent" if name in self.model_fields_set else "default") for name in ITEMS}


ITEMS: tuple[str, ...] = tuple(PermissionIntent.model_fields)


def strength(item: str, a: str, b: str) -> int:
    """-1 when `a` is stronger (more restrictive) than `b`, 0 when equal, 1 when weaker."""
    order = LEVELS[item]
    return (order.index(a) > order.index(b)) - (order.index(a) < order.index(b))
