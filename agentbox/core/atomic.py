"""Write a set of files all at once or not at all, each replaced atomically.

A command that produces several outputs (a report's HTML, JSON and Markdown; a merged store) must
not leave some of them new and some old, nor a half-written one, when it fails part way. Every
output is first written whole to a temporary file beside its target (same file system, so the
rename is atomic); only when all are written are they renamed over their targets.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Mapping

from agentbox.errors import InputError

__all__ = ["write_files"]


def write_files(files: Mapping[str | os.PathLike[str], str], *, make_dirs: bool = False) -> list[Path]:
    """Write every `path -> text`; raise InputError naming the path before anything is replaced."""
    targets = [(Path(p), text) for p, text in files.items()]
    for path, _ in targets:
        if path.is_dir():
            raise InputError("is a folder, not a file", file=str(path))
        if not make_dirs and not path.parent.is_dir():
            raise InputError("no such folder to write into", file=str(path.parent))
    staged: list[tuple[str, Path]] = []
    current = None
    try:
        for path, text in targets:
            current = path
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; outputs are meant to be shared like any file
    except OSError as exc:
        for tmp, _ in staged:
            _unlink(tmp)
        raise InputError(f"cannot write: {exc.strerror or exc}", file=str(current)) from None
    for tmp, path in staged:
        os.replace(tmp, path)
    return [path for _, path in staged]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
