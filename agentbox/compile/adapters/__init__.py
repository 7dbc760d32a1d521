"""Harness adapters: each one registered by an entry point (`agentbox.core.registry`) and loaded on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentbox.core import registry

if TYPE_CHECKING:
    from agentbox.compile.adapters.base import HarnessAdapter

__all__ = ["get_adapter"]


def get_adapter(name: str) -> HarnessAdapter:
    return registry.adapter(name)
