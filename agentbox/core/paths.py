"""Safe relative paths: everything Agent-Box writes or binds is named relative to a root it owns."""

from __future__ import annotations

from pathlib import PurePosixPath

__all__ = ["check_relative", "is_within"]


def check_relative(path: str) -> str:
    """Return `path` if it is a clean relative POSIX path; raise ValueError naming the problem."""
    if not path:
        raise ValueError("empty path")
    if "\\" in path:
        raise ValueError(f"{path!r} contains a backslash")
    if "\x00" in path:
        raise ValueError(f"{path!r} contains a NUL byte")
    if path.startswith("/") or PurePosixPath(path).is_absolute():
        raise ValueError(f"{path!r} is absolute")
    parts = path.split("/")
    if any(p in ("..",) for p in parts):
        raise ValueError(f"{path!r} climbs out with '..'")
    if any(p in ("", ".") for p in parts):
        raise ValueError(f"{path!r} is not normalized")
    return path


def is_within(child: str, parent: str) -> bool:
    c, p = PurePosixPath(child), PurePosixPath(parent)
    return c == p or p in c.parents
