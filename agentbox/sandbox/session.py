"""One sandboxed run from a plain-data entry: materialize its folder, start it, forward signals, clean up.

The entry is JSON (argv up to `--`, environment, private config files, project masks, the relay's
ports, the egress policy), so the hot paths (`sandbox run`, `launch` from its cache) import neither
pydantic nor YAML unless the run needs the egress proxy; `entry_from_plan` builds it from an
EffectiveRunPlan on the cold path. `harness_run`, `sandbox run` and `launch` all materialize, start
(`startup.Started`: the proxy, the relay, the filter) and clean up through here, so a fix lands once.

Every process of a run carries MARKER in its environment (bwrap passes its own environment on), so
leftovers are found and killed even when they left the run's session.
"""

from __future__ import annotations

import os
import sys
import time

from agentbox.sandbox.cover import check_covers
from agentbox.core.console import printable
from agentbox.egress.inside import LOG_NAME
from agentbox.hot import which
from agentbox.sandbox.host_guard import guard_folder

# signal.py is _signal with its numbers wrapped in enums, and enum alone costs ~3 ms a start (benchmarks/sandbox_run.py);
# the type checker knows the module by its public name
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
    from typing import TypeVar

    T = TypeVar("T")
else:
    import _signal as signal

__all__ = [
    "MARKER",
    "command_line",
    "parent_pid",
    "start_scoped",
    "RUN_DIR",
    "entry_from_plan",
    "writable_sources",
    "state_home",
    "refuse_writable_state",
    "make_backing",
    "write_config",
    "materialize",
    "environment",
    "sandbox_argv",
    "hide_state",
    "marked",
    "kill_marked",
    "run_attached",
    "cleanup",
    "for_the_user",
    "python_for_sandbox",
]

MARKER = "AGENTBOX_RUN_ID"
# a placeholder removed on the host while the run lasts is unmounted inside it too, and its name free to the run:
# what is there at the end may be the run's, whoever wrote it (host_executed.md)
KEPT_PLACEHOLDERS = (
    "kept the host-executed placeholders that were written, or removed on the host and made again, "
    "while the run lasted, which a host program may run, so review them"
)
# what the guard could not hold, as it did not exist at the start (host_executed.md, "a new repository")
# (no "; " in it: a cleanup note is its parts joined by that)
NEW_HOST_EXECUTED = (
    "the run left host-executed files where nothing held them, which a host program may run (git in "
    "that folder, an editor opening it), so review them before you do"
)
RUN_DIR = "{run_dir}"
# what every run is given of the launcher's environment, whatever the plan allows besides
BASE_ENV = ("PATH", "TERM", "LANG", "LC_ALL")
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH)


def entry_from_plan(plan, masks) -> dict:
    """The plain-data form of a compiled plan's sandbox half (cold path: imports the models)."""

    req = plan.native.requirements
    sandbox = plan.sandbox
    swapped = {c.variable for c in sandbox.credentials}  # these enter as placeholders, never as themselves
    return {
        "argv": list(plan.sandbox.argv),
        "env": dict(plan.sandbox.env),
        "env_allow": sorted({*BASE_ENV, *req.env_allow} - swapped),
        "masks": [[m.backing, m.surface.kind, m.surface.default_text] for m in masks],
        "config": {a.path: a.content for a in plan.native.artifacts},
        "relay": [list(m) for m in sandbox.relay],
        "egress": sandbox.egress.model_dump(mode="json") if sandbox.egress is not None else None,
        "unix_filter": sandbox.unix_filter,
        "seccomp": sandbox.syscall_filter,
        "landlock_scope": sandbox.abstract_unix_scope,
        "key_approvals": [a.model_dump(mode="json") for a in plan.native.key_approvals],
        "state_files": [s.model_dump(mode="json") for s in plan.native.state_files],
        "model_route": sandbox.model_route,
        "proxy_tcp": sandbox.proxy_tcp,
        "run_ca": sandbox.run_ca,
        "host_executed": sandbox.host_executed,
        "credentials": [c.model_dump(mode="json") for c in sandbox.credentials],
    }


def _filled(template, suffix: str):
    if isinstance(template, str):
        return template.replace("{key_suffix}", suffix)
    if isinstance(template, list):
        return [_filled(t, suffix) for t in template]
    if isinstance(template, dict):
        return {k: _filled(v, suffix) for k, v in template.items()}
    return template


def settle_key_approvals(entry: dict, run_dir: str, env: dict[str, str]) -> None:
    """Answer, in the run's private config, the harness's first-run question about a model key the profile
    names (`KeyApproval`); a key that is not set leaves the question to the harness."""
    if not entry.get("key_approvals"):
        return
    import json  # loads re and enum (~7 ms): a run without a key to approve never pays it (benchmarks/sandbox_run.py)

    for approval in entry.get("key_approvals", ()):
        value = env.get(approval["variable"])
        if not value:
            continue
        path = os.path.join(run_dir, "config", approval["file"])
        try:
            with open(path) as f:
                state = json.load(f)
        except FileNotFoundError:
            state = {}
        state[approval["key"]] = _filled(approval["template"], value[-approval["last"] :])
        with open(path, "w") as f:
            json.dump(state, f)


def make_backing(path: str, kind: str, default_text: str, home: str | None = None) -> None:
    """Create one private backing, blank, if it is missing; never copy anything from the host entry.

    A symlink anywhere on the way, or an existing entry of the other type, is refused: either would
    let the project decide what the mask shows or where the harness's writes land. So is one that Agent-Box
    did not write (`backings`: it came with a clone). `home`: AGENTBOX_HOME, where the digests are kept.
    """
    from agentbox.errors import SandboxError
    from agentbox.sandbox.backings import record, refuse_unrecorded

    home = home or state_home()

    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts)):
        parent = os.sep.join(parts[:i])
        if os.path.islink(parent):
            raise SandboxError(f"private backing path {parent} is a symlink; refusing")
    if os.path.islink(path):
        raise SandboxError(f"private backing {path} is a symlink; refusing")
    if os.path.lexists(path):
        if os.path.isdir(path) != (kind == "directory"):
            raise SandboxError(f"private backing {path} should be a {kind}")
        refuse_unrecorded(path, home, default_text)
        return
    try:
        if kind == "directory":
            os.makedirs(path)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "x") as f:  # "x": a file that appeared meanwhile is never overwritten
                f.write(default_text)
    except FileExistsError:  # another start of this project made it a moment ago: judged as any found one
        refuse_unrecorded(path, home, default_text)
        return
    record(path, home)


def write_config(files: dict[str, str], config_dir: str) -> list[str]:
    """Write the compiled native config into the private config home; return the paths written."""
    written = []
    for rel, content in files.items():
        dest = os.path.join(config_dir, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w") as f:
            f.write(content)
        written.append(dest)
    return written


def materialize(entry: dict, run_dir: str) -> list[str]:
    """The run folder (private config home, temp dir, relay dir) and every project mask's backing."""
    for sub in ("config", "tmp"):
        os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
    if entry.get("relay"):
        os.makedirs(os.path.join(run_dir, "relay"), exist_ok=True)  # bwrap binds it: it must exist
    if entry.get("run_ca"):
        os.makedirs(os.path.join(run_dir, "ca"), exist_ok=True)  # filled at the start, when the CA exists
    written = write_config(entry.get("config", {}), os.path.join(run_dir, "config"))
    for backing, kind, default_text in entry["masks"]:
        make_backing(backing, kind, default_text)
    return written


def environment(entry: dict, run_id: str | None = None, source=None, extra: dict | None = None) -> dict[str, str]:
    """What bwrap (and so the run) is given: the allowed host variables, then the plan's own."""
    source = os.environ if source is None else source
    env = {k: source[k] for k in entry["env_allow"] if k in source}
    env.update(extra or {})
    if run_id is not None:
        env[MARKER] = run_id
    env.update(entry["env"])
    return env


def writable_sources(argv: list[str], run_dir: str) -> list[str]:
    """The host folders a run can write through its binds (the source of each `--bind SRC DST`), the run's own
    folders aside (its config home: what is read back from there is filtered, `profile_state`)."""
    out = []
    for i, arg in enumerate(argv[:-2]):
        if arg == "--bind":
            src = argv[i + 1].replace(RUN_DIR, run_dir)
            if not _within(src, run_dir):
                out.append(os.path.realpath(src))
    return out


def _within(child: str, parent: str) -> bool:
    child, parent = os.path.realpath(child), os.path.realpath(parent)
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def state_home(env=None) -> str:
    """AGENTBOX_HOME as the launcher's environment `env` names it (default: this process's)."""
    from agentbox.hot import agentbox_home

    named = (env or {}).get("AGENTBOX_HOME")
    return os.path.abspath(os.path.expanduser(named)) if named else agentbox_home()


def refuse_writable_state(entry: dict, run_dir: str, env=None, guards: str | None = None) -> None:
    """Fail closed when anything Agent-Box trusts later lies where the run can write it: its run folder (the relay
    sockets, the egress decision log), AGENTBOX_HOME (caches with the sandbox's own argv, compiled seccomp programs,
    evidence, the run database, kept answers) and the entry's `trusted` paths (a launch's evidence store). A run
    that could rewrite them would decide what the next run, or the next gate, does. `env`: the launcher's
    environment (AGENTBOX_HOME), default this process's; `guards`: the record of held placeholders the run will use
    (`host_guard.guard_folder`, found here when not given). An entry with `trust_writable_state` (a control of the
    suite's, `agentbox.testing.weakened`) skips the check."""
    from agentbox.errors import SandboxError

    if entry.get("trust_writable_state"):
        return
    sources = writable_sources(entry["argv"], run_dir)
    if not sources:  # nothing the run writes: nothing to look up (the hot path of a read-only `sandbox run`)
        return
    home = state_home(env)

    paths = {
        "the run folder": (run_dir, "remove the writable bind over /tmp"),
        "AGENTBOX_HOME": (home, "set AGENTBOX_HOME to a folder outside it"),
        # what runs on the host at the next command: Agent-Box's own code and the Python that runs it
        "Agent-Box's own code": (_PACKAGE, "install Agent-Box outside it (pipx install agent-box)"),
        "the Python that runs Agent-Box": (sys.prefix, "install Agent-Box with a Python outside it (pipx)"),
        # bubblewrap as the run will find it on PATH: a wrapper there would drop every flag on the host
        "bubblewrap": (which("bwrap") or "", "install bubblewrap outside it (apt-get install bubblewrap)"),
        **{label: (path, "keep it outside the workspace") for label, path in entry.get("trusted", {}).items()},
    }
    if entry.get("host_executed"):
        # the record of which placeholders runs hold: a run that rewrote it would aim another run's end at host files
        paths["the record of held host-executed placeholders"] = (
            guards or guard_folder(),
            "set XDG_RUNTIME_DIR to a folder of yours outside it",
        )
    checks = [(label, path, fix) for label, (path, fix) in paths.items()]
    # where a later Python (Agent-Box's next start among them) looks for modules before the standard library's
    # own: a `json.py` the run left there is what it imports
    checks += [
        ("a folder on Python's import path", path, "take it off PYTHONPATH (or install what it holds outside it)")
        for path in _import_path(env)
    ]
    for label, path, fix in checks:
        if not path:
            continue
        links = _links_on_the_way(path)
        for src in sources:
            if _within(path, src) or any(_within(link, src) for link in links):
                raise SandboxError(
                    f"{label} {path} is inside {src}, which this run can write (sandbox layer): a process of the run "
                    f"could rewrite what Agent-Box reads back later; {fix}, or make that folder read-only in the "
                    f"profile"
                )


def _links_on_the_way(path: str) -> list[str]:
    """The folders holding a link on the way to `path` as written: a run that can write one of them can replace
    the link, and with it what `path` leads to, though `path` itself resolves outside what the run writes."""
    parts = os.path.abspath(path).split(os.sep)
    prefixes = (os.sep.join(parts[:i]) for i in range(2, len(parts) + 1))
    return [os.path.dirname(p) for p in prefixes if os.path.islink(p)]


def _import_path(env) -> list[str]:
    """This process's import path, the launcher's PYTHONPATH (an empty entry: the working folder), the user's site
    folder and the bytecode cache's, as absolute paths (the working folder `python -m` put first is already off it:
    agentbox/__init__.py)."""
    here = os.getcwd()
    env = env if env is not None else os.environ
    named = env.get("PYTHONPATH", "")
    # a relative entry of sys.path other than "" is a path hook's name (an editable install's finder), no folder
    entries = [p for p in sys.path if not p or os.path.isabs(p)] + (named.split(os.pathsep) if named else [])
    if not env.get("PYTHONNOUSERSITE"):
        # the user's site folder is on a later Python's path once it exists, and its .pth files run at every start:
        # whether it exists now or not
        base = env.get("PYTHONUSERBASE") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local")
        entries.append(os.path.join(base, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages"))
    # where bytecode is cached away from the sources: a .pyc there is run in place of its source
    entries += [p for p in (sys.pycache_prefix, env.get("PYTHONPYCACHEPREFIX")) if p]
    return [os.path.normpath(os.path.join(here, p)) for p in entries]  # "" and relative ones: the working folder's


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LANDLOCK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "landlock_scope.py")
# after the Python that runs it: the command line that enters the run's Landlock scope by exec (`sandbox_argv`),
# which `start_scoped` recognises and enters on a thread instead
_SCOPE = ["-I", "-S", _LANDLOCK]


def sandbox_argv(
    entry: dict,
    run_dir: str,
    seccomp_fd: int | None = None,
    guard: list[str] | tuple[str, ...] = (),
    state: str | None = None,
) -> list[str]:
    """`guard`: the options holding the workspace's host-executed paths (host_guard), mounted after every
    other: over the workspace's own bind, never under it. `state`: the launcher's AGENTBOX_HOME, hidden."""
    argv = [a.replace(RUN_DIR, run_dir) for a in entry["argv"]]
    argv[0] = which("bwrap") or argv[0]
    if state is not None and not entry.get("state_visible"):
        at, hide = state_mounts(argv, state)
        argv[at:at] = hide
    if guard:
        at = argv.index("--chdir") if "--chdir" in argv else len(argv)
        argv[at:at] = guard
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if not entry.get("trust_writable_state"):  # (a control of the suite's that sets Agent-Box's own state aside)
        check_covers(argv)  # every bind as bubblewrap will apply it: none may put back what a private mount hid
    if entry.get("landlock_scope") and _landlock():
        # bubblewrap starts inside the scope, so everything it starts is in it too
        argv = [sys.executable or python_for_sandbox(), *_SCOPE, *argv]
    return argv


def _landlock() -> bool:
    """Whether this kernel, as this process meets it, has the Landlock scope over abstract sockets: asked at each
    start, never cached with a plan. Without it the scope is left out, as a second wall may be (the unix-socket
    filter is the first)."""
    from agentbox.sandbox import landlock_scope  # ctypes: only a run that shares the host's network

    return landlock_scope.supported()


def hide_state(argv: list[str], state: str) -> list[str]:
    """The options that keep AGENTBOX_HOME out of the run's sight (`state_mounts`), for the end of `argv`."""
    return _state_options(argv, os.path.realpath(state), len(argv))


def state_mounts(argv: list[str], state: str) -> tuple[int, list[str]]:
    """Where in `argv`, and which, options keep AGENTBOX_HOME out of the run's sight wherever it lies (its home
    visible, or a folder such as /var/lib/agentbox): the host is read-only inside, but readable, and what Agent-Box
    keeps there is no run's to read (every profile's kept answers, the evidence and run records of other runs, the
    caches). Only its harness installs come back, read-only: the harness runs from there.

    They go right after the private /tmp, or after a bind that puts AGENTBOX_HOME back before the plan binds
    anything inside it (a visible home under /tmp, bound back over the private /tmp), so that the plan's own binds
    inside it (a harness's install) stay in view. Never after the workspace's bind: a workspace that holds
    AGENTBOX_HOME is refused by the bind check instead (`state-agentbox-home-in-read-only-workspace`). Where a private mount after them covers it anyway (a hidden
    home), only its own private mount is added, with nothing bound back: it marks AGENTBOX_HOME hidden for the bind
    check (`sandbox.cover`), which then refuses a later bind of a folder above it below the home (`~/.local`, an
    install prefix) that would put it back (red team). Nothing when it does not exist yet (bubblewrap could not
    mount over it on the read-only root)."""
    from agentbox.sandbox.cover import BINDS, holds, walk

    real = os.path.realpath(state)
    at = _after_private_tmp(argv)
    workspace = argv[argv.index("--chdir") + 1] if "--chdir" in argv else None
    for i, option, args in walk(argv):
        if i < at or option not in BINDS or args[1] == workspace:
            continue
        if _within(args[1], real) and not holds(args[1], real):
            break  # the plan's first bind inside it: its mounts go before this one
        if holds(args[1], real):
            at = i + 3
    return at, _state_options(argv, real, at)


def _state_options(argv: list[str], real: str, at: int) -> list[str]:
    """AGENTBOX_HOME's mounts placed at `at`: its private mount, and its harness installs bound back unless what
    follows covers it anyway (a marker then, for the bind check)."""
    from agentbox.sandbox.cover import BINDS, holds, walk

    if real == "/" or not os.path.isdir(real):
        return []
    hidden = False  # whether, after all of `argv` from `at` on (or before it, for the end), it lies hidden
    for i, option, args in walk(argv):
        if at < len(argv) and i < at:
            continue
        if option == "--tmpfs" and holds(args[0], real):
            hidden = True
        elif option in BINDS and holds(args[1], real):
            hidden = False
    out = ["--tmpfs", real]
    harnesses = os.path.join(real, "harnesses")
    if not hidden and os.path.isdir(harnesses):
        out += ["--ro-bind", harnesses, harnesses]
    return out


def _after_private_tmp(argv: list[str]) -> int:
    """Where the state's mounts go: right after the private /tmp, before every bind a plan names (which may lie
    inside AGENTBOX_HOME and must stay in view)."""
    for i in range(len(argv) - 1):
        if argv[i : i + 2] == ["--tmpfs", "/tmp"]:
            return i + 2
        if argv[i : i + 3] == ["--bind", "/tmp", "/tmp"]:
            return i + 3
    return min(len(argv), 4)


def python_for_sandbox() -> str:
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else which("python3") or "python3"


def marked(run_id: str) -> list[tuple[int, str]]:
    """(pid, command line) of every process carrying the run's marker."""
    needle = f"{MARKER}={run_id}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
        except OSError:
            continue
        cmdline = command_line(int(entry))
        if cmdline is not None:
            found.append((int(entry), cmdline))
    return found


def command_line(pid: int) -> str | None:
    """A process's command line, its arguments joined by spaces; None when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None


def kill_marked(run_id: str, grace: float = 0.0) -> list[tuple[int, str]]:
    """Kill every process still carrying the run's marker; return (pid, command line) of each.

    `grace`: first let the run's processes end on their own for up to that many seconds. bwrap returns
    as soon as the command exits, while the kernel is still ending the rest of its PID namespace, so a
    process found in that instant is not one that outlived the run; a process still there after the
    grace is."""
    found = marked(run_id)
    if grace and found:
        found = _still_running(found, grace)
    for pid, _ in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return found


def _still_running(found: list[tuple[int, str]], grace: float) -> list[tuple[int, str]]:
    """Those of `found` that have not exited after `grace` seconds (a pidfd is readable once its process exits)."""
    import select

    fds: dict[int, tuple[int, str]] = {}
    for pid, cmd in found:
        try:
            fds[os.pidfd_open(pid)] = (pid, cmd)
        except (ProcessLookupError, OSError):
            continue  # already gone
    try:
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        deadline, waiting = time.monotonic() + grace, set(fds)
        while waiting and (left := deadline - time.monotonic()) > 0:
            for fd, _ in poller.poll(left * 1000):
                waiting.discard(fd)
                poller.unregister(fd)
        return [fds[fd] for fd in waiting]
    finally:
        for fd in fds:
            os.close(fd)


def parent_pid(pid: int) -> int | None:
    """A process's parent, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def run_attached(argv: list[str], env: dict[str, str], run_id: str, pass_fds: tuple[int, ...] = ()) -> int:
    """Run argv with the terminal attached and return its exit status (128+N when killed by signal N).

    bwrap gets its own process group, so a Ctrl-C typed at the terminal reaches only this process,
    which hands it to the sandboxed processes themselves: bwrap would die of it and take the harness
    down with SIGKILL, leaving it no chance to finish its turn or save its session. The harness runs
    in a new session (bwrap --new-session), so resizes are forwarded too. A terminal is never the run's own:
    it gets a pseudo-terminal of its own, relayed (`sandbox.terminal`). posix_spawn, not
    subprocess: a launch's whole overhead is counted against the harness's own start-up.
    """

    def forward(signum, frame):
        if signum == signal.SIGWINCH and relay is not None:
            relay.resize()
        # bwrap and its pid-1 init would die of (or ignore) the signal: send it past them
        inside = [p for p, _ in marked(run_id) if p != pid and parent_pid(p) != pid]
        for target in inside or ([] if signum == signal.SIGWINCH else [pid]):
            try:
                os.kill(target, signum)
            except ProcessLookupError:
                pass

    relay = _relay(lambda signum: forward(signum, None))
    pid = _spawn_relayed(relay, argv, env, pass_fds, setpgroup=0)
    return _wait(pid, relay, forward, _FORWARDED, lambda code: 128 - code if code < 0 else code)


def run_forwarding(argv: list[str], env: dict[str, str], pass_fds: tuple[int, ...] = ()) -> int:
    """Run argv (`sandbox run`'s command line), handing it SIGINT, SIGTERM and SIGHUP, and return its exit status
    as subprocess gives it (-N when killed by signal N). A terminal is never the run's own (`sandbox.terminal`)."""

    def forward(signum, frame):
        if signum == signal.SIGWINCH:
            if relay is not None:
                relay.resize()
            return
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    relay = _relay(lambda signum: forward(signum, None))
    pid = _spawn_relayed(relay, argv, env, pass_fds)
    return _wait(pid, relay, forward, _FORWARDED, lambda code: code)


def _relay(on_signal):
    """The run's own pseudo-terminal when this process's stdio holds a terminal, else None."""
    if not any(os.isatty(fd) for fd in (0, 1, 2)):
        return None
    # deferred: termios, tty, select and a thread only for a run on a terminal (benchmarks/launch.py's is not)
    from agentbox.sandbox.terminal import Relay, attached_ttys

    return Relay(attached_ttys(), on_signal)


def _spawn_relayed(relay, argv: list[str], env: dict[str, str], pass_fds: tuple[int, ...], **options) -> int:
    if relay is None:
        return spawn(argv, env, pass_fds, **options)
    try:
        return spawn(argv, env, pass_fds, file_actions=relay.file_actions(), **options)
    except BaseException:
        relay.stop()
        raise


def _wait(pid: int, relay, forward, signals, status) -> int:
    previous = {s: signal.signal(s, forward) for s in signals}
    try:
        if relay is not None:
            relay.start()
        _, waited = os.waitpid(pid, 0)  # retried after each forwarded signal (PEP 475)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        if relay is not None:
            relay.stop()
    return status(os.waitstatus_to_exitcode(waited))


def start_scoped(argv: list[str], start: Callable[[list[str]], T]) -> T:
    """`start(argv)`, or, when argv is the command line that applies the run's Landlock scope by exec
    (`sandbox_argv`), `start` of the rest of it from a thread in that scope (`landlock_scope.in_scope`): the same
    scope over the same processes, without the start of a second Python (~10 ms, benchmarks/sandbox_run.py)."""
    if argv[1 : 1 + len(_SCOPE)] != _SCOPE:
        return start(argv)
    from agentbox.sandbox.landlock_scope import in_scope  # ctypes: only a run that shares the host's network

    return in_scope(lambda: start(argv[1 + len(_SCOPE) :]))


def spawn(argv: list[str], env: dict[str, str], pass_fds: tuple[int, ...] = (), **options) -> int:
    """Start argv as subprocess.Popen(close_fds=True, pass_fds=...) would, and return its pid. posix_spawn, not
    subprocess: importing subprocess costs ~4 ms of the measured hot paths (benchmarks/sandbox_run.py,
    benchmarks/launch.py). FileNotFoundError when argv[0] is not found on PATH."""
    return start_scoped(argv, lambda a: _spawn(a, env, pass_fds, **options))


def _spawn(argv: list[str], env: dict[str, str], pass_fds: tuple[int, ...], **options) -> int:
    path = argv[0] if "/" in argv[0] else which(argv[0])
    if path is None:
        raise FileNotFoundError(f"{argv[0]} not found on PATH")
    _close_inherited()
    for fd in pass_fds:
        os.set_inheritable(fd, True)
    # like subprocess: default SIGPIPE/SIGXFSZ in the child (Python ignores them in itself)
    return os.posix_spawn(path, argv, env, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ), **options)


def _close_inherited() -> None:
    """Keep every descriptor past stderr out of the child, as subprocess's close_fds does: bwrap passes
    inherited descriptors on, and one the caller left open could reach a host file or socket."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            try:
                os.set_inheritable(fd, False)
            except OSError:  # the listing's own descriptor, closed by now
                pass


def _rmtree(path: str) -> None:
    """shutil.rmtree(path, ignore_errors=True) without importing shutil; never follows a symlink."""
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            _quiet(os.unlink, os.path.join(root, name))
        for name in dirs:
            full = os.path.join(root, name)
            _quiet(os.unlink if os.path.islink(full) else os.rmdir, full)
    _quiet(os.rmdir, path)


def _quiet(fn, path: str) -> None:
    try:
        fn(path)
    except OSError:
        pass


def shown(text: str) -> str:
    """A name the run chose (a path it left, a process's command line) as a note may hold it: escaped as
    `console.printable` does, with the notes' separator `;` too, so that it is printed and stored as seen."""
    return printable(text, keep="", escape=";")


def for_the_user(note: str) -> list[str]:
    """The parts of a cleanup note that are the user's to judge (what a host program wrote in a placeholder,
    what the run left where nothing held it), to print after an attached run."""
    return [line for line in note.split("; ") if line.startswith((KEPT_PLACEHOLDERS, NEW_HOST_EXECUTED))]


def cleanup(
    run_id: str, run_dir: str | None, started=None, keep_run_dir: bool = False, egress_copy: str | None = None
) -> str:
    """Stop the egress proxy (`started`: a startup.Started), kill leftovers, keep a copy of the decision log if
    asked, remove the run folder; say what was done ("clean" when nothing was left)."""
    notes = list(started.notes) if started is not None else []
    if started is not None:
        started.close()
    leftovers = kill_marked(run_id)
    if leftovers:
        notes.append(
            f"killed {len(leftovers)} leftover process(es): "
            + ", ".join(f"{pid} {shown(cmd[:80])}" for pid, cmd in leftovers)
        )
    # only once no process of the run is left: a placeholder removed on the host is unmounted inside too
    left, fresh = started.release_guard() if started is not None else ([], [])
    if left:
        notes.append(f"{KEPT_PLACEHOLDERS}: {', '.join(map(shown, left))}")
    if fresh:
        notes.append(f"{NEW_HOST_EXECUTED}: {', '.join(map(shown, fresh))}")
    if run_dir and egress_copy:
        copy_decisions(run_dir, egress_copy, notes)
    if run_dir and not keep_run_dir:
        _rmtree(run_dir)
        if os.path.exists(run_dir):
            notes.append(f"could not remove {run_dir}")
    return "; ".join(notes) or "clean"


def copy_decisions(run_dir: str, dest: str, notes: list[str]) -> None:
    """Keep the run's decision log at `dest` (the run folder goes at cleanup); a failure becomes a note."""
    try:
        with open(os.path.join(run_dir, LOG_NAME), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return  # the run had no proxy
    except OSError as exc:
        notes.append(f"could not read the egress log: {exc}")
        return
    try:
        os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
        # never through a link: the destination may lie in a folder the run could write, and a link it left there
        # would have this (host) process overwrite whatever it names
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError as exc:
        notes.append(f"could not keep the egress log at {dest}: {exc}")
