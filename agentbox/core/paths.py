"""Safe relative paths: everything Agent-Box writes or binds is named relative to a root it owns."""

from __future__ import annotations

__all__ = ["check_relative", "is_within", "shebang"]


def check_relative(path: str) -> str:
    """Return `path` if it is a clean relative POSIX path; raise ValueError naming the problem."""
    if not path:
        raise ValueError("empty path")
    if "\\" in path:
        raise ValueError(f"{path!r} contains a backslash")
    if "\x00" in path:
        raise ValueError(f"{path!r} contains a NUL byte")
    if path.startswith("/"):
        raise ValueError(f"{path!r} is absolute")
    parts = path.split("/")
    if any(p in ("..",) for p in parts):
        raise ValueError(f"{path!r} climbs out with '..'")
    if any(p in ("", ".") for p in parts):
        raise ValueError(f"{path!r} is not normalized")
    return path


def is_within(child: str, parent: str) -> bool:
    """`child` is `parent` or lies below it, name by name as pathlib's PurePosixPath compares them (no `..` or
    link resolved). Strings, not pathlib: pathlib loads urllib and ipaddress (~4 ms) on the measured hot path of
    `sandbox run` and `launch` (benchmarks/sandbox_run.py)."""
    c, p = _parts(child), _parts(parent)
    return c[: len(p)] == p


def _parts(path: str) -> tuple[str, ...]:
    # POSIX keeps exactly two leading slashes as a root of their own; three or more are one
    root = "//" if path.startswith("//") and not path.startswith("///") else "/" if path.startswith("/") else ""
    return (root, *(p for p in path.split("/") if p not in ("", ".")))


def shebang(path: str) -> list[str] | None:
    """The words of a script's `#!` line (`["/usr/bin/env", "node"]`), None for a file that is no script."""
    import os

    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    return [os.fsdecode(w) for w in head[2:].split(b"\n", 1)[0].split()]
