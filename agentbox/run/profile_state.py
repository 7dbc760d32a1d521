"""What a launch keeps of a harness's own answers for the profile's next launch, and nothing else.

A harness saves answers in a state file of its private config home: first-run dialogs finished, tips seen, start
counters, but next to them per-project grants (tools allowed without asking, MCP servers, trust). The adapter
declares the file and the keys that widen nothing (`StateFile` in the plan, plain data in the launch entry's
`state_files`); this module applies it and names no harness:

- `restore`, before the run: the profile's kept state merged under the run's file as the launcher wrote it (the
  compiled keys and the key approvals win), and a copy of that start beside the config, out of the sandbox's view.
- `keep`, after the run: the keys on the allowlist replace the profile's kept state; every other key is dropped
  and named once, grouped by reason, unless the run left it as it started (the plan writes it at every start).
  A file that is not a regular file (a symlink could point at any host file), is too large, or is not a JSON
  object keeps nothing, and says so; the kept state then stays as it was.

The kept state lives in `$AGENTBOX_HOME/state/<profile>/<harness>/`, by profile name: the allowlist holds no
grant, so a profile edited (or another file of the same name) starts from answers that widen nothing either.
Plain data and the standard library only: the launch's hot path imports no pydantic.
"""

from __future__ import annotations

import json
import os
import stat
from fnmatch import fnmatchcase

from agentbox.core.console import printable

__all__ = ["state_dir", "restore", "keep", "split", "merge_under", "NOT_LISTED", "LIMIT"]

NOT_LISTED = "not on the list of answers that widen nothing, so it could widen the plan"
LIMIT = 16 * 1024 * 1024  # a state file larger than this is not read back
_START = "state-start"  # beside the run's config home (never bound into the sandbox): each file as the run began
_MISSING = object()


def state_dir(home: str | os.PathLike, profile: str, harness: str) -> str:
    """Where a profile keeps a harness's answers (a profile name is lower-case letters, digits, '.', '_', '-')."""
    return os.path.join(os.fspath(home), "state", profile, harness)


def _patterns(keys) -> list[list[str]]:
    return [key.split(".") for key in keys]


def _matches(path: tuple[str, ...], pattern: list[str]) -> bool:
    """A pattern names a key and everything under it; each of its segments is a glob."""
    return len(path) >= len(pattern) and all(fnmatchcase(seg, pat) for seg, pat in zip(path, pattern))


def _units(data: dict, patterns: list[list[str]], prefix: tuple[str, ...] = ()):
    """(path, value) of each key a decision is made for: a map is looked into only where a pattern goes deeper."""
    for key, value in data.items():
        path = (*prefix, str(key))
        deeper = [p for p in patterns if len(p) > len(path) and _matches(path, p[: len(path)])]
        if isinstance(value, dict) and deeper:
            yield from _units(value, patterns, path)
        else:
            yield path, value


def _get(tree, path: tuple[str, ...]):
    for seg in path:
        if not isinstance(tree, dict) or seg not in tree:
            return _MISSING
        tree = tree[seg]
    return tree


def _set(tree: dict, path: tuple[str, ...], value) -> None:
    for seg in path[:-1]:
        tree = tree.setdefault(seg, {})
    tree[path[-1]] = value


def _shown(path: tuple[str, ...]) -> str:
    # keys the run wrote: printed after it, escaped to one line (a newline would fake a line of Agent-Box's own)
    return printable(
        "".join(
            seg if i == 0 else f".{seg}" if seg.replace("_", "").isalnum() else f'["{seg}"]'
            for i, seg in enumerate(path)
        ),
        keep="",
    )


def split(data: dict, spec: dict, start: dict | None = None) -> tuple[dict, list[tuple[str, str]]]:
    """The keys of `data` the allowlist keeps (as a tree), and (key, reason) for each one dropped.

    A key that also matches a `widens` pattern is never kept. A dropped key whose value is what the run started
    with (`start`) is not named: the launcher wrote it and writes it again at the next start."""
    keep = _patterns(spec["keep"])
    widens = [(p, reason) for p, reason in zip(_patterns(spec.get("widens", {})), spec.get("widens", {}).values())]
    kept: dict = {}
    dropped: list[tuple[str, str]] = []
    for path, value in _units(data, keep + [p for p, _ in widens]):
        why = next((reason for p, reason in widens if _matches(path, p)), None)
        if why is None and any(_matches(path, p) for p in keep):
            _set(kept, path, value)
        elif start is None or _get(start, path) != value:
            dropped.append((_shown(path), why or NOT_LISTED))
    return kept, dropped


def merge_under(kept: dict, top: dict) -> dict:
    """`kept` with `top` laid over it, map by map: every key of `top` wins."""
    out = dict(kept)
    for key, value in top.items():
        out[key] = merge_under(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _read(path: str) -> dict:
    """A JSON object from a regular file, never through a symlink nor from a pipe; ValueError says what is wrong."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ValueError("is missing") from None
    except OSError as exc:
        raise ValueError(f"cannot be opened ({exc.strerror}; a symlink is refused)") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("is not a regular file")
        if info.st_size > LIMIT:
            raise ValueError(f"is larger than {LIMIT} bytes")
        raw = f.read(LIMIT + 1)
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("is not a JSON object")
    return data


def _write(path: str, data: dict, mode: int = 0o600) -> None:
    """Replace `path` whole (a temporary file beside it, then a rename)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def restore(entry: dict, run_dir: str, state: str) -> list[str]:
    """Start each state file of the run from the profile's kept answers, under what the launcher wrote; problems."""
    problems = []
    for spec in entry.get("state_files", ()):
        run_file = os.path.join(run_dir, "config", spec["path"])
        try:
            written = _read(run_file)
        except ValueError:
            written = {}  # the plan compiled none: the harness starts from the kept answers alone
        kept: dict = {}
        kept_file = os.path.join(state, spec["path"])
        if os.path.lexists(kept_file):
            try:
                kept = split(_read(kept_file), spec)[0]  # a key that has left the allowlist is not brought back
            except ValueError as exc:
                problems.append(f"{kept_file} {exc}: the run starts from the compiled {spec['path']}")
        start = merge_under(kept, written)
        _write(run_file, start, 0o644)
        _write(os.path.join(run_dir, _START, spec["path"]), start)
    return problems


def keep(entry: dict, run_dir: str, state: str) -> list[str]:
    """Copy the allowlisted keys of each state file the run wrote into the profile's state; one line per reason
    for the keys dropped, and one for a file that could not be read (then nothing of it is kept)."""
    lines = []
    for spec in entry.get("state_files", ()):
        name = spec["path"]
        try:
            data = _read(os.path.join(run_dir, "config", name))
        except ValueError as exc:
            lines.append(f"{name} written in the run {exc}: nothing of it kept (the profile's kept state is unchanged)")
            continue
        try:
            start = _read(os.path.join(run_dir, _START, name))
        except ValueError:
            start = None
        kept, dropped = split(data, spec, start)
        try:
            _write(os.path.join(state, name), kept)
        except OSError as exc:
            lines.append(f"{name}: cannot keep its answers in {state} ({exc.strerror or exc})")
        reasons: dict[str, list[str]] = {}
        for key, why in dropped:
            reasons.setdefault(why, []).append(key)
        lines += [f"{name}: not kept: {', '.join(keys)} ({why})" for why, keys in reasons.items()]
    return lines
