"""What the sandbox shows at a host path: the question behind every client-side file request.

A client performs `fs/read_text_file` and `fs/write_text_file` on the host, outside the sandbox, so the
endpoint lets one through only where the host path is what the agent sees at that path inside the
sandbox: a bind of the path onto itself (the workspace, the read-only host root). A path the sandbox
covers with something else (a private /tmp or home, the profile's blank copy of a project's config file,
its own /proc, /dev and /run) shows the agent other bytes, so a client read or write there would reach
what the plan hides.

Read from the sandbox's bwrap argv: mounts stack, so the view at a path is the last mount (in argv order)
at the path or one of its ancestors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

__all__ = ["Mount", "SandboxView", "mounts_of", "resolve", "symlinks_on"]

# bwrap options and how many arguments each takes (the rest take none)
_ARITY = {
    "--ro-bind": 2,
    "--bind": 2,
    "--ro-bind-try": 2,
    "--bind-try": 2,
    "--dev-bind": 2,
    "--dev-bind-try": 2,
    "--bind-fd": 2,
    "--ro-bind-fd": 2,
    "--symlink": 2,
    "--setenv": 2,
    "--chmod": 2,
    "--tmpfs": 1,
    "--proc": 1,
    "--dev": 1,
    "--dir": 1,
    "--mqueue": 1,
    "--remount-ro": 1,
    "--chdir": 1,
    "--cap-drop": 1,
    "--cap-add": 1,
    "--seccomp": 1,
    "--uid": 1,
    "--gid": 1,
    "--hostname": 1,
    "--unsetenv": 1,
    "--perms": 1,
    "--size": 1,
}
_KIND = {
    "--ro-bind": "ro-bind",
    "--ro-bind-try": "ro-bind",
    "--bind": "bind",
    "--bind-try": "bind",
    "--dev-bind": "bind",
    "--dev-bind-try": "bind",
    "--bind-fd": "bind",
    "--ro-bind-fd": "ro-bind",
    "--tmpfs": "private",
    "--proc": "private",
    "--dev": "private",
    "--mqueue": "private",
}


@dataclass(frozen=True)
class Mount:
    kind: str  # "bind" (writable), "ro-bind", "private" (tmpfs, proc, dev, mqueue)
    source: str | None
    target: str

    @property
    def host_as_is(self) -> bool:
        """The host's own file at the target, not a substitute (`{run_dir}` is the run's private folder)."""
        return self.kind in ("bind", "ro-bind") and self.source == self.target


def mounts_of(argv: Iterable[str]) -> tuple[Mount, ...]:
    """The mounts a bwrap argv (the binary, then options up to its command) makes, in order."""
    args, out, i = list(argv), [], 1
    while i < len(args) and args[i] != "--":
        a, n = args[i], _ARITY.get(args[i], 0)
        kind = _KIND.get(a)
        if kind == "private":
            out.append(Mount(kind, None, args[i + 1]))
        elif kind is not None and a.endswith(
            "-fd"
        ):  # a descriptor the host guard opened at the target itself: the host's as it is
            out.append(Mount(kind, args[i + 2], args[i + 2]))
        elif kind is not None:
            out.append(Mount(kind, args[i + 1], args[i + 2]))
        i += 1 + n
    return tuple(out)


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@dataclass(frozen=True)
class SandboxView:
    mounts: tuple[Mount, ...]

    def at(self, path: str) -> Mount | None:
        """The mount that decides what the sandbox shows at `path` (an absolute, resolved host path)."""
        found = None
        for m in self.mounts:
            if _within(path, m.target):
                found = m  # a later mount at the path or above covers every earlier one
        return found

    def shows_host(self, path: str) -> bool:
        m = self.at(path)
        return m is not None and m.host_as_is

    def writable_host(self, path: str) -> bool:
        m = self.at(path)
        return m is not None and m.host_as_is and m.kind == "bind"


def resolve(path: object) -> str | None:
    """The host path a client would reach: absolute, symlinks followed (a missing last part keeps its name);
    None for a path no client may be sent (relative, a NUL byte)."""
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        return None
    return os.path.realpath(path)


def symlinks_on(path: str) -> list[tuple[str, str]]:
    """Every symlink met while resolving `path` (absolute) component by component, as (the link, reached through
    the real folders before it; where it leads, resolved): what a judge of the resolved path alone would not see
    (a link that leads out of an area and another that leads back in)."""
    hops: list[tuple[str, str]] = []
    real = "/"
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            real = os.path.dirname(real)
            continue
        here = os.path.join(real, part)
        if os.path.islink(here):
            real = os.path.realpath(here)
            hops.append((here, real))
        else:
            real = here
    return hops
