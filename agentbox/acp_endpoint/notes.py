"""The endpoint's log: stderr, which an editor shows as the agent's log. stdout carries only the protocol."""

from __future__ import annotations

import sys

__all__ = ["note"]


def note(text: str) -> None:
    print(f"agent-box acp: {text}", file=sys.stderr, flush=True)
