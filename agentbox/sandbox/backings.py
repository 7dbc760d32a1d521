"""Which profile backings Agent-Box wrote itself: a digest per backing, kept under AGENTBOX_HOME.

A backing (`<layer>/.agentbox/profiles/<profile>/root/<surface>`, seed 002) is what the harness sees in place of
the project's own config. It lives in the project, so a clone can bring one along (a `.claude/settings.json` with
hooks and allow rules, committed next to the code): such a file must never stand in for the profile's blank one.
Agent-Box records the digest of every backing it makes; one it finds without a record, or whose content no longer
matches it, is refused by name. Runs never write a backing (it is bound read-only, the .agentbox folder hidden).
"""

from __future__ import annotations

import hashlib
import json
import os

__all__ = ["digest", "record", "status", "refuse_unrecorded"]


def digest(path: str) -> str:
    """A file's content, or a folder's tree (names, kinds and contents; links by their target), as one sha256."""
    h = hashlib.sha256()
    if not os.path.isdir(path) or os.path.islink(path):
        with open(path, "rb") as f:
            h.update(b"file\0" + f.read())
        return h.hexdigest()
    for folder, dirs, files in os.walk(path):
        dirs.sort()  # walked in name order, so the same tree always hashes the same
        rel = os.path.relpath(folder, path)
        h.update(b"dir\0" + rel.encode() + b"\0")
        for name in sorted(files):
            full = os.path.join(folder, name)
            if os.path.islink(full):
                h.update(b"link\0" + name.encode() + b"\0" + os.readlink(full).encode() + b"\0")
                continue
            with open(full, "rb") as f:
                h.update(b"file\0" + name.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def _first_link(path: str) -> str | None:
    """A link in the backing, itself included (Agent-Box never makes one): a link to a folder would otherwise
    escape the digest, which reads what lies in the backing, not where its links point."""
    if os.path.islink(path):
        return path
    for folder, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            if os.path.islink(os.path.join(folder, name)):
                return os.path.join(folder, name)
    return None


def _blank(path: str, default_text: str) -> bool:
    if os.path.islink(path):
        return False
    if os.path.isdir(path):
        return not os.listdir(path)
    with open(path, "rb") as f:
        return f.read() == default_text.encode()


def _record_path(path: str, home: str) -> str:
    key = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:32]
    return os.path.join(home, "backings", f"{key}.json")


def record(path: str, home: str) -> None:
    """Note that Agent-Box made `path` as it is now."""
    dest = _record_path(path, home)
    os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
    tmp = f"{dest}.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump({"path": os.path.abspath(path), "sha256": digest(path)}, f)
    os.replace(tmp, dest)


def status(path: str, home: str) -> str:
    """`missing` (made blank at the next run), `written by Agent-Box`, or why it is refused."""
    if not os.path.lexists(path):
        return "missing"
    link = _first_link(path)
    if link:
        return f"holding a symbolic link ({link}), which could point the harness anywhere"
    try:
        with open(_record_path(path, home)) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        return "not written by Agent-Box (it came with the project, or was made by another AGENTBOX_HOME)"
    if kept.get("path") != os.path.abspath(path) or kept.get("sha256") != digest(path):
        return "changed since Agent-Box wrote it"
    return "written by Agent-Box"


def refuse_unrecorded(path: str, home: str, default_text: str = "") -> None:
    """Fail closed on a backing Agent-Box did not write as it is. One without a record that is exactly blank (an
    empty folder, or a file holding the surface's `default_text`: what Agent-Box makes, an earlier version
    without digests, or another start of this project a moment ago) is recorded instead: it can show the
    harness nothing the profile would not."""
    from agentbox.errors import SandboxError

    found = status(path, home)
    if found.startswith("not written") and _blank(path, default_text):
        record(path, home)
        return
    if found not in ("missing", "written by Agent-Box"):
        raise SandboxError(
            f"profile backing {path} is {found} (sandbox layer): the harness would see it in place of the "
            f"profile's blank config; remove it (rm -r '{path}') and the next run makes a blank one"
        )
