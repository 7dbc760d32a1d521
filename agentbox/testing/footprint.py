"""What a folder holds, entry by entry, so that two looks say what changed between them (a batched session's watch).

A look is cheap enough to take between two scripted steps: one lstat per entry, nothing read. A folder's entry
leaves out its times and size, which change whenever something is made or removed in it: that change is seen as the
child's own entry, and the folder itself changes only when it is replaced or its owner or mode changes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["changed", "look"]

Entry = tuple  # what one path is: its kind, mode, owner, inode and (a file) size and times, (a link) its target


def _entry(path: str, st: os.stat_result) -> Entry:
    kept = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_ino)
    if stat.S_ISDIR(st.st_mode):
        return kept
    if stat.S_ISLNK(st.st_mode):
        return (*kept, os.readlink(path))
    return (*kept, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink)


def look(*roots: Path) -> dict[str, Entry]:
    """Every path below `roots` (the roots too), with what it is now; a path that vanishes mid-look is left out
    (the next look sees it gone)."""
    seen: dict[str, Entry] = {}
    todo = [str(root) for root in roots]
    while todo:
        path = todo.pop()
        try:
            st = os.lstat(path)
            seen[path] = _entry(path, st)
            if stat.S_ISDIR(st.st_mode):
                todo.extend(os.path.join(path, name) for name in os.listdir(path))
        except OSError:
            continue
    return seen


def changed(before: dict[str, Entry], after: dict[str, Entry]) -> list[str]:
    """The paths made, removed or changed between two looks, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
