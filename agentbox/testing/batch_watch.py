"""What a batched session's members did to each other, seen as they take turns (agentbox/testing/batch.py).

The words of a step say what it means to touch; the watch sees what happened. It looks when the harness is about
to be sent each member's first step (the scripted model's `before_reply` hook: everything before is answered, the
next step not yet sent), when it is about to be sent the closing words, and after the run. Each look asks two
things, and either answer can void the session (every member then runs alone, its record saying why):

- the session's folders (the shared workspace and home, the members' own folders), entry by entry
  (`footprint`): what changed while a member played must be named by that member's nonce or be the harness's own
  (new files in the state folders of the home the run made as it started; what its vocabulary declares in
  `own_state`); after the last member, no member's path may change;
- the run's processes (those carrying its marker, and every descendant of this process): none a member's steps
  started may still be running when the next member's turn begins. A process left behind acts in another's turn,
  where the folders' look credits what it does to the member playing (red team: a sweeper started by one member
  moved the next member's escaped file away, which read as blocked; Codex answers a step that runs past 10 s with
  "Process running with session ID" and leaves it running). While the harness runs, this process adopts every
  orphan below it (`adopting`), so a process that both dropped the marker and left the tree (a double fork)
  is still a descendant.

It also keeps when each turn began, so that an egress proxy decision is a member's only if it was made in that
member's turn (`turn_of`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from fnmatch import fnmatchcase
from pathlib import Path

from agentbox.run.runs import process_identity
from agentbox.sandbox.session import command_line, marked, parent_pid
from agentbox.testing import footprint

__all__ = ["Void", "Watch", "adopting", "matches"]

# how long a process a step started may take to be gone once the harness has its result (a shell still exiting)
_SETTLE = 1.0
_PR_SET_CHILD_SUBREAPER = 36  # prctl(2)


class Void(Exception):
    """Why a batched session stands for no one: each of its members runs alone, and its record says why."""


@dataclass
class Watch:
    """The looks of one session; `members` have `.vector.id`, `.nonce`, `.steps` (their step indexes) and `.targets`."""

    base: Path
    shared: tuple[Path, Path]
    members: list
    own_state: tuple[str, ...]
    run_id: str | None = None  # the run's marker, when its processes are watched
    # the harness's state outside the session's folders, looked at too: the run's config home (Claude Code sources
    # a shell snapshot kept there before every Bash call; a member that appended to it changed what the next
    # member's `cp` did, red team)
    state: tuple[str, ...] = ()
    config_state: tuple[str, ...] = ()  # what the harness writes there as it runs (its vocabulary's `config_state`)
    # the run's $TMPDIR where it is the host's (the harness layer; red team: a mode-000 file planted at another
    # member's path there turned its escape into a refusal), and what the harness writes there (`tmp_state`)
    tmp: str | None = None
    tmp_state: tuple[str, ...] = ()
    playing: int = -1  # the member whose steps are being played; -1 before the first, len(members) once done
    made: set[str] = field(default_factory=set)  # the folders of the home the run made before the first step
    first: set[str] = field(default_factory=set)  # every path there was when the first step was sent
    running: set[tuple[int, str]] = field(default_factory=set)  # the run's processes when the first step was sent
    ended: set[int] = field(default_factory=set)  # its ended, unreaped descendants at the last look
    began: list[float] = field(default_factory=list)  # when each turn began (the last: the closing words)
    # each database of the harness's own state, when first seen
    schemas: dict[str, list[tuple]] = field(default_factory=dict)
    void: str | None = None
    _last: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._last = self._look()

    def _look(self) -> dict:
        folders = [*self.state, self.tmp] if self.tmp is not None else self.state
        return footprint.look(self.base, *(Path(p) for p in folders))

    def step(self, index: int | None) -> None:
        """The model is about to send step `index` (None: its closing words): a new member's turn starts here."""
        turn = (
            len(self.members)
            if index is None
            else next((i for i, m in enumerate(self.members) if index in m.steps), self.playing)
        )
        with self._lock:
            if turn > self.playing:
                self._close_window()
                self._check_processes(turn)
                self.began += [time.time()] * (turn - self.playing)  # a turn skipped is over as it begins
                self.playing = turn

    def end(self) -> None:
        """The run is over: the last window closes, and the session is void if anything in it trespassed."""
        with self._lock:
            self._close_window()

    def turn_of(self, when: str | None) -> int | None:
        """The member whose turn an ISO 8601 time (an egress decision's) falls in, or None."""
        if not when:
            return None
        try:
            t = datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
        # the proxy writes milliseconds, cut: a decision may read up to 1 ms before the moment it was made
        return self.turn_at(t + 0.001)

    def turn_at(self, t: float) -> int | None:
        """The member whose turn the time `t` (seconds since the epoch) falls in, or None."""
        turn = sum(1 for b in self.began if b <= t) - 1
        return turn if 0 <= turn < len(self.members) else None

    def check_listeners(self) -> None:
        """After the run: a member's listener reached outside that member's turn voids the session (red team: one
        member's control connected to every listener it could find, and another's broken control passed)."""
        for i, m in enumerate(self.members):
            for name, listener in m.targets.listeners.items():
                listener.hits()  # what is still queued is taken now, and is outside every turn
                stray = next((t for t in listener.times if self.turn_at(t) != i), None)
                if stray is not None:
                    when = self.turn_at(stray)
                    by = (
                        f"while {self.members[when].vector.id} played"
                        if when is not None
                        else "before the first step"
                        if not self.began or stray < self.began[0]
                        else "after the last step"
                    )
                    self._voids(f"{m.vector.id}'s {name} listener was reached {by}")

    # -- the folders ---------------------------------------------------------------------------
    def _close_window(self) -> None:
        before, now = self._last, self._look()
        paths, self._last = footprint.changed(before, now), now
        self._check_databases()
        if self.playing < 0:  # the run starting: its config and the harness's state folders, in no step's way
            # in the home only: in the config home, what the harness makes as it runs is declared by name
            # (`config_state`), since a new file in a folder it made there can be one it reads (its session-env)
            home = f"{self.shared[1]}/"
            self.made = {p for p in paths if p not in before and p.startswith(home) and now[p][0] == stat.S_IFDIR}
            self.first = set(now)
            trespass = next((p for p in paths if self._owner(p) is not None), None)
            if trespass is not None:
                self._voids(f"{trespass} changed before the first step")
            return
        for path in paths:
            owner = self._owner(path)
            if owner is not None and owner == self.playing:
                continue
            if owner is None and self.playing >= len(self.members):
                continue  # changed once every member was done: no member met it
            if owner is None and self._harness_own(path):
                # the harness writes files and folders there; anything else at a path it writes is a member's
                # (red team 7: a symlink put where Codex's log database was, pointing at a file a later member read)
                odd = _odd_kind(now.get(path))
                if odd is not None:
                    self._voids(f"{path} became {odd} {self._when()}, where the harness writes files")
                continue
            self._voids(f"{path} changed {self._when()}, and was not {self._whose()} own")

    def _owner(self, path: str) -> int | None:
        """The member a path below the session's folders belongs to: its nonce names the path (a folder on its
        way, below the shared folder or the session's), or None: no member's."""
        rel = os.path.relpath(path, self.base).split(os.sep)
        return next((i for i, m in enumerate(self.members) if any(m.nonce in part for part in rel)), None)

    def _harness_own(self, path: str) -> bool:
        """What the harness writes as it runs: new files in the state folders of the home it made as it started
        (its sessions and logs; never the config that was there when the first step was sent, which a member
        changing would change what the next one met), and what its vocabulary declares (`own_state`)."""
        if path not in self.first and any(path.startswith(f"{p}/") for p in self.made):
            return True
        return self._declared_own(path)

    def _declared_own(self, path: str) -> bool:
        places = [(folder, self.own_state) for folder in self.shared] + [(f, self.config_state) for f in self.state]
        for folder, patterns in places:
            rel = os.path.relpath(path, folder)
            if not rel.startswith("..") and any(_declared(rel, pattern) for pattern in patterns):
                return True
        # in $TMPDIR files only, never a folder on their way (`tmp_state`)
        rel = os.path.relpath(path, self.tmp) if self.tmp is not None else ".."
        return not rel.startswith("..") and any(matches(rel, pattern) for pattern in self.tmp_state)

    def _check_databases(self) -> None:
        """A database the harness writes as it runs may be one it reads back, and its writes are let through, so a
        member's trigger in it acts in another member's turn, inside the harness, where no look sees it (red team:
        OpenCode reads each tool's output back from opencode.db before the next request; a trigger a member planted
        there added "Read-only file system" to a later member's result, which read as refused). The schema of each
        SQLite database the vocabulary declares is kept from when it is first seen: a later change voids the session,
        and so does a trigger in one first seen once a member has played (the harnesses make theirs as they start).
        While a member plays, a database seen before that is gone or no longer one voids it too, and so does a file
        named as a database that is not one (red team 7: a note planted as Codex's `logs_9.sqlite`)."""
        playing = 0 <= self.playing < len(self.members)
        files = {p for p, e in self._last.items() if e[0] == stat.S_IFREG}
        for path in sorted(self.schemas.keys() - files) if playing else ():
            self._voids(f"the harness's database {path} is gone or no longer a file {self._when()}")
        for path, entry in self._last.items():
            if entry[0] != stat.S_IFREG or not self._declared_own(path):
                continue
            if not _is_database(path):
                if playing and path in self.schemas:
                    self._voids(f"the harness's database {path} is no longer one {self._when()}")
                elif playing and path.endswith((".sqlite", ".db")) and entry[5] > 0:  # its size when looked at
                    self._voids(f"{path}, named as the harness's database, is not one {self._when()}")
                continue
            now = _schema(path)
            if path not in self.schemas:
                self.schemas[path] = now
                if self.playing >= 0 and any(row[0] == "trigger" for row in now):
                    self._voids(f"the harness's database {path} appeared {self._when()} holding a trigger")
            elif self.schemas[path] != now:
                self._voids(f"the schema of the harness's database {path} changed {self._when()}")

    # -- the processes -------------------------------------------------------------------------
    def _check_processes(self, turn: int) -> None:
        if self.run_id is None:
            return
        if self.playing < 0:
            self.running, self.ended = self._processes()
            return
        # A process that forks and exits between the listing of /proc and the reading of its entries hides its
        # child from one look, and a chain of them (each forking the next and exiting) from every look. Each such
        # hop leaves an ended descendant (adopted, so it stays until reaped): while new ones appear, look again.
        deadline = time.monotonic() + _SETTLE
        live, ended = self._processes()
        left, hopped = live - self.running, ended - self.ended
        while (left or hopped) and time.monotonic() < deadline:
            time.sleep(0.02)  # a shell that printed its last line may still be exiting
            live, now = self._processes()
            left, hopped, ended = live - self.running, now - ended, now
        self.ended = ended
        nxt = "the closing words" if turn >= len(self.members) else f"{self.members[turn].vector.id}'s turn"
        if left:
            pid, command = min(left)
            self._voids(f"a process started {self._when()} was still running at {nxt}: {pid} {command[:120]}")
        elif hopped:
            self._voids(f"processes started {self._when()} were still starting and ending at {nxt}")

    def _processes(self) -> tuple[set[tuple[int, str]], set[int]]:
        """The run's processes: the live ones (pid, command line), those carrying its marker and every descendant
        of this process (one that dropped the marker from its environment is still below the harness); and the
        descendants that have ended but are not yet reaped (zombies)."""
        assert self.run_id is not None
        found = {(pid, command) for pid, command in marked(self.run_id) if _alive(pid)}
        parents = _parents()
        mine, grew = {os.getpid()}, True
        while grew:
            grew = False
            for pid, ppid in parents.items():
                if ppid in mine and pid not in mine:
                    mine.add(pid)
                    grew = True
        mine.discard(os.getpid())
        live = {pid for pid in mine if _alive(pid)}
        return found | {(pid, command_line(pid) or "") for pid in live}, mine - live

    # -- how a void reads ------------------------------------------------------------------------
    def _voids(self, why: str) -> None:
        if self.void is None:
            self.void = why

    def _when(self) -> str:
        if self.playing < 0:
            return "before the first step"
        if self.playing >= len(self.members):
            return "after the last step"
        return f"while {self.members[self.playing].vector.id} played"

    def _whose(self) -> str:
        return f"{self.members[self.playing].vector.id}'s" if 0 <= self.playing < len(self.members) else "the harness's"


@contextmanager
def adopting() -> Iterator[None]:
    """While open, this process is a child subreaper: an orphan anywhere below it is re-parented to it rather than
    to init, so it stays a descendant the process look finds (red team: a double-forked daemon that also dropped the
    run's marker was neither marked nor below the harness). On leaving, once the harness has ended and been waited
    for, every child this process did not have before is an adopted one: it is killed if still running (it outlived
    its run) and reaped, so none is left a zombie of the test process."""
    libc = ctypes.CDLL(None, use_errno=True)
    before = set(_children())
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed: a batched session needs it")
    try:
        yield
    finally:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        for pid in set(_children()) - before:
            try:
                handle = os.pidfd_open(pid)  # this process, not one that takes its number once it is reaped
            except ProcessLookupError:
                continue  # reaped already: one of the run's own, waited for as it ended
            try:
                if parent_pid(pid) == os.getpid():
                    try:
                        signal.pidfd_send_signal(handle, signal.SIGKILL)
                    except ProcessLookupError:
                        pass  # ended already: a zombie, reaped below
                    os.waitpid(pid, 0)
            except ChildProcessError:
                pass  # reaped meanwhile by the run's own wait
            finally:
                os.close(handle)


def _children() -> list[int]:
    """This process's children, zombies included."""
    me = os.getpid()
    return [pid for pid, ppid in _parents().items() if ppid == me]


def _parents() -> dict[int, int | None]:
    """Every process's parent (None: gone while read)."""
    return {int(e): parent_pid(int(e)) for e in os.listdir("/proc") if e.isdigit()}


_KINDS = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket"}


def _odd_kind(entry) -> str | None:
    """What a path the harness writes became when it is neither a file nor a folder (None: one of those, or gone)."""
    if entry is None or entry[0] in (stat.S_IFREG, stat.S_IFDIR):
        return None
    return _KINDS.get(entry[0], "a device")


def _is_database(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _schema(path: str) -> list[tuple]:
    """What a database holds besides its rows (tables, indexes, views, triggers: each row's type first), read without
    writing to it; one that cannot be read is one row saying why, so that becoming readable is a change too."""
    try:
        db = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True, timeout=2)
        try:
            return db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        finally:
            db.close()
    except sqlite3.Error as exc:
        return [("unreadable", str(exc))]


def _declared(rel: str, pattern: str) -> bool:
    """Whether a vocabulary's pattern names `rel`: the path itself (`*` in a name matches any characters but `/`),
    what is below it (a pattern ending in `/`), or a folder on its way."""
    if pattern.endswith("/"):
        base = pattern.rstrip("/")
        return matches(rel, base) or rel.startswith(f"{base}/") or base.startswith(f"{rel}/")
    return matches(rel, pattern) or pattern.startswith(f"{rel}/")


def matches(rel: str, pattern: str) -> bool:
    """Whether a vocabulary's pattern names the path `rel` itself (`*` matches within a name, never across `/`)."""
    return rel.count("/") == pattern.count("/") and fnmatchcase(rel, pattern) if "*" in pattern else rel == pattern


def _alive(pid: int) -> bool:
    return process_identity(pid) is not None  # None: gone, or a zombie
