"""The endpoint's log: stderr, which an editor shows as the agent's log. stdout carries only the protocol."""

from __future__ import annotations

import sys

from agentbox.core.console import printable

__all__ = ["note"]


def note(text: str) -> None:
    # what the agent or the run named in it (a method, a command line, bytes it sent) shown as seen, on one line
    print(f"agent-box acp: {printable(text, keep='')}", file=sys.stderr, flush=True)
