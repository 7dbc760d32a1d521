"""A bind that puts back what a private mount hid: refused before any run starts.

bubblewrap applies its mounts in the order of its command line, so `--tmpfs $HOME` followed by a bind of `$HOME`
(or of any folder above it, `/home` or `/`) mounts the host's home back over the private one. A plan hides the
home (host_home: hidden), the host's /tmp, /run, AGENTBOX_HOME and the workspace's own `.agentbox` this way; and
binds come into a command line from more places than its compile (an ACP adapter's install root, a harness's, a
Python server's search path), each of which could name such a folder: an adapter found under `~/node_modules`
has the home itself as its install root. So the whole command line is read back as bubblewrap will apply it, and
one bind that holds an earlier private mount is an error naming both. A bind below one (the harness installs in a
hidden AGENTBOX_HOME, a file of the run's config) is what a plan means to show, and passes.
"""

from __future__ import annotations

import os

from agentbox.errors import SandboxError

__all__ = ["BINDS", "check_covers", "holds", "uncovered", "walk"]

# bubblewrap's options by the number of arguments they take (bubblewrap 0.8-0.11), for walking a command line
_NONE = frozenset(
    "--unshare-all --share-net --unshare-user --unshare-user-try --unshare-ipc --unshare-pid --unshare-net "
    "--unshare-uts --unshare-cgroup --unshare-cgroup-try --disable-userns --assert-userns-disabled --clearenv "
    "--die-with-parent --as-pid-1 --new-session --level-prefix".split()
)
_ONE = frozenset(
    "--tmpfs --dir --chdir --seccomp --add-seccomp-fd --proc --dev --mqueue --remount-ro --cap-drop --cap-add --uid "
    "--gid --hostname --perms --size --unsetenv --args --argv0 --userns --userns2 --pidns --block-fd "
    "--userns-block-fd --info-fd --json-status-fd --sync-fd --lock-file --exec-label --file-label --overlay-src "
    "--tmp-overlay --ro-overlay".split()
)
_TWO = frozenset(
    "--bind --ro-bind --dev-bind --bind-try --ro-bind-try --dev-bind-try --bind-fd --ro-bind-fd --setenv --symlink "
    "--file --bind-data --ro-bind-data --chmod --overlay".split()
)
BINDS = _BINDS = frozenset(
    "--bind --ro-bind --dev-bind --bind-try --ro-bind-try --dev-bind-try --bind-fd --ro-bind-fd".split()
)


def _holds(outer: str, inner: str) -> bool:
    """Whether a mount at `outer` covers `inner`: the same folder or one above it, by spelling or where it leads."""
    for a in {os.path.normpath(outer), os.path.realpath(outer)}:
        for b in {os.path.normpath(inner), os.path.realpath(inner)}:
            if a == b or a == "/" or b.startswith(a.rstrip("/") + "/"):
                return True
    return False


def walk(argv: list[str]):
    """(index, option, its arguments) of each of bubblewrap's options in `argv`, up to the command."""
    i = 1 if argv and not argv[0].startswith("--") else 0  # past bwrap itself
    while i < len(argv) and argv[i] != "--":
        option = argv[i]
        count = 2 if option in _TWO else 1 if option in _ONE else 0
        yield i, option, argv[i + 1 : i + 1 + count]
        i += 1 + count


def holds(outer: str, inner: str) -> bool:
    """Whether a mount at `outer` covers `inner` (`_holds`)."""
    return _holds(outer, inner)


def uncovered(argv: list[str]) -> tuple[str, str] | None:
    """The first (bind destination, private mount it uncovers) of bubblewrap's options in `argv`, or None; an option
    the walk cannot read (an overlay, one it does not know) is returned as (option, why)."""
    private: list[str] = []
    for _, option, args in walk(argv):
        if option == "--tmpfs":
            private.append(args[0])
        elif option in _BINDS:
            for hidden in private:
                if _holds(args[1], hidden):
                    return args[1], hidden
        elif option in ("--overlay", "--tmp-overlay", "--ro-overlay", "--args"):
            return option, "(an overlay, or options read from a descriptor, which this check cannot read)"
        elif option not in _NONE and option not in _ONE and option not in _TWO:
            return option, "(an option this check does not know)"  # read whole or refused, never skipped
    return None


def check_covers(argv: list[str]) -> None:
    """Fail closed when a bind in `argv` would undo one of its private mounts."""
    found = uncovered(argv)
    if found is not None and found[1].startswith("("):
        raise SandboxError(
            f"the sandbox's command line holds {found[0]} {found[1]} (sandbox layer): refused, since a bind past it "
            "could put back what a private mount hid unseen"
        )
    if found is not None:
        dest, hidden = found
        raise SandboxError(
            f"the sandbox's bind of {dest} would put back {hidden}, which the run's plan hides behind a private "
            f"mount (sandbox layer): a bind may show a folder below what is hidden, never the hidden folder or one "
            f"above it. Keep {hidden} out of {dest}: AGENTBOX_HOME outside the workspace, a harness or an ACP "
            f"adapter installed with `agent-box harness install` or in a folder of its own"
        )
