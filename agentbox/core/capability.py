"""What a layer (a harness or a sandbox backend) declares it can enforce, per intent value.

Declarations are data (agentbox/data/capabilities/<layer>.yaml); this module only gives them a
shape and looks them up. A declaration is a claim to be tested, never a fact.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentbox.core.registry import data_dir
from agentbox.core.versions import Version, in_range

__all__ = [
    "Support",
    "CapabilityReport",
    "Declarations",
    "capability_id",
    "TRIVIAL",
    "load_declarations",
    "weakest",
]

Support = Literal["exact", "partial", "unsupported"]
_RANK = {"exact": 0, "partial": 1, "unsupported": 2}

# Values that ask for no restriction: any layer satisfies them without a mechanism.
TRIVIAL = frozenset({"shell.allow", "command_network.unrestricted", "host_home.visible", "host_executed.writable"})


def weakest(a: Support, b: Support) -> Support:
    return a if _RANK[a] >= _RANK[b] else b


def capability_id(item: str, value: dict[str, Any]) -> str:
    """`workspace.read_only`, `mcp.allowlist`, `environment.allowlist`: what a declaration is keyed by."""
    if item == "mcp":
        return "mcp.allowlist"
    if item == "environment":
        return "environment.allowlist"
    return f"{item}.{value['access']}"


class CapabilityReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    capability: str
    support: Support
    enforcement_scope: str = ""
    bypass_surfaces: tuple[str, ...] = ()
    holds_against: tuple[str, ...] = ()  # vectors of a bypassed surface the layer is seen to block anyway
    holds_against_as_root: tuple[str, ...] = ()  # the same, seen only when the harness was started by root
    tested_versions: tuple[str, ...] = ()
    reason: str = ""


class _Declared(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    support: Support
    enforcement_scope: str = ""
    bypass_surfaces: tuple[str, ...] = ()
    # vector ids of a bypassed surface that the layer is seen to block all the same (a surface is coarser than
    # what a harness protects: Codex keeps .codex read-only, not .mcp.json); the reason says what was seen
    holds_against: tuple[str, ...] = ()
    # the same, seen only when the harness was started by root: its own sandbox is built otherwise for a user
    # (Codex's helper refuses a nested user namespace to root's commands, not to a user's)
    holds_against_as_root: tuple[str, ...] = ()
    reason: str = ""
    dialects: tuple[str, ...] = ()  # empty: every dialect
    # the layers the entry speaks for (empty: every one); an entry for `composed` says what the harness does
    # inside the OS sandbox, where its own may be left off (a bubblewrap-based one cannot nest)
    layers: tuple[Literal["harness", "composed"], ...] = ()
    # the modes the entry speaks for (empty: every one): the same harness driven as an ACP agent may run another
    # code path (codex-acp embeds its own codex-core, whose sandbox holds less than the codex CLI's)
    modes: tuple[Literal["headless", "tui", "acp"], ...] = ()


class _Dialect(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    min: str | None = None
    max: str | None = None


class Declarations(BaseModel):
    """The declaration file of one layer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layer: str
    tested_versions: tuple[str, ...] = ()
    tested_range: dict[str, str] = Field(default_factory=dict)
    dialects: tuple[_Dialect, ...] = ()
    capabilities: dict[str, tuple[_Declared, ...]] = Field(default_factory=dict)

    def dialect_for(self, version: str | None) -> str:
        if not self.dialects:
            return "default"
        if version is None:
            return self.dialects[-1].name
        v = Version.parse(version)
        for d in self.dialects:
            if in_range(v, d.min, d.max):
                return d.name
        return self.dialects[-1].name

    def in_tested_range(self, version: str | None) -> bool:
        if version is None:
            return False
        return in_range(Version.parse(version), self.tested_range.get("min"), self.tested_range.get("max"))

    def report(
        self, capability: str, version: str | None, layer: str | None = None, mode: str | None = None
    ) -> CapabilityReport:
        if capability in TRIVIAL:
            return CapabilityReport(
                capability=capability,
                support="exact",
                enforcement_scope="nothing to restrict",
                tested_versions=self.tested_versions,
                reason="the intent asks for no restriction",
            )
        dialect = self.dialect_for(version)
        for entry in self.capabilities.get(capability, ()):
            if entry.layers and layer not in entry.layers:
                continue
            if entry.modes and mode not in entry.modes:
                continue
            if not entry.dialects or dialect in entry.dialects:
                report = CapabilityReport(
                    capability=capability,
                    support=entry.support,
                    enforcement_scope=entry.enforcement_scope,
                    bypass_surfaces=entry.bypass_surfaces,
                    holds_against=entry.holds_against,
                    holds_against_as_root=entry.holds_against_as_root,
                    tested_versions=self.tested_versions,
                    reason=entry.reason,
                )
                break
        else:
            report = CapabilityReport(
                capability=capability,
                support="unsupported",
                tested_versions=self.tested_versions,
                reason=f"{self.layer} has no mechanism for {capability}",
            )
        if report.support == "exact" and self.tested_range and not self.in_tested_range(version):
            shown = version or "unknown"
            report = report.model_copy(
                update={
                    "support": "partial",
                    "reason": f"{report.reason}; downgraded: version {shown} is outside the tested range "
                    f"{self.tested_range.get('min', '')}..{self.tested_range.get('max', '')}",
                }
            )
        return report


@lru_cache(maxsize=None)
def load_declarations(layer: str, folder: Path | None = None) -> Declarations:
    """A layer's declarations: a harness's from its adapter's data, a sandbox backend's from the package's.
    `folder`: the data folder to read them from (an adapter's own), instead of the one the registry names."""
    import yaml

    path = (folder or data_dir(layer)) / "capabilities" / f"{layer}.yaml"
    return Declarations.model_validate(yaml.safe_load(path.read_text()))
