"""Harness adapters, loaded lazily by name so a command pays only for the harness it uses."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentbox.compile.adapters.base import HarnessAdapter

__all__ = ["get_adapter", "ADAPTER_MODULES"]

ADAPTER_MODULES = {
    "claude-code": "claude_code",
    "codex": "codex",
    "opencode": "opencode",
    "hermes": "hermes",
}


def get_adapter(name: str) -> "HarnessAdapter":
    try:
        module = import_module(f"{__name__}.{ADAPTER_MODULES[name]}")
    except KeyError:
        raise ValueError(f"unknown harness {name!r}; known: {', '.join(ADAPTER_MODULES)}") from None
    return module.ADAPTER
