"""Build identity: the digest of the files that actually run when a harness binary is invoked.

A launcher is often not the program. npm's `bin/codex.js` starts a native binary from a platform
package; a console script in a venv imports an installed Python distribution. Evidence is looked up
by this digest, so a changed native binary or package under the same version number never reuses
the old build's evidence. Each adapter names its build's files (`HarnessAdapter.build_files`, by
default the invoked file with its symlinks resolved); this module digests them. It names no harness.

The digest of a single file is that file's sha256 (so a native binary keeps the identity the old
launcher hash gave it). The digest of a set is the sha256 of one line per entry, `name NUL value LF`
in name order, a file's value being its sha256. Names are relative to the install, never absolute:
the same build installed under another home has the same identity, so evidence merged from CI
matches a user's install.

Hashing 400 MB on every `permission compile` would cost seconds, so each file's sha256 is remembered
in `$AGENTBOX_HOME/cache/build/` by its stat (device, inode, size, mtime, ctime), as git trusts its
index. A file whose mtime or ctime is within `RACY_NS` of the hashing is never remembered: a second
write within the file system's timestamp tick would leave its stat unchanged ("racily clean" in git).
Standard library only: the launch cache keeps a build's `state` and re-checks it without importing this.
"""

from __future__ import annotations

import csv
import os
import re
import time
from typing import Iterable, NamedTuple

from agentbox.hot import agentbox_home, sha256, stat_key, write_json_atomic

__all__ = [
    "BuildFile",
    "BuildFiles",
    "Identity",
    "identify",
    "single_file",
    "tree",
    "python_distribution",
    "RACY_NS",
    "CACHE_FORMAT",
]

CACHE_FORMAT = "1"  # bump when a file's value changes meaning: every remembered digest is then dropped
RACY_NS = 2_000_000_000


class BuildFile(NamedTuple):  # NamedTuples, not dataclasses: every compile imports this, and they are built faster
    name: str  # relative to the install: the digest must not depend on where it was installed
    path: str
    # pip writes the venv's interpreter into the `#!` line of the scripts it generates: where the build
    # was installed, not what runs; such files are hashed without that line
    skip_interpreter_line: bool = False


class BuildFiles(NamedTuple):
    files: tuple[BuildFile, ...]
    facts: tuple[tuple[str, str], ...] = ()  # (name, value) entries that are not files: versions of what it loads
    watched: tuple[str, ...] = ()  # what decided the list (folders, a RECORD): a change there makes a new list


class Identity(NamedTuple):
    sha256: str
    files: int
    size: int  # bytes the digest covers
    state: tuple[tuple[str, tuple[int, ...] | None], ...]  # (path, stat) of every file and watched path

    def as_check(self) -> list:
        """The state as JSON, for the launch cache to re-check (`launch._current`)."""
        return [[p, list(s) if s is not None else None] for p, s in self.state]


def single_file(path: str) -> BuildFiles:
    """The default: the invoked file itself, symlinks resolved."""
    resolved = os.path.realpath(path)
    return BuildFiles(files=(BuildFile(os.path.basename(resolved), resolved),))


def tree(root: str, prefix: str) -> tuple[tuple[BuildFile, ...], tuple[str, ...]]:
    """Every file under `root` (named `prefix/relative path`), and its folders (a new file changes one's mtime).
    A linked folder is walked too (pnpm and `npm link` install so, and what it holds runs all the same), each real
    folder once."""
    files, folders = [], []
    walked: set[str] = set()
    for base, dirs, names in os.walk(root, followlinks=True):
        real = os.path.realpath(base)
        if real in walked:
            dirs[:] = []  # a link back into what is walked already
            continue
        walked.add(real)
        dirs.sort()
        folders.append(base)
        rel = os.path.relpath(base, root)
        for name in sorted(names):
            path = os.path.join(base, name)
            if os.path.isfile(path):
                files.append(BuildFile(f"{prefix}/{name}" if rel == "." else f"{prefix}/{rel}/{name}", path))
    return tuple(files), tuple(folders)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _pyvenv_version(venv: str) -> str | None:
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition("=")
                if key.strip() == "version":
                    return value.strip()
    except OSError:
        pass
    return None


def python_distribution(script: str, distribution: str) -> BuildFiles | None:
    """A console script of a venv: the distribution's files as its RECORD lists them, plus the venv's
    Python version and every other installed distribution's name and version; None when not found.

    Left out: the RECORD itself (it holds the generated scripts' hashes, which name the venv's path)
    and compiled `.pyc` files (written at install time, they embed the sources' mtimes). Dependencies
    count by version, not by bytes: hashing a venv's ~10,000 files on every call would cost what the
    stat cache saves, and pip installs one build of a version.
    """
    venv = os.path.dirname(os.path.dirname(os.path.realpath(script)))
    lib = os.path.join(venv, "lib")
    try:
        pythons = sorted(d for d in os.listdir(lib) if d.startswith("python"))
    except OSError:
        return None
    for python in pythons:
        site = os.path.join(lib, python, "site-packages")
        try:
            infos = sorted(d for d in os.listdir(site) if d.endswith(".dist-info"))
        except OSError:
            continue
        wanted = _normalize(distribution)
        mine = [d for d in infos if _normalize(d.partition("-")[0]) == wanted]
        if not mine:
            continue
        record = os.path.join(site, mine[0], "RECORD")
        try:
            with open(record, newline="", encoding="utf-8") as f:
                rows = [row[0] for row in csv.reader(f) if row]
        except OSError:
            return None
        files = []
        for name in rows:
            if name.endswith(".pyc") or name.startswith(f"{mine[0]}/RECORD"):
                continue
            path = os.path.normpath(os.path.join(site, name))
            files.append(BuildFile(name, path, skip_interpreter_line=name.startswith("..")))
        others = sorted(d[: -len(".dist-info")] for d in infos if d != mine[0])
        installed = sha256("\n".join(others).encode()).hexdigest()
        facts = (("python", _pyvenv_version(venv) or python), ("installed distributions", installed))
        return BuildFiles(files=tuple(files), facts=facts, watched=(record, site))
    return None


# -- digests -------------------------------------------------------------------------------------------
def _cache_path(build: BuildFiles) -> str:
    key = sha256(f"{CACHE_FORMAT}\0{build.files[0].path if build.files else ''}".encode()).hexdigest()
    return os.path.join(agentbox_home(), "cache", "build", f"{key}.json")


def _hash(path: str, skip_interpreter_line: bool) -> str:
    import hashlib  # OpenSSL's sha256 is several times faster than the built-in on 400 MB

    h = hashlib.sha256()
    with open(path, "rb") as f:
        first = f.read(1 << 20)
        if skip_interpreter_line and first.startswith(b"#!"):
            newline = first.find(b"\n")
            first = first[newline + 1 :] if newline >= 0 else b""
        h.update(first)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _load(path: str) -> dict:
    import json

    try:
        with open(path) as f:
            saved = json.load(f)
        return saved["files"] if saved.get("format") == CACHE_FORMAT else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def identify(build: BuildFiles) -> Identity:
    """The build's digest, hashing only the files whose stat changed since they were last hashed."""
    cache_path = _cache_path(build)
    known = _load(cache_path)
    remembered, values, state, size, changed = {}, [], [], 0, False
    for f in build.files:
        stat = stat_key(f.path)
        state.append((f.path, tuple(stat) if stat is not None else None))
        if stat is None:
            values.append((f.name, "missing"))
            continue
        key = [*stat, int(f.skip_interpreter_line)]
        seen = known.get(f.path)
        if seen is not None and seen[:-1] == key:
            digest = seen[-1]
        else:
            digest, changed = _hash(f.path, f.skip_interpreter_line), True
            if stat_key(f.path) != stat:  # written while it was read: this digest is of no version
                digest = "changing"
        size += stat[2]
        values.append((f.name, digest))
        # racily clean: a second write in the same timestamp tick would keep this stat
        if digest != "changing" and time.time_ns() - max(stat[3], stat[4]) >= RACY_NS:
            remembered[f.path] = [*key, digest]
    state += [(p, tuple(s) if (s := stat_key(p)) is not None else None) for p in build.watched]
    if changed or len(remembered) != len(known):
        write_json_atomic(cache_path, {"format": CACHE_FORMAT, "files": remembered})
    return Identity(_combine(values, build.facts), len(build.files), size, tuple(state))


def _combine(values: list[tuple[str, str]], facts: Iterable[tuple[str, str]]) -> str:
    facts = tuple(facts)
    if len(values) == 1 and not facts:
        return values[0][1]
    h = sha256()
    for name, value in sorted([*values, *(("fact:" + n, v) for n, v in facts)]):
        h.update(f"{name}\0{value}\n".encode())
    return h.hexdigest()
