"""The suite revision: which code and data an observation was made with."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

__all__ = ["suite_revision"]

# Parts of the package no observation depends on: how results are rendered and exported.
_NOT_OBSERVED = {"report", "schemas", "__pycache__"}
# Which harness versions to test is not how any one of them is observed: a matrix bump keeps evidence current.
_NOT_OBSERVED_DATA = ("data", "matrices")


@lru_cache(maxsize=None)
def suite_revision() -> str:
    """A digest of the code and data an observation depends on.

    Content, not a git commit: evidence stays current across commits that touch only docs or the
    report, an installed package (no git) still has a revision, and the canary can tell exactly when
    a suite change makes recorded evidence stale.
    """
    import hashlib

    root = Path(__file__).resolve().parents[1]  # the package: its code and data
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        skipped = rel.parts[0] in _NOT_OBSERVED or rel.parts[:2] == _NOT_OBSERVED_DATA
        if skipped or path.suffix not in (".py", ".yaml", ".json") or not path.is_file():
            continue
        h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]
