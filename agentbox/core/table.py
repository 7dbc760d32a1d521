"""Plain-text tables for people: a header row, then columns padded to their widest cell.

Every table a command prints starts with its header, so a reader (or `awk`) knows each column without
the README; `--json` is the spelling for scripts that want the data itself.
"""

from __future__ import annotations

from typing import Iterable, Sequence

__all__ = ["table"]


def table(head: Sequence[str], rows: Iterable[Sequence[object]], indent: str = "") -> list[str]:
    """The lines of a table; the last column is left unpadded, so no line ends in spaces."""
    cells = [tuple(head), *(tuple("-" if c is None else str(c) for c in row) for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head) - 1)]
    return [(indent + "  ".join([*(c.ljust(w) for c, w in zip(r, widths)), r[-1]])).rstrip() for r in cells]
