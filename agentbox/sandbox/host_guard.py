"""What the host runs later stays out of a writable workspace's reach (agentbox/data/host_executed.yaml).

Under `workspace: read_write` a run may write the project, but not what programs on the host run or load from it
afterwards, outside any sandbox: git's hooks and config, an editor's tasks, direnv's .envrc, the harnesses' own
project configs, a shell's rc files where the workspace is the home. At each run's start (the hot path: the
cached entry carries the names, this module needs neither YAML nor pydantic) the workspace is scanned, and the
bwrap argv gains:
- `--ro-bind P P` over every such path that exists (a mount point can be neither written, replaced, removed nor
  renamed from inside);
- `--bind A A` over every folder between the workspace and a nested one (a renamed parent would carry the
  read-only mount away and leave the name free);
- an empty, read-only placeholder at every such name absent from the workspace's root (bwrap creates its mount
  point, an empty file or folder, on the host; the last run of the workspace removes it at its end).
A link at such a path is refused: the link itself could be replaced.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

from agentbox.errors import SandboxError
from agentbox.core.paths import is_within

# The record of a user none of whose runs holds a placeholder (a workspace without git, most runs of `sandbox run`):
# written and read as this text, without importing json for it (benchmarks/sandbox_run.py)
_EMPTY = "{}"
# `typing` itself is not imported: it costs ~3 ms of the measured hot paths (benchmarks/sandbox_run.py)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["Guard", "scan", "guard_args", "guard_folder"]


def _opted_out(rel: str, writable: set[str]) -> bool:
    """A bare name in `writable` frees that name everywhere; a path with a slash frees that one path."""
    return rel in writable or os.path.basename(rel) in writable


def _no_link_on_the_way(ws: str, path: str, writable: set[str] | None = None) -> None:
    """Refuse `path` when it, or a folder between the workspace and it, is a link: a mount lands on what a link
    points at, and the link itself stays replaceable by the run. A link the profile frees by name (`writable`,
    as the refusal says) is let be."""
    rel = os.path.relpath(path, ws)
    here = ws
    for part in rel.split(os.sep):
        here = os.path.join(here, part)
        if os.path.islink(here) and not (writable and _opted_out(os.path.relpath(here, ws), writable)):
            raise _link_refused(ws, here)


def _link_refused(ws: str, here: str) -> SandboxError:
    """The refusal of the link `here`, in the workspace on the way to a host-executed path."""
    return SandboxError(
        f"host-executed path {here} is a symbolic link (sandbox layer): a process of the run could replace "
        "the link, and a host program would then run what it points at; replace the link with what it "
        f"points at, or make it writable by name (host_executed: {{writable: [{os.path.relpath(here, ws)}]}})"
    )


def _resolve(ws: str, path: str, held: Callable[[str], bool], stepped: set[str] | None = None) -> str:
    """Where the absolute `path` leads, as the kernel resolves it: name by name, each link followed where it is met
    (at most 40, as the kernel), `..` taken from where the names before it led, not from how they are spelled. A
    link met in the workspace where the run could replace it (outside what `held` says is held) is refused,
    wherever it leads. `stepped` gains the folders of the workspace that a `..` steps out of: what the path leads
    to depends on them too (replaced by a link, one would lead it elsewhere)."""
    out, todo, hops = "/", path.split("/")[::-1], 0
    while todo:
        part = todo.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if stepped is not None and out != ws and is_within(out, ws):
                stepped.add(out)
            out = os.path.dirname(out)  # `out` is a real path: its parent is the folder `..` names
            continue
        here = os.path.join(out, part)
        try:
            target = os.readlink(here)
        except OSError:  # not a link (or not there)
            out = here
            continue
        hops += 1
        if hops > 40:
            raise SandboxError(f"host-executed path {path} leads through too many symbolic links (sandbox layer)")
        if is_within(here, ws) and here != ws and not held(here):
            raise _link_refused(ws, here)
        if target.startswith("/"):
            out = "/"
        todo += target.split("/")[::-1]
    return out


# What a git directory (a folder holding HEAD) keeps as data: git never runs what is in them, and objects are hard
# links after a local clone; the walk of what held folders lead to does not go into them
_GIT_DATA = frozenset({"objects", "refs", "logs", "lfs", "annex"})


def _followed(ws: str, existing: dict[str, str], writable: set[str]) -> None:
    """Add to `existing` what a host program reading a held path follows out of it: the target, in the workspace,
    of every symbolic link in a held folder (walked whole but for git's data, a target folder walked in turn), and
    every folder of the workspace its target steps out of with `..`, so that the run can neither rewrite it through
    its own name nor lead the link elsewhere. A file held under one name and reachable under another the walk did
    not find (a hard link elsewhere in the workspace) refuses the run, as does a link into the workspace that
    leads nowhere (the run could make what it names), or through a folder that does not exist, or to the
    workspace itself (not to be held)."""
    folders = [p for p, kind in existing.items() if kind == "directory"]
    cut = len(ws) + 1  # every held path lies in the workspace: its name there is what follows the cut

    def held(path: str) -> bool:
        return path in existing or any(path.startswith(f"{f}/") for f in folders)

    def freed(path: str) -> bool:
        return bool(writable) and _opted_out(path[cut:], writable)

    def hold(folder: str) -> None:
        existing[folder] = "directory"
        folders.append(folder)
        todo.append((folder, True))

    names: dict[tuple[int, int], set[str]] = {}  # files with more than one name: the names the walk found
    todo, walked = [(p, existing[p] == "directory") for p in sorted(existing, reverse=True)], set()
    while todo:
        path, folder = todo.pop()
        if path in walked:
            continue
        walked.add(path)
        if not folder:
            _count_names(path, names)
            continue
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        git_data = any(e.name == "HEAD" for e in entries)
        for e in entries:
            if freed(e.path) or git_data and e.name in _GIT_DATA:
                continue
            if e.is_symlink():
                stepped: set[str] = set()
                target = _resolve(ws, e.path, lambda p: held(p) or freed(p), stepped)
                for out_of in sorted(stepped):
                    if held(out_of) or freed(out_of) or _pinned(out_of, existing):
                        continue
                    if not os.path.isdir(out_of):
                        what = "is no folder" if os.path.lexists(out_of) else "does not exist"
                        raise SandboxError(
                            f"host-executed path {e.path} is a symbolic link that steps back (..) out of {out_of}, "
                            f"which {what} (sandbox layer): the run could make it a link, and lead the link "
                            "elsewhere; write the link's target without `..`, or make it writable by name "
                            f"(host_executed: {{writable: [{e.path[cut:]}]}})"
                        )
                    hold(out_of)
                if not is_within(target, ws) or held(target) or freed(target):
                    continue
                if target == ws or not os.path.exists(target):
                    what = "the workspace itself" if target == ws else f"{target}, which does not exist"
                    raise SandboxError(
                        f"host-executed path {e.path} is a symbolic link to {what} (sandbox layer): a process of the "
                        "run could write what it leads to, and a host program would then run it; replace the link "
                        "with what it points at, or make it writable by name "
                        f"(host_executed: {{writable: [{e.path[cut:]}]}})"
                    )
                if os.path.isdir(target):
                    hold(target)
                else:
                    existing[target] = "file"
                    todo.append((target, False))
            elif e.is_dir(follow_symlinks=False):
                todo.append((e.path, True))
            elif e.is_file(follow_symlinks=False):
                _count_names(e.path, names)
    _no_other_name(ws, names, walked)


def _pinned(folder: str, held: Mapping[str, str]) -> bool:
    """Whether the run cannot replace `folder` of the workspace: it is held, or lies above a held path (each folder
    between the workspace and a held path is bound over itself, so it can be neither removed nor renamed)."""
    return folder in held or any(p != folder and is_within(p, folder) for p in held)


def _no_other_name(ws: str, names: dict[tuple[int, int], set[str]], walked: set[str]) -> None:
    """Refuse a held file (`names`: the held names of each file with more than one) that has another name in the
    workspace outside the held folders (`walked`), where the run could rewrite it. Names outside the workspace
    (a package cache a tool links from) are not the run's to write. The workspace is searched only when some
    held file has a name the walk of the held folders did not find, and by the folders' entries alone (their
    inode numbers)."""
    missing = {}
    for file, found in names.items():
        try:
            if len(found) < os.lstat(next(iter(found))).st_nlink:
                missing[file] = found
        except OSError:
            continue
    inodes = {ino for _, ino in missing}
    todo = [ws] if missing else []
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if e.path not in walked:
                    todo.append(e.path)
            elif e.inode() in inodes and e.is_file(follow_symlinks=False):
                try:
                    info = os.lstat(e.path)
                except OSError:
                    continue
                found = missing.get((info.st_dev, info.st_ino), {e.path})
                if e.path in found:
                    continue
                path = min(found)
                raise SandboxError(
                    f"host-executed path {path} has another name, {e.path}, which the run can write (sandbox "
                    "layer): a process of the run could rewrite the file through that name, and a host program "
                    "would then run what it wrote; replace the hard link with a copy, or make it writable by name "
                    f"(host_executed: {{writable: [{os.path.relpath(path, ws)}]}})"
                )


def _count_names(path: str, names: dict[tuple[int, int], set[str]]) -> None:
    """Note `path` among the names of its file when the file has more than one."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        names.setdefault((info.st_dev, info.st_ino), set()).add(path)


def _regular(path: str) -> bool:
    """Whether `path` is a regular file (not a FIFO a run made to stall the next start's read)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):  # ValueError: a NUL byte in a path read from a file the run wrote
        return False


def _git_pointers(
    ws: str,
    gitdir: str,
    worktree: str,
    resolve: Callable[[str], str],
    user: list[tuple[str, str, str]] | None = None,
    home: str | None = None,
    folders: set[str] | None = None,
) -> list[str]:
    """What else inside the workspace a repository makes git run or read as config: its common folder (a
    worktree's `commondir`), every file its config includes (and what they include, whatever the include's
    condition), and core.hooksPath, read by git itself (one-line sections, includes of includes), and by a plain
    reading of `path =` lines besides (an includeIf whose condition git cannot judge from a lone file). Each is
    where `resolve` says the path git is given leads (git hands it to the kernel as it is: `x/../hooks` is the
    folder above where the link `x` leads, not `hooks`). `user`: the entries of the user's own git config
    (`_user_git_config`), whose relative core.hooksPath names a folder of this repository's worktree too; `home`:
    the launcher's home, for a `~` in a path; `folders` gains the paths that name a folder (the common folder, a
    hooks folder), for a placeholder of the right kind where one is absent."""
    out = []
    lines = _lines(os.path.join(gitdir, "commondir"))
    common = resolve(os.path.join(gitdir, lines[0].strip())) if lines else None
    if common:
        out.append(common)
    named_folders = {common} if common else set()
    # a linked worktree reads the common repository's config, then its own config.worktree
    configs = [
        os.path.join(d, name)
        for d in dict.fromkeys(filter(None, (common, gitdir)))
        for name in ("config", "config.worktree")
    ]
    entries = [entry for config in configs for entry in _git_config(config)]
    read = set(configs)
    for key, value, origin in entries:  # grows with what each included file holds
        path = _resolved(resolve, _git_path(key, value, origin, worktree, home))
        out += [_resolved(resolve, origin), path, *map(resolve, _git_programs(key, value, worktree, home))]
        if key == "core.hookspath":
            named_folders.add(path)
        if path and key != "core.hookspath" and path not in read:
            read.add(path)
            entries += _git_config(path)
    for key, value, origin in user or ():  # what it includes was read once, with it
        path = _resolved(resolve, _git_path(key, value, origin, worktree, home))
        out += [_resolved(resolve, origin), path, *map(resolve, _git_programs(key, value, worktree, home))]
        if key == "core.hookspath":
            named_folders.add(path)
    if folders is not None:
        folders.update(p for p in named_folders if p)
    return [p for p in dict.fromkeys(out) if p and is_within(p, ws) and p != ws and p not in configs]


def _resolved(resolve: Callable[[str], str], path: str) -> str:
    return resolve(path) if path else ""


def _git_path(key: str, value: str, origin: str, worktree: str, home: str | None) -> str:
    """The path a git config entry names for git to run or read: core.hooksPath (relative to the worktree, where
    git runs hooks) or an include's path (relative to the file that includes it); "" for any other entry. Spelled
    as git hands it to the kernel, never normalised: where it leads is the kernel's answer (`_resolve`)."""
    if key == "core.hookspath":
        return os.path.join(worktree, _expand(value, home))
    if key.endswith(".path") and key.startswith("include") and origin:
        return os.path.join(os.path.dirname(origin), _expand(value, home))
    return ""  # not a path, or a relative include from the command line, which git refuses


# Settings whose value is a command git runs from the worktree (a hook by another name): a program they name by a
# path inside the workspace is host-executed (core.fsmonitor = ./tools/watch, a filter's clean command, an alias)
_COMMAND_KEYS = (
    "core.fsmonitor",
    "core.sshcommand",
    "core.editor",
    "core.pager",
    "core.askpass",
    "sequence.editor",
    "gpg.program",
)
_COMMAND_SUFFIXES = (".command", ".textconv", ".clean", ".smudge", ".process", ".driver", ".program")


def _git_programs(key: str, value: str, worktree: str, home: str | None) -> list[str]:
    """What a command-valued git setting names by a path (relative to the worktree, where git runs it): the program,
    and the scripts its words name (`python3 tools/strip.py`); none for any other entry, and for words without a
    slash (a command found on PATH, a builtin such as `core.fsmonitor = true`)."""
    shell = value.startswith("!") and (key.startswith("alias.") or key.endswith(".helper"))
    if not (shell or key in _COMMAND_KEYS or (key.count(".") >= 2 and key.endswith(_COMMAND_SUFFIXES))):
        return []
    words = [_expand(w.strip("'\""), home) for w in (value[1:] if shell else value).split()]
    return [os.path.join(worktree, w) for w in words if "/" in w and not w.startswith("-")]


def _expand(value: str, home: str | None) -> str:
    """`value` with a leading `~` expanded as git expands it: to `home` (the launcher's HOME), `~user` to that
    user's home."""
    if value == "~" or value.startswith("~/"):
        return value if home is None else home + value[1:]
    return os.path.expanduser(value) if value.startswith("~") else value


def _git_config(config: str) -> list[tuple[str, str, str]]:
    """(key, value, the file it came from) of every entry of `config` and what it includes; a plain reading of
    the file alone besides, for where git is missing or refuses it."""
    env = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}
    listed = _git_list(["--file", config], env, config) if _regular(config) else []
    return [*listed, *_plain_git_config(config)]


# What of the launcher's environment the host's git reads its own configs by (GIT_CONFIG_KEY_<n> and
# GIT_CONFIG_VALUE_<n> besides)
_USER_GIT_ENV = (
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
)


def _user_git_config(environ: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(key, value, the file it came from) of what the host's git reads besides a repository's own config, as
    the launcher's git reads it (its HOME, XDG_CONFIG_HOME, GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM,
    GIT_CONFIG_NOSYSTEM, GIT_CONFIG_COUNT's entries): the system config, the global ones, and every file they
    include, whatever the include's condition (git follows an includeIf only in a repository it holds for). Read
    by git outside any repository, and by a plain reading of each file besides."""
    env = {
        k: v for k, v in environ.items() if k in _USER_GIT_ENV or k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
    }
    env["PATH"] = os.environ.get("PATH", "")
    home = env.get("HOME")
    files = [env["GIT_CONFIG_GLOBAL"]] if env.get("GIT_CONFIG_GLOBAL") else []
    if not files and home:
        config_home = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files = [os.path.join(config_home, "git", "config"), os.path.join(home, ".gitconfig")]
    if env.get("GIT_CONFIG_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        files.append(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    out = _git_list([], env, "the user's git config", cwd="/")
    # each file read once, whatever the spelling it is named by (an include of an include of itself ends)
    read = {os.path.realpath(f) for f in (*files, *(origin for _, _, origin in out))}
    out += [entry for f in files for entry in _plain_git_config(f)]
    for key, value, origin in out:  # grows with what each include adds
        path = "" if key == "core.hookspath" else _git_path(key, value, origin, "/", home)
        if path and os.path.realpath(path) not in read:
            read.add(os.path.realpath(path))
            out += _git_config(path)  # as git names it: its entries' origin is then that spelling, to resolve
    return out


def _git_list(args: list[str], env: dict[str, str], what: str, cwd: str | None = None) -> list[tuple[str, str, str]]:
    """(key, value, the file it came from) of what `git config <args> --includes --list` lists; none when git is
    missing or refuses it."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if not git:
        return []
    try:
        done = subprocess.run(
            [git, "config", *args, "--includes", "--list", "--show-origin", "-z"],
            capture_output=True,
            timeout=10,
            env=env,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired:
        raise SandboxError(
            f"git did not read {what} within 10 s (sandbox layer): something it includes "
            "never ends (a FIFO); the run's host-executed paths cannot be known"
        ) from None
    if done.returncode != 0:
        return []
    # as the file system names them: a byte that is no UTF-8 (a hooks path in latin-1) stays that byte, where a
    # replacement character would make the guard hold a name git never uses
    parts = os.fsdecode(done.stdout).split("\0")
    out = []
    for origin, item in zip(parts[0::2], parts[1::2]):
        key, _, value = item.partition("\n")
        out.append((key.lower(), value, origin[len("file:") :] if origin.startswith("file:") else ""))
    return out


def _plain_git_config(config: str) -> list[tuple[str, str, str]]:
    """The include paths and hooks paths of `config` by a plain reading of its `path =` and `hooksPath =` lines."""
    out = []
    for line in _lines(config):
        key, sep, value = line.strip().partition("=")
        key = key.strip().lower()
        if sep and key in ("path", "hookspath"):
            out.append(("include.path" if key == "path" else "core.hookspath", value.strip().strip('"'), config))
    return out


def _lines(path: str) -> list[str]:
    """The lines of a regular text file, none when it is not one or cannot be read; decoded as the file system
    decodes a name (a path it holds with a byte that is no UTF-8 names the file git and the kernel find)."""
    if not _regular(path):
        return []
    try:
        with open(path, "rb") as f:
            return os.fsdecode(f.read()).splitlines()
    except OSError:
        return []


def _yarn_pointers(ws: str, rc: str) -> list[str]:
    """What a .yarnrc.yml makes every yarn command run: its yarnPath and its plugins' paths."""
    out = []
    for line in _lines(rc):
        key, sep, value = line.strip().lstrip("- ").partition(":")
        if sep and key.strip() in ("yarnPath", "path"):
            path = os.path.normpath(os.path.join(os.path.dirname(rc), value.strip().strip("'\"")))
            if is_within(path, ws) and path != ws:
                out.append(path)
    return out


def scan(spec: dict) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """(existing, absent): the host-executed paths of the workspace that exist, with their kind ("file" or
    "directory"), and the ones absent from the root (and from the home, when it lies inside), with the
    placeholder's kind and text. Reads the file system, writes nothing."""
    ws = spec["workspace"]
    home = os.path.realpath(spec["home"]) if spec.get("home") else ""  # the workspace is a real path too
    writable = set(spec.get("writable", ()))
    files: dict[str, str] = spec["files"]
    dirs = set(spec["directories"])
    home_files, home_dirs = set(spec.get("home_files", ())), set(spec.get("home_directories", ()))
    skip = set(spec.get("skip", ()))
    existing: dict[str, str] = {}
    absent: list[tuple[str, str, str]] = []
    git_depth = spec.get("git_depth", spec["depth"])
    anywhere = {**{n: "file" for n in files}, **{n: "directory" for n in dirs}}
    at_home_too = {**anywhere, **{n: "file" for n in home_files}, **{n: "directory" for n in home_dirs}}
    git_only_names = {".git": "directory"}
    environ: Mapping[str, str] = spec.get("environ") or os.environ  # the launcher's (git reads its config by it)
    user: list[tuple[str, str, str]] | None = None
    unchecked = set(spec.get("unchecked", ()))  # what the mutation check takes out (agentbox.testing.weakened)
    named_folders: set[str] = set()  # what git config names as a folder (`_git_pointers`)
    stepped: set[str] = set()  # the folders a configured path steps out of with `..` (`_resolve`)

    def freed(path: str) -> bool:
        return _opted_out(os.path.relpath(path, ws), writable)

    def resolve(path: str) -> str:
        """Where a path git is given leads, as the kernel resolves it; a link on the way in the workspace is refused
        unless the profile frees it by name (the run could lead the path anywhere through it). A freed link that
        the path ends at is the path's answer itself, not followed: what it points to is the run's to choose."""
        if not os.path.isabs(path):
            return os.path.normpath(path)
        name = os.path.basename(path)
        if name not in ("", ".", ".."):
            last = os.path.join(_resolve(ws, os.path.dirname(path), freed, stepped), name)
            if is_within(last, ws) and os.path.islink(last) and freed(last):
                return last
        return _resolve(ws, path, freed, stepped)

    def users() -> list[tuple[str, str, str]]:
        """The user's own git config, read once for every repository of the scan."""
        nonlocal user
        if user is None:
            user = [] if "user-git-config" in unchecked else _user_git_config(environ)
        return user

    def hold(pointed: list[str]) -> None:
        """Hold what a held file names for a host program to run or read (git's pointers, yarn's)."""
        for p in pointed:
            if _opted_out(os.path.relpath(p, ws), writable):
                continue
            if os.path.lexists(p):
                _no_link_on_the_way(ws, p, writable)
                existing[p] = "directory" if os.path.isdir(p) else "file"
            elif (first := _first_missing(ws, p)) and not any(a[0] == first for a in absent):
                _no_link_on_the_way(ws, os.path.dirname(first), writable)
                if os.path.lexists(first):  # a file where a folder of it would be: held, so it stays no folder
                    existing[first] = "file"
                    continue
                # named but absent (a hooks folder not made yet, a program): an empty read-only placeholder
                # holds its first missing name, so the run can make nothing there
                absent.append((first, "directory" if first != p or p in named_folders else "file", ""))

    # a repository around the workspace (the workspace a folder of a larger checkout): its config, outside the
    # run's reach, may still name hooks or programs inside the workspace, which git on the host runs there
    if (around := _enclosing_repository(ws)) is not None:
        hold(_git_pointers(ws, resolve(around[0]), around[1], resolve, users(), environ.get("HOME"), named_folders))
    stack = [(ws, 0, False)]
    while stack:
        folder, depth, git_only = stack.pop()
        try:
            entries = _entries(ws, folder)
        except FileNotFoundError:
            continue  # gone since its parent was listed
        except OSError:
            # a folder the host user cannot list may still be gone through (mode 0111): a repository below it is
            # found by git there all the same, but not by the scan, so the folder is held whole as it is
            if not _opted_out(os.path.relpath(folder, ws), writable):
                existing[folder] = "directory"
            continue
        at_home = folder == home
        wanted = git_only_names if git_only else at_home_too if at_home else anywhere
        for name, e in entries.items():
            path = e.path
            kind = wanted.get(name)
            if kind is not None and not _opted_out(rel := os.path.relpath(path, ws), writable):
                if e.is_symlink():
                    raise SandboxError(
                        f"host-executed path {path} is a symbolic link (sandbox layer): a process of the run could "
                        "replace the link, and a host program would then run what it points at; replace the link "
                        f"with what it points at, or make it writable by name (host_executed: {{writable: [{rel}]}})"
                    )
                existing[path] = "directory" if e.is_dir(follow_symlinks=False) else "file"
                if name == ".git":
                    gitdir = path if existing[path] == "directory" else _gitfile_target(path)
                    if gitdir and gitdir != path:
                        # where git finds it (through links named from outside, which the run cannot change); a
                        # link in the workspace is refused: the run could point it at a repository of its own
                        gitdir = resolve(gitdir) if "gitdir-link" not in unchecked else os.path.realpath(gitdir)
                        if is_within(gitdir, ws) and gitdir != ws:
                            existing[gitdir] = "directory"
                    pointed = (
                        _git_pointers(ws, gitdir, folder, resolve, users(), environ.get("HOME"), named_folders)
                        if gitdir
                        else []
                    )
                elif name == "HEAD" and _bare(entries):
                    # a bare repository (a local mirror pushed to): git runs its hooks and reads its config there;
                    # held whole like a .git, or its hooks and config where it is the workspace itself
                    held = [folder] if folder != ws else [os.path.join(ws, n) for n in ("hooks", "config")]
                    existing.update(
                        {h: "directory" if os.path.isdir(h) else "file" for h in held if os.path.lexists(h)}
                    )
                    pointed = _git_pointers(ws, folder, folder, resolve, users(), environ.get("HOME"), named_folders)
                elif name == ".yarnrc.yml":
                    pointed = _yarn_pointers(ws, path)
                else:
                    pointed = []
                hold(pointed)
                continue  # a protected folder is read-only whole: nothing below it needs a scan
            if e.is_dir(follow_symlinks=False) and depth + 1 < git_depth:
                shallow = depth + 1 < spec["depth"] and name not in skip and not git_only
                stack.append((path, depth + 1, not shallow))
        if (folder == ws or at_home) and not git_only:
            for name, kind in sorted(wanted.items()):
                if name not in entries and not _opted_out(os.path.relpath(os.path.join(folder, name), ws), writable):
                    absent.append((os.path.join(folder, name), kind, files.get(name) or ""))
    for folder, kind in _path_folders(ws, spec.get("path"), writable, stepped):
        if kind is not None:
            existing[folder] = kind
        elif not any(a[0] == folder for a in absent):
            absent.append((folder, "directory", ""))
    # What a path leads to through `..` depends on the folder it steps out of: one the run could replace with a link
    # would lead it elsewhere, so it is held too, unless something held already keeps it in place.
    places = {**existing, **{a[0]: a[1] for a in absent}}
    kept = [p for p, kind in places.items() if kind == "directory"]
    loose = [f for f in sorted(stepped) if not _pinned(f, places) and not any(is_within(f, k) for k in kept)]
    named_folders.update(loose)
    hold(loose)
    if "followed" not in unchecked:
        _followed(ws, existing, writable)
    return sorted(existing.items()), absent


def _entries(ws: str, folder: str) -> dict[str, os.DirEntry[str]]:
    """The entries of `folder`, by name; an OSError when the host user cannot look into it (list it and go through
    it: a folder of mode 0444 lists names whose own folders cannot be opened). The workspace itself refuses the
    run then: what it holds cannot be judged, and it cannot be held whole."""
    try:
        if not os.access(folder, os.R_OK | os.X_OK):
            raise PermissionError(f"cannot look into {folder}")
        return {e.name: e for e in os.scandir(folder)}
    except PermissionError as exc:
        if folder != ws:
            raise
        raise SandboxError(
            f"workspace {ws} cannot be listed by this user (host_executed, sandbox layer): the host-executed files "
            "it holds (a repository and its hooks) cannot be found, so none could be held; make it readable "
            f"(chmod u+rx {ws}), or set host_executed: writable"
        ) from exc


def _unlisted(path: str) -> bool:
    """Whether `path` is a folder the host user cannot look into (what a run left in it cannot be seen)."""
    return os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK)


def _path_folders(ws: str, path: str | None, writable: set[str], stepped: set[str]) -> list[tuple[str, str | None]]:
    """The folders of the launcher's PATH that lie in the workspace, where a shell finds them (each link followed as
    met, one in the workspace refused), each with the kind of what is there: a program the run left there would run
    on the host in place of the one the user meant (`git`, `ls`) at the next command a shell there resolves; a
    virtual environment's bin holds the whole environment, what its python loads (`_environment_of`). An
    absent one (None) is held at its first missing folder, so the run cannot make it; a file where the folder would
    be is held as it is, so the run cannot replace it with the folder. A relative entry (".", an empty one) makes
    every folder such a place, and the workspace root cannot be held in a writable run: both are refused.
    `stepped` gains the folders of the workspace an entry steps out of with `..`."""
    out: list[tuple[str, str | None]] = []
    for entry in (path or "").split(os.pathsep) if path is not None else ():
        if not entry or not os.path.isabs(entry):
            raise SandboxError(
                f"PATH holds the relative entry {entry!r} (sandbox layer): a host shell then runs programs from "
                "whatever folder it is in, so a program this run writes in the workspace would run on the host in "
                "place of the one meant; remove the entry from PATH, or let the run write what the host executes "
                "(host_executed: writable)"
            )
        real = _resolve(ws, entry, lambda here: False, stepped)
        if not is_within(real, ws):
            continue
        if real == ws:
            raise SandboxError(
                f"PATH holds the workspace {ws} itself (sandbox layer): every program this run writes at its root "
                "would run on the host in place of the one meant, and a writable workspace cannot be held whole; "
                "remove it from PATH, or set host_executed: writable"
            )
        if _opted_out(os.path.relpath(real, ws), writable):
            continue
        real = _environment_of(ws, real)
        if _opted_out(os.path.relpath(real, ws), writable):
            continue
        first = _first_missing(ws, real)
        if first is not None:
            out.append((first, ("directory" if os.path.isdir(first) else "file") if os.path.lexists(first) else None))
    return out


def _environment_of(ws: str, folder: str) -> str:
    """The virtual environment whose programs folder `folder` is (its parent holds pyvenv.cfg), else `folder`: the
    environment's python on PATH loads what the environment holds (a .pth file in site-packages runs at every
    start, a module at its import), so holding its bin alone would let the run plant code the host's next
    `python3` runs. An environment that is the workspace itself cannot be held whole: the run is refused."""
    parent = os.path.dirname(folder)
    if parent == folder or not os.path.lexists(os.path.join(parent, "pyvenv.cfg")):
        return folder
    if parent == ws:
        raise SandboxError(
            f"PATH holds {folder}, the programs of the virtual environment that is the workspace {ws} itself "
            "(host_executed, sandbox layer): its python runs what the run may write anywhere in the environment "
            "(a .pth file, a module), and a writable workspace cannot be held whole; remove it from PATH, or set "
            "host_executed: writable"
        )
    return parent


def _enclosing_repository(ws: str) -> tuple[str, str] | None:
    """(gitdir, worktree) of the repository git finds above the workspace, as git looks for it (the nearest .git of
    a folder above); None when there is none."""
    folder = os.path.dirname(ws)
    while True:
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            return dot, folder
        if _regular(dot) and (target := _gitfile_target(dot)):
            return target, folder
        if folder == os.path.dirname(folder):
            return None
        folder = os.path.dirname(folder)


def _bare(entries: dict[str, os.DirEntry[str]]) -> bool:
    """Whether a folder holding these entries is a bare repository to git: HEAD with objects/ and refs/ beside it."""
    return all(n in entries and entries[n].is_dir(follow_symlinks=False) for n in ("objects", "refs"))


def _first_missing(ws: str, path: str) -> str | None:
    """Where a hold keeps the run from making `path`: its first name below the workspace that does not exist, when
    the folder above it does (and is no link), where a placeholder holds the whole path; or the file that stands
    where a folder of it would be, to hold as it is (the run could replace it with that folder); `path` itself
    when it exists. None when nothing can be made there."""
    first = path
    while not os.path.lexists(os.path.dirname(first)):
        first = os.path.dirname(first)
    parent = os.path.dirname(first)
    if os.path.lexists(parent) and not os.path.isdir(parent) and not os.path.islink(parent):
        first, parent = parent, os.path.dirname(parent)
    if first == ws or not is_within(first, ws) or not os.path.isdir(parent) or os.path.islink(parent):
        return None
    return first


def _gitfile_target(path: str) -> str | None:
    lines = _lines(path)
    if not lines or not lines[0].startswith("gitdir:"):
        return None
    target = lines[0][len("gitdir:") :].strip()
    if "\0" in target:
        return None  # no path: git refuses it too
    return os.path.join(os.path.dirname(path), target)  # as git hands it to the kernel: resolved by the caller


def guard_args(
    spec: dict,
    argv: list[str],
    run_dir: str,
    registered: set[str] | frozenset[str] = frozenset(),
    scanned: tuple[list, list] | None = None,
) -> tuple[list[str], list[tuple[str, str]]]:
    """The bwrap options that hold the workspace's host-executed paths, and the placeholders they create.

    `argv`: the plan's own options (a path it already mounts over, a profile mask, the hidden .agentbox, is left
    to it); `registered`: placeholders another run of this workspace holds right now (empty files on the host,
    which count as absent); `scanned`: the workspace's `scan`, when the caller made it already."""
    from agentbox.sandbox.view import mounts_of

    ws = spec["workspace"]
    mounts = list(mounts_of(argv))
    # what the plan mounts over inside the workspace after binding it (a mask, the hidden .agentbox) is left to
    # it; a mount before the workspace's bind is covered by it, so does not count
    at = max((i for i, m in enumerate(mounts) if m.target == ws), default=-1)
    taken = [m.target for m in mounts[at + 1 :] if m.target != ws and is_within(m.target, ws)]

    def free(path: str) -> bool:
        return not any(is_within(path, t) for t in taken)

    found, absent = scanned if scanned is not None else scan(spec)
    absent = list(absent)
    existing = [p for p, _ in found if p not in registered and free(p)]
    absent += [
        (p, k, spec["files"].get(os.path.basename(p), ""))
        for p, k in ((p, "directory" if os.path.isdir(p) else "file") for p in sorted(registered))
        if not any(a[0] == p for a in absent)
    ]
    absent = [a for a in absent if free(a[0])]

    pins: set[str] = set()
    # a placeholder below the root (a PATH folder's first missing one) is pinned like an existing path: a renamed
    # parent would carry its mount away and free the name
    for path in [*existing, *(a[0] for a in absent)]:
        parent = os.path.dirname(path)
        while parent != ws and is_within(parent, ws):
            pins.add(parent)
            parent = os.path.dirname(parent)
    out: list[str] = []
    # each bound by a descriptor opened now, one name at a time without following a link, never by its name: bwrap
    # resolves a name when it mounts, and a concurrent run of the workspace may have swapped a folder on the way for
    # a link by then, which would bind what the link leads to, outside the workspace, read-write (redteam F4). The
    # pins go first, shortest first, so each later mount's destination lies under a folder bound already. Not
    # closed by this alone: bwrap mounts a descriptor by the name it has, then compares the inode at the destination,
    # so a relative link swapped in and back meanwhile can still land a pin on where it leads (left to a check of
    # the run's mount table).
    kinds = dict(found)
    opened: dict[str, int] = {}
    try:
        for pin in sorted(pins, key=len):
            if free(pin):
                out += ["--bind-fd", str(_held_fd(pin, "directory", opened)), pin]
        for path in existing:
            out += ["--ro-bind-fd", str(_held_fd(path, kinds.get(path, "file"), opened)), path]
        made: list[tuple[str, str]] = []
        folder = os.path.join(run_dir, "guard")  # the run's own private folder: bound by name
        for i, (path, kind, text) in enumerate(absent):
            source = os.path.join(folder, "empty" if kind == "directory" else f"file-{i}")
            if kind == "directory":
                os.makedirs(source, exist_ok=True)
            else:
                os.makedirs(folder, exist_ok=True)
                with open(source, "w") as f:
                    f.write(text)
            out += ["--ro-bind", source, path]
            made.append((path, kind))
    except BaseException:
        for fd in bound_fds(out):
            os.close(fd)
        raise
    finally:
        for fd in opened.values():
            os.close(fd)
    return out, made


BY_FD = ("--bind-fd", "--ro-bind-fd")  # bwrap's binds of what a descriptor holds (bubblewrap 0.8)


def bound_fds(args: list[str]) -> list[int]:
    """The descriptors `guard_args` bound (bwrap must inherit them; the caller closes them once it is done)."""
    return [int(args[i + 1]) for i, a in enumerate(args[:-1]) if a in BY_FD]


def _mounted(args: list[str]) -> dict[str, tuple[int, int]]:
    """What each bind by descriptor of `args` mounts (device and inode), by the path it mounts it at."""
    out: dict[str, tuple[int, int]] = {}
    for i, a in enumerate(args[:-2]):
        if a in BY_FD:
            info = os.fstat(int(args[i + 1]))
            out[args[i + 2]] = (info.st_dev, info.st_ino)
    return out


def _held_fd(path: str, kind: str, opened: dict[str, int]) -> int:
    """A descriptor of its own (bwrap closes each one it mounts) for what stands at `path` now: opened O_PATH from
    the root one name at a time, never through a link (the guard's paths are real paths, where the scan found no
    link on the way), and of the `kind` the scan found. `opened` keeps the folders on the way, so a pin and what
    lies under it are opened through one another. Anything else (a link, a folder gone, a folder that became a
    file) changed since the scan: the run is refused."""
    try:
        fd = _walk(path, opened)
        info = os.fstat(fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            what = "a folder on the way is a link or no folder now"
        else:
            what = "it is gone" if exc.errno == errno.ENOENT else str(exc)
        raise _changed(path, what) from None
    if stat.S_ISLNK(info.st_mode):
        raise _changed(path, "it is a symbolic link now")
    if stat.S_ISDIR(info.st_mode) != (kind == "directory"):
        raise _changed(path, "it is no folder now" if kind == "directory" else "it is a folder now")
    return os.dup(fd)


def _walk(path: str, opened: dict[str, int]) -> int:
    """An O_PATH descriptor of `path`, each name opened in the folder opened before it, none followed if a link."""
    if path in opened:
        return opened[path]
    parent = os.path.dirname(path)
    if parent == path:  # the root
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    else:
        fd = os.open(os.path.basename(path), os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=_walk(parent, opened))
    opened[path] = fd
    return fd


def _changed(path: str, what: str) -> SandboxError:
    return SandboxError(
        f"host-executed path {path} changed between the scan of the workspace and its hold ({what}) (sandbox "
        "layer): another process, a concurrent run of this workspace perhaps, is changing it, and binding what now "
        "stands there could reach outside the workspace; the run is refused: start it again once nothing else "
        "changes the workspace"
    )


class Guard:
    """One run's hold on its workspace's host-executed paths: the options to add to bwrap's argv, and the
    placeholders to take away when no run holds them any more.

    The runs of one user share one record of every placeholder, whatever workspace or AGENTBOX_HOME each names
    (`guard_folder`, never where a run can write): a placeholder one run made is a host-executed name to every other
    run whose workspace holds it (the same workspace, or one nested in or around it), so each of them holds it too,
    and the record lists its holders. Each run holds an exclusive lock on a file of its own while it lasts (a run
    that was killed holds none, so it holds nothing); the record is changed only under a second lock, held for an
    instant. A placeholder is removed when its last living holder ends: removing a mount point on the host takes the
    mount away inside every run that still holds it, and frees the name to them."""

    def __init__(self, spec: dict, argv: list[str], run_dir: str, path: str | None = None, folder: str | None = None):
        """`path`: the launcher's PATH (its folders in the workspace are held too); `folder`: the record's folder, when
        the caller found it already (`guard_folder`: the start checks it lies where the run cannot write)."""
        spec = {**spec, "path": path}
        folder = folder or guard_folder()
        self._folder = folder
        self._record = os.path.join(folder, "placeholders.json")
        self._lock = os.path.join(folder, "placeholders.lock")
        self._id = f"{os.getpid()}-{os.urandom(6).hex()}"
        self._fd: int | None = os.open(_alive(folder, self._id), _OPEN | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        self.fds: list[int] = []  # what `args` binds by descriptor: bwrap inherits them, `close_fds` closes them
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)  # held while the run lasts
            scanned = scan(spec)  # outside the lock: the runs of other workspaces need not wait for it
            with _Mutex(self._lock):
                record = _living(folder, self._load())
                registered = {p for p in record if is_within(p, spec["workspace"])}
                self.args, made = guard_args(spec, argv, run_dir, registered, scanned)
                self.fds = bound_fds(self.args)
                for placeholder, kind in made:
                    entry = record.setdefault(placeholder, {"kind": kind, "holders": []})
                    entry["holders"].append(self._id)
                self._save(record)
        except BaseException:
            self.close_fds()
            self._end()
            raise
        self._spec = spec
        # what this run held, by the path it held it at, and what the start found (a path the plan mounts over, the
        # profile's masks and the hidden .agentbox among them): anything the end's scan finds besides came during
        # the run
        self._held = {self.args[i + 2] for i, a in enumerate(self.args) if a in ("--ro-bind", *BY_FD)}
        self._held |= {p for p, _ in scanned[0]} | {a[0] for a in scanned[1]}
        # what each held path was at the start: one replaced on the host meanwhile (a concurrent run that does not
        # hold it, the user's own git checkout) takes its read-only mount away inside this run, which may then
        # write the new one
        self._inodes = {p: _inode(p) for p, kind in scanned[0] if kind == "file"}  # a folder's ctime moves with use
        # what each bind by descriptor mounted, the folders too: bwrap mounts a descriptor by the name it has when
        # bwrap starts, so a folder renamed away meanwhile (by a process outside the run) and put back after the
        # mount is held nowhere (red team of the descriptor binds); its name leading elsewhere at the end says so
        self._bound = _mounted(self.args)

    def close_fds(self) -> None:
        """Close the descriptors `args` binds (bwrap has its own copies, and closes each once it is mounted); a
        sandbox started from `args` afterwards fails to start."""
        fds, self.fds = self.fds, []
        for fd in fds:
            os.close(fd)

    def newcomers(self) -> list[str]:
        """The host-executed paths the workspace holds now that it did not hold when the run started, where
        nothing held them (a repository made in a new folder, and its hooks): what a host program may run next,
        for the user to review. Reads the file system, writes nothing."""
        try:
            found, _ = scan(self._spec)
        except SandboxError as exc:  # a link at such a name: the scan stops at it, and says where it is
            return [str(exc).split(" (sandbox layer)")[0]]
        except (OSError, ValueError) as exc:  # what the run left cannot be read: say so, never end the cleanup
            return [f"the workspace {self._spec['workspace']} could not be scanned after the run ({exc})"]
        fresh = [p for p, _ in found if p not in self._held]
        fresh += [p for p, before in self._inodes.items() if before is not None and _inode(p) not in (before, None)]
        swapped = {p for p, mounted in self._bound.items() if (now := _inode(p)) and now[:2] != mounted} - set(fresh)
        fresh += sorted(swapped)
        # one line per new place, not one per file in it: a new repository is its .git
        fresh = [p for p in fresh if not any(p != q and is_within(p, q) for q in fresh)]
        # a folder the run made unreadable (mode 0111) hides what it left below it, a repository git still finds
        return [
            f"{p} (a folder this user cannot list: what the run left in it cannot be seen)"
            if _unlisted(p)
            else f"{p} (not what the run held: it was put there while the run started or ran, and what stood there "
            "then was not held)"
            if p in swapped
            else p
            for p in fresh
        ]

    def _load(self) -> dict[str, dict]:
        try:
            with open(self._record) as f:
                text = f.read()
        except (OSError, ValueError):
            return {}
        if text == _EMPTY:
            return {}
        import json  # loads re and enum (~7 ms a start): a record that holds nothing is read without it (_EMPTY)

        try:
            loaded = json.loads(text)
        except ValueError:
            return {}
        return {p: e for p, e in loaded.items() if isinstance(e, dict)} if isinstance(loaded, dict) else {}

    def _save(self, record: dict[str, dict]) -> None:
        if record:
            import json  # as in _load

            text = json.dumps(record)
        else:
            text = _EMPTY
        tmp = f"{self._record}.{self._id}"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self._record)

    def release(self) -> list[str]:
        """End this run's hold; remove the placeholders no living run holds any more (only while they are still
        empty: a host program that wrote one keeps what it wrote). Returns what was left."""
        self.close_fds()
        if self._fd is None:
            return []
        try:
            with _Mutex(self._lock):
                record = self._load()
                for entry in record.values():
                    entry["holders"] = [h for h in entry.get("holders", ()) if h != self._id]
                record = _living(self._folder, record, also_dead=self._id)
                done = {p: e for p, e in record.items() if not e["holders"]}
                self._save({p: e for p, e in record.items() if e["holders"]})
                return _remove_placeholders(done)
        finally:
            self._end()

    def _end(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            try:
                os.unlink(_alive(self._folder, self._id))
            except FileNotFoundError:
                pass


def _inode(path: str) -> tuple[int, int, int] | None:
    """What a file is, not what it holds: a new file at the name (its inode may be the old one's) has a new ctime."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino, info.st_ctime_ns


def _alive(folder: str, run: str) -> str:
    return os.path.join(folder, f"run-{run}.alive")


def _living(folder: str, record: dict[str, dict], also_dead: str = "") -> dict[str, dict]:
    """The record without holders that no longer run (killed: nobody holds their lock); a placeholder left with no
    holder stays listed, for the caller to remove."""
    alive: dict[str, bool] = {}

    def lives(run: str) -> bool:
        if run not in alive:
            alive[run] = run != also_dead and _locked(_alive(folder, run))
        return alive[run]

    return {
        p: {**e, "holders": [h for h in e.get("holders", ()) if isinstance(h, str) and lives(h)]}
        for p, e in record.items()
    }


def _locked(path: str) -> bool:
    """Whether a living run holds the lock on `path` (a run's own file; gone or unlocked: the run has ended)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    try:
        os.unlink(path)  # a killed run's: nobody holds it
    except FileNotFoundError:
        pass
    return False


def _remove_placeholders(record: dict[str, dict]) -> list[str]:
    """Remove each placeholder that is still what bwrap made (an empty folder, an empty file), never through a link:
    each folder on the way is opened without following one, and the name removed in the folder so opened, so a
    folder swapped for a link meanwhile (a rename by another run) cannot aim the removal outside the workspace."""
    left: list[str] = []
    for path, entry in sorted(record.items(), key=lambda item: -len(item[0])):
        try:
            folder = _open_folder(os.path.dirname(path))
        except FileNotFoundError:
            continue
        except OSError:  # a link on the way (ELOOP, ENOTDIR): what it leads to is not the placeholder
            left.append(path)
            continue
        name = os.path.basename(path)
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
            if entry.get("kind") == "directory" and stat.S_ISDIR(info.st_mode):
                os.rmdir(name, dir_fd=folder)
            elif stat.S_ISREG(info.st_mode) and info.st_size == 0:
                os.unlink(name, dir_fd=folder)
            else:
                left.append(path)
        except FileNotFoundError:
            pass
        except OSError:
            left.append(path)
        finally:
            os.close(folder)
    return sorted(left)


def _open_folder(path: str) -> int:
    """A descriptor of the folder at `path`, opened one name at a time from the root without following a link."""
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in (p for p in path.split("/") if p):
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


_OPEN = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC


def guard_folder(runtime: str | None = None, fallback: str | None = None) -> str:
    """Where the runs of one user share their record of placeholders: the user's runtime folder (root's
    /run/agentbox, else $XDG_RUNTIME_DIR/agentbox), else /tmp/agentbox-UID; every run's private /run and /tmp hide
    them, and they are the same whatever AGENTBOX_HOME each run names (two records would let the first run to end
    take away placeholders the other still holds: a removed mount point is unmounted inside every run). A folder that
    is not the user's alone (another user's, a link, open to others) is never used: one that could be written by
    someone else refuses the run. `runtime`: the runtime folder (default: found from the user and the environment);
    `fallback`: the folder used without one (default /tmp/agentbox-UID)."""
    for base in [runtime] if runtime is not None else _runtime_folders():
        folder = os.path.join(base, "agentbox", "guards")
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            continue
        if _mine_alone(folder):
            return folder
    base = fallback or f"/tmp/agentbox-{os.geteuid()}"
    folder = os.path.join(base, "guards")
    for made in (base, folder):  # each with its own mode: makedirs gives the folders above the default one
        try:
            os.mkdir(made, 0o700)
        except OSError:
            pass
    if not (_mine_alone(base) and _mine_alone(folder)):
        raise SandboxError(
            f"{folder} is not this user's alone (sandbox layer): the record of which host-executed placeholders runs "
            "hold could be rewritten by another user, and a run's end would remove what it names; remove the folder, "
            "or set XDG_RUNTIME_DIR to a folder of yours with mode 0700"
        )
    return folder


def _mine_alone(folder: str) -> bool:
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def _runtime_folders() -> list[str]:
    """The runtime folder that is the user's alone: /run for root, $XDG_RUNTIME_DIR (the user's, mode 0700) else."""
    if os.geteuid() == 0:
        return ["/run"]
    named = os.environ.get("XDG_RUNTIME_DIR")
    return [named] if named and os.path.isabs(named) and _mine_alone(named) else []


class _Mutex:
    """An exclusive lock on `path` for the length of a `with` block."""

    def __init__(self, path: str):
        self._path = path

    def __enter__(self) -> None:
        self._fd = os.open(self._path, _OPEN, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *exc) -> None:
        os.close(self._fd)
