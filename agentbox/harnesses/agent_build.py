"""The build of an ACP adapter that ran: the program a harness's ACP agent really is, when an adapter package drives it.

An adapter is not the harness binary (codex-acp embeds a codex core of its own; claude-agent-acp is a separate
program that starts the pinned Claude Code), so acp-mode evidence of such a harness is about the harness build
*and* the adapter build: upgrading or swapping the adapter makes the old evidence speak of another program. The
model is what an evidence record keeps (`RunInfo.adapter`); `agentbox.harnesses.acp.adapter_build` identifies the
installed one. Pydantic only: the evidence model imports it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["AgentBuild", "build_key", "UNRECORDED"]

# What a reader says of an acp record of an adapter-driven harness that names no adapter: it was written before
# records named the adapter, so which program it observed is unknown, and it speaks for no start
UNRECORDED = "recorded before the adapter was recorded"


def build_key(name: str, version: str | None, sha256: str) -> str:
    """One string that is equal exactly when two builds are: what the evidence index keys a row by (it reads the
    records' JSON, not the model)."""
    return f"{name} {version or '?'} {sha256}"


class AgentBuild(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str  # the adapter package (packages.yaml), e.g. codex-acp
    version: str | None  # its version: the install folder's (verified at install), or its package manifest's
    # the digest of what ran (`build_identity`): the native binary its launcher starts, or the launcher's package
    sha256: str

    @property
    def label(self) -> str:
        """`codex-acp 0.16.0`, as a row names it."""
        return f"{self.name} {self.version or '(unknown version)'}"

    @property
    def key(self) -> str:
        return build_key(self.name, self.version, self.sha256)

    def why_not(self, recorded: AgentBuild | None) -> str | None:
        """Why a record of the adapter build `recorded` does not speak for a start of this one (None: it does)."""
        if recorded is None:
            return UNRECORDED
        return None if recorded == self else f"by adapter {recorded}"

    def __str__(self) -> str:
        return f"{self.label} (sha256 {self.sha256[:12]})"
