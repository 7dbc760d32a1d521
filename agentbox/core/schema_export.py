"""`python -m agentbox.<module> --schema`: print the JSON Schema a pinned `agentbox/schemas/*.json` file holds."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

__all__ = ["main"]


def main(module: str, schema: Callable[[], dict[str, Any]], argv: list[str]) -> int:
    if argv != ["--schema"]:
        print(f"usage: python -m {module} --schema", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(schema(), indent=2, sort_keys=True) + "\n")
    return 0
