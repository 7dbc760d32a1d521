"""bubblewrap backend: runtime requirements in, a bwrap argv out.

The host file system is visible read-only; /tmp is private; the home is private when hidden; the
workspace is bound as the intent says; existing project config surfaces are masked read-only by the
profile's private backing. The environment is passed to bwrap itself (never as --setenv), so no
value ever appears in an argv that other host processes can read.

Network `none` and `restricted` unshare the network namespace: the only ways out are the unix
sockets of the run's relay folder, served on the host by the egress proxy (its policy is part of the
plan), and every process is refused new unix sockets (the unix-socket filter), so no other socket
the host listens on can be reached either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from agentbox.sandbox.cover import check_covers
from agentbox.core.capability import TRIVIAL, Declarations, capability_id, load_declarations
from agentbox.egress import inside
from agentbox.egress.policy import EgressPolicy, policy_for
from agentbox.errors import SandboxError
from agentbox.core.paths import is_within
from agentbox.core.plan import (
    SANDBOX_CONFIG_HOME,
    SANDBOX_TMPDIR,
    Credential,
    LayerCoverage,
    RuntimeRequirements,
    SandboxPlan,
)
from agentbox.sandbox import unix_filter
from agentbox.sandbox.backend import LockedDownCommand, SandboxRequest
from agentbox.sandbox.relay import RELAY_DIR
from agentbox.sandbox.session import BASE_ENV, hide_state, state_home
from agentbox.sandbox.syscall_filter import host_program_path

__all__ = [
    "SandboxRequest",
    "compile_bwrap",
    "coverage",
    "bwrap_binary",
    "hidden_paths",
    "hidden_roots",
    "BASE_ENV",
    "backend_version",
    "unshares_net",
    "USER_NAMESPACES",
    "egress_policy",
    "relay_ports",
    "enforced_items",
    "sandbox_env_names",
    "model_route_url",
    "locked_down_command",
    "BACKEND",
]

RUN_DIR = "{run_dir}"
# Processes of a run may not create user namespaces (--disable-userns, and the seccomp denylist).
USER_NAMESPACES = False
# Names every run keeps; everything else must be allowed by environment.allow.


def unshares_net(req: RuntimeRequirements) -> bool:
    """`none` and `restricted`: the whole process tree in its own network namespace, the proxy the only way out."""
    return req.network != "unrestricted"


def egress_policy(req: RuntimeRequirements) -> EgressPolicy | None:
    """The egress proxy's policy, or None when the run needs no proxy (no model, and a shared network or none).

    A shared network (unrestricted) needs no proxy for its own traffic, but its model still goes through the
    model route, so that the model key stays out of the sandbox whatever the intent."""
    if not unshares_net(req):
        return policy_for("none", req.model_endpoint, model_tls=req.model_tls) if req.model_endpoint else None
    if req.network == "none" and not req.model_endpoint:
        return None
    return policy_for(req.network, req.model_endpoint, req.allow_domains, model_tls=req.model_tls)


def _loopback_model_port(policy: EgressPolicy) -> int | None:
    """The model's port when the harness reaches it on loopback (a relay port inside, a route on the host)."""
    me = policy.model_endpoint
    if me is None:
        return None
    return me.port if me.host in ("localhost", "::1") or me.host.startswith("127.") else None


def _model_route_port(policy: EgressPolicy) -> int | None:
    """The model route's loopback port inside an unshared network: a loopback model's own port (its base URL
    stays as the profile wrote it), else a fixed one that no other route takes."""
    if policy.model_endpoint is None:
        return None
    port = _loopback_model_port(policy)
    if port is not None:
        return port
    return inside.free_port(inside.MODEL_ROUTE_PORT, {e.port for e in policy.loopback_routes()})


def model_route_url(req: RuntimeRequirements, base_url: str | None) -> str | None:
    """The base URL a harness inside the sandbox uses for its model: the model route on loopback, with the
    profile's path (the route forwards to the real endpoint, over TLS for https). None without a base URL."""
    if not base_url or not req.model_endpoint:
        return None
    from urllib.parse import urlsplit

    policy = egress_policy(req)
    assert policy is not None  # req.model_endpoint is set: the run has a proxy, for its model route
    port = _model_route_port(policy) if unshares_net(req) else inside.MODEL_PORT_TOKEN
    parts = urlsplit(base_url)
    tail = parts.path + (f"?{parts.query}" if parts.query else "")
    return f"http://127.0.0.1:{port}{tail}"


def relay_ports(policy: EgressPolicy | None) -> tuple[tuple[int, str], ...]:
    """The inner relay's (port, socket) mappings: the model route, a route per allowed loopback port of the host
    (clients reach `localhost:PORT` directly, NO_PROXY, so the same port must answer inside), then the proxy."""
    if policy is None:
        return ()
    model_port = _model_route_port(policy)
    ports = [(model_port, inside.MODEL_SOCKET)] if model_port is not None else []
    ports += [(e.port, inside.loopback_socket(e.port)) for e in policy.loopback_routes() if e.port != model_port]
    return (*ports, (inside.proxy_port({p for p, _ in ports}), inside.SOCKET_NAME))


def hidden_paths(request: SandboxRequest) -> tuple[str, ...]:
    """Host paths the sandbox covers with private mounts."""
    return hidden_roots(request.requirements, request.home)


def hidden_roots(req: RuntimeRequirements, home: str) -> tuple[str, ...]:
    return ("/tmp", home) if req.host_home == "hidden" else ("/tmp",)


def _check(request: SandboxRequest) -> None:
    ws, home = request.workspace, request.home
    if not os.path.isabs(ws):
        raise SandboxError(f"workspace {ws} must be an absolute path")
    # judged where the kernel leads them, not by their spelling: bubblewrap mounts at the real folder, and a HOME
    # spelled `//home/u` or reached through a link is the same home to it (pathlib and is_within keep `//` apart)
    ws, home = os.path.realpath(ws), os.path.realpath(home)
    if ws == "/":
        raise SandboxError("workspace / would expose the whole host file system")
    if is_within(ws, "/tmp/agentbox"):
        raise SandboxError(f"workspace {ws} would be hidden by the sandbox's private /tmp/agentbox")
    if ws == "/tmp":
        raise SandboxError(
            "workspace /tmp would expose the host's /tmp, where every run keeps its own folder (its "
            "relay sockets and config): use a folder of its own, such as /tmp/project"
        )
    if request.requirements.host_home == "hidden" and is_within(home, ws):
        spelled = "" if home == request.home else f" (HOME is {request.home})"
        raise SandboxError(
            f"workspace {ws} contains the host home {home}{spelled}, which host_home: hidden must hide (sandbox "
            "layer): the workspace's bind would uncover it; choose a workspace that does not hold the home"
        )
    for path in (*request.ro_binds, *request.rw_binds):
        if not os.path.isabs(path):
            raise SandboxError(f"bind path {path} must be absolute")


def compile_bwrap(request: SandboxRequest) -> SandboxPlan:
    """Pure: the argv up to `--`, with {run_dir} standing for the run's host folder."""
    _check(request)
    req = request.requirements
    ws = request.workspace
    # /proc is read-only: inside, uid 0 is the host's uid 0 (the run's user namespace maps it to itself), and the
    # kernel lets a file's owner write most of /proc by uid alone, with no capability: /proc/sys (host sysctls,
    # core_pattern and with it a program the host kernel runs as root), /proc/sysrq-trigger, and /proc/<pid>/mem of
    # every process of the same uid (bubblewrap's own pid 1 among them, which no seccomp filter covers). bubblewrap
    # covers only /proc's folders it finds writable, and /proc/sys is mode 0555, so it covers none of those files.
    argv: list[str] = ["bwrap", *_READ_ONLY_ROOT]
    binds: list[tuple[str, str, str]] = []

    def bind(mode: str, src: str, dst: str) -> None:
        argv.extend([f"--{mode}", src, dst])
        binds.append((mode, src, dst))

    if req.host_home == "hidden":
        argv.extend(["--tmpfs", request.home])
    elif is_within(os.path.realpath(request.home), "/tmp"):
        bind("ro-bind", request.home, request.home)  # a visible home must survive the private /tmp
    # bound back where a hidden folder covers it by its spelling or by where it leads (either hides it)
    hidden = {x for h in hidden_paths(request) for x in (h, os.path.realpath(h))}
    for path in request.ro_binds:
        if any(is_within(p, h) for p in (path, os.path.realpath(path)) for h in hidden):
            bind("ro-bind", path, path)
    for path in request.rw_binds:
        bind("bind", path, path)
    argv.extend(["--dir", "/tmp/agentbox", "--dir", SANDBOX_TMPDIR])
    bind("bind", f"{RUN_DIR}/config", SANDBOX_CONFIG_HOME)
    for rel in request.config_files:
        # the harness (and every command it runs) may write its config home, never its own policy
        bind("ro-bind", f"{RUN_DIR}/config/{rel}", f"{SANDBOX_CONFIG_HOME}/{rel}")
    if req.workspace == "read_write":
        bind("bind", ws, ws)
    elif req.workspace == "read_only":
        bind("ro-bind", ws, ws)
    else:
        argv.extend(["--tmpfs", ws])
    if req.workspace != "none":
        for mask in request.masks:
            bind("ro-bind", mask.backing, mask.target)
        # the backings themselves stay out of reach, in every layer that has them
        layers = {m.layer for m in request.masks} | ({ws} if os.path.isdir(os.path.join(ws, ".agentbox")) else set())
        for layer in sorted(layers):
            argv.extend(["--tmpfs", os.path.join(layer, ".agentbox")])
    policy = egress_policy(req)
    _check_credentials(request.credentials, req, policy)
    # a shared network needs the proxy only where a secret is bound to a host: there it lets every host through,
    # and swaps the secret in towards its own
    proxy_tcp = not unshares_net(req) and any(c.hosts for c in request.credentials)
    if proxy_tcp:
        policy = (policy or EgressPolicy()).model_copy(update={"allow_all": True, "allow_internal_addresses": True})
    if policy is not None and not unshares_net(req):
        # the run shares the host's loopback: the proxy checks who answers there before it sends a credential
        policy = policy.model_copy(update={"shared_loopback": True})
    relay = relay_ports(policy) if unshares_net(req) else ()
    low = [(port, name) for port, name in relay if port < 1024]
    if low:
        what = "the model endpoint's" if low[0][1] == inside.MODEL_SOCKET else "the allowed (allow_domains)"
        raise SandboxError(
            f"{what} loopback port {low[0][0]} is below 1024: the run holds no capability, so its "
            "relay cannot listen there inside the sandbox; serve it on a port >= 1024"
        )
    if relay:
        # read-only: the relay dials the socket paths in this folder on every connection, so a run that could
        # replace one (with a link to a host socket) would aim the relay, which holds its unix sockets, anywhere
        bind("ro-bind", f"{RUN_DIR}/relay", RELAY_DIR)
    run_ca = any(c.hosts for c in request.credentials)
    if run_ca:
        bind("ro-bind", f"{RUN_DIR}/ca", inside.CA_DIR)
    if unshares_net(req):
        argv.append("--unshare-net")
    # The host's own agents listen under /run (docker, containerd, podman, the D-Bus buses, systemd's private
    # socket; /var/run is a link to it): a process that can reach one acts with the host's authority, whatever
    # the network setting, so /run is private in every run. Only the resolver file a shared network needs is
    # bound back when it lives there (systemd-resolved's stub).
    argv.extend(["--tmpfs", "/run"])
    if not unshares_net(req):
        for path in _run_resolver_files():
            bind("ro-bind", path, path)
    # Least privilege (the same whoever starts Agent-Box, root included): the run gets its own user namespace,
    # keeps no capability in it, and may not create another one (a nested namespace would hand back
    # CAP_SYS_ADMIN over new mounts); the seccomp denylist refuses the same family of calls again.
    argv.extend(["--unshare-user", "--disable-userns", "--cap-drop", "ALL"])
    argv.extend(["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"])
    argv.extend(["--chdir", ws])
    check_covers(argv)  # refused at compile already: `sandbox_argv` checks the started command line again
    env = {"HOME": request.home, "TMPDIR": SANDBOX_TMPDIR, **req.env_set, **request.extra_env}
    if relay:
        env.update(inside.proxy_env(relay[-1][0]))
    elif proxy_tcp:
        env.update(inside.proxy_env(inside.PROXY_PORT_TOKEN))
    if run_ca:
        env.update(inside.trust_env())
    return SandboxPlan(
        backend="bwrap",
        argv=tuple(argv),
        env=dict(sorted(env.items())),
        binds=tuple(binds),
        # every run, whatever its network: a host socket is reachable by path from a shared network
        # namespace too, and none of them can be hidden wherever it lives (/var/tmp, a home, a project)
        relay=relay,
        egress=policy,
        unix_filter=unix_filter.supported(),
        syscall_filter=True,
        # a network namespace of its own has its own abstract sockets; a shared one has the host's. Wanted here,
        # entered at the start where the kernel has it (`session.sandbox_argv`): a plan is cached and reused, and
        # one compiled where Landlock was out of reach (a container, a parent's syscall filter) would otherwise
        # leave the scope out of every later run (red team)
        abstract_unix_scope=not unshares_net(req),
        host_executed=host_executed_spec(request),
        model_route=None if policy is None or policy.model_endpoint is None else "relay" if relay else "tcp",
        proxy_tcp=proxy_tcp,
        run_ca=run_ca,
        credentials=tuple(c for c in request.credentials if not c.model or policy is not None),
    )


def _check_credentials(
    credentials: tuple[Credential, ...], req: RuntimeRequirements, policy: EgressPolicy | None
) -> None:
    """Fail closed: a secret bound to a host the network policy does not let through could never be swapped in,
    and a plan that says otherwise would be a lie."""
    from agentbox.egress.policy import parse_entry

    for cred in credentials:
        for text in cred.hosts:
            if req.network == "unrestricted":
                continue
            entry = parse_entry(text)
            allowed = policy is not None and all(
                policy.decide(f"x.{entry.host}" if entry.wildcard else entry.host, port).allowed for port in entry.ports
            )
            if entry.wildcard and allowed:
                assert policy is not None  # `allowed` says there is one
                allowed = any(
                    a.wildcard and (entry.host == a.host or entry.host.endswith("." + a.host))
                    for a in map(parse_entry, policy.allow_domains)
                )
            if not allowed:
                allowed_text = ", ".join(req.allow_domains) or "nothing"
                raise SandboxError(
                    f"{cred.source}: bound host {text} is not allowed by command_network ({req.network}, allowing "
                    f"{allowed_text}), and the egress proxy (sandbox layer) swaps a secret in only on requests it "
                    f"lets through; add {text} to allow_domains or remove the binding"
                )


def _run_resolver_files() -> tuple[str, ...]:
    """The files under /run that name resolution reads (resolv.conf as a link into /run), to bind back."""
    out = []
    for name in ("/etc/resolv.conf",):
        real = os.path.realpath(name)
        if real != name and is_within(real, "/run") and os.path.isfile(real):
            out.append(real)
    return tuple(out)


def _network_mechanism(req: RuntimeRequirements) -> str:
    if not unshares_net(req):
        return "shared network namespace"
    policy = egress_policy(req)
    if policy is None:
        allowed = "no egress proxy: nothing leaves"
    else:
        model = [f"the model endpoint {policy.model_endpoint}"] if policy.model_endpoint else []
        allowed = "egress proxy allows only " + ", ".join([*model, *policy.allow_domains])
    return f"--unshare-net; {allowed}; new unix sockets refused (seccomp)"


def coverage(request: SandboxRequest, version: str | None) -> dict[str, LayerCoverage]:
    """What this backend, at `version`, enforces for each intent item of the request (a version outside the
    tested range, or an unknown one, is never exact)."""
    decl = load_declarations("bwrap")
    req = request.requirements
    values = {
        "workspace": {"access": req.workspace},
        "shell": None,
        "command_network": {"access": req.network},
        "mcp": {},
        "host_home": {"access": req.host_home},
        "environment": {},
        "host_executed": {"access": req.host_executed},
    }
    mechanisms = {
        "workspace": {
            "none": "workspace hidden by tmpfs",
            "read_only": "--ro-bind workspace",
            "read_write": "--bind workspace, read-only host, private /tmp",
        }[req.workspace],
        "command_network": _network_mechanism(req),
        "host_home": "--tmpfs over the home" if req.host_home == "hidden" else "home visible read-only",
        "environment": _environment_mechanism(request),
        "mcp": "none",
        "host_executed": _host_executed_mechanism(req),
    }
    out: dict[str, LayerCoverage] = {}
    for item, value in values.items():
        if value is None:
            out[item] = LayerCoverage(
                layer="sandbox",
                support="unsupported",
                mechanism="none",
                reason="the OS sandbox cannot restrict a harness's shell tool",
            )
            continue
        report = decl.report(capability_id(item, value), version)
        cov = LayerCoverage(
            layer="sandbox",
            support=report.support,
            mechanism=mechanisms[item],
            enforcement_scope=report.enforcement_scope,
            bypass_surfaces=report.bypass_surfaces,
            reason=report.reason,
        )
        if item == "command_network" and unshares_net(req) and not unix_filter.supported():
            cov = cov.model_copy(
                update={
                    "support": "partial" if cov.support == "exact" else cov.support,
                    "bypass_surfaces": ("unix_socket",),
                    "reason": "no unix-socket filter for this architecture: a unix socket the host listens on stays "
                    "reachable",
                }
            )
        out[item] = cov
    return out


def _environment_mechanism(request: SandboxRequest) -> str:
    swapped = {c.variable for c in request.credentials}
    passed = [n for n in (*BASE_ENV, *request.requirements.env_allow) if n not in swapped]
    text = "clean environment: " + ", ".join(passed)
    if swapped:
        text += (
            "; per-run placeholders for " + ", ".join(sorted(swapped)) + " (the egress proxy swaps the real values in)"
        )
    return text


def _host_executed_mechanism(req: RuntimeRequirements) -> str:
    if req.workspace != "read_write":
        return f"nothing of the workspace is writable ({req.workspace})"
    if req.host_executed == "writable":
        return "none (the profile lets the run write them)"
    freed = f"; writable by the profile's name: {', '.join(req.host_writable)}" if req.host_writable else ""
    return (
        "at each start, --ro-bind over each host-executed path of the workspace and each folder of the "
        "launcher's PATH in it, --bind over the folders above a nested one, an empty read-only placeholder where "
        f"one is absent at the root; a relative PATH entry refuses the run{freed}"
    )


_HOST_EXECUTED = Path(__file__).parent.parent / "data" / "host_executed.yaml"


@lru_cache(maxsize=None)
def _host_executed_names() -> dict:
    import yaml

    raw = yaml.safe_load(_HOST_EXECUTED.read_text())
    files = {}
    for item in raw["anywhere"]["files"]:
        name, text = next(iter(item.items())) if isinstance(item, dict) else (item, "")
        files[name] = text or ""
    return {
        "files": files,
        "directories": list(raw["anywhere"]["directories"]),
        "home_files": list(raw["home"]["files"]),
        "home_directories": list(raw["home"]["directories"]),
        "skip": list(raw["skip"]),
        "depth": int(raw["depth"]),
        "git_depth": int(raw["git_depth"]),
    }


def host_executed_spec(request: SandboxRequest) -> dict | None:
    """What each run's start holds of the workspace (agentbox.sandbox.host_guard), or None when nothing needs it."""
    req = request.requirements
    if req.workspace != "read_write" or req.host_executed != "protected":
        return None
    return {
        "workspace": request.workspace,
        "home": request.home,
        "writable": list(req.host_writable),
        **_host_executed_names(),
    }


def enforced_items(req: RuntimeRequirements) -> tuple[str, ...]:
    """The intent items this backend enforces exactly for every process of a run (what an adapter may rely on);
    an item that restricts nothing (an unrestricted network, a visible home) is not among them."""
    request = SandboxRequest(requirements=req, workspace="/", home="/")  # coverage reads only the requirements
    values = {
        "workspace": req.workspace,
        "command_network": req.network,
        "host_home": req.host_home,
        "host_executed": req.host_executed,
    }
    # what the mechanism does, whatever the installed version's claims: the tested range speaks to evidence
    tested = load_declarations("bwrap").tested_range.get("max")
    return tuple(
        item
        for item, cov in coverage(request, tested).items()
        if cov.support == "exact" and f"{item}.{values.get(item)}" not in TRIVIAL
    )


def sandbox_env_names(req: RuntimeRequirements, bound_secrets: bool = False) -> tuple[str, ...]:
    """The variables this backend may give every process of the run, which its harness must pass on: the proxy's,
    and, where a secret is bound to a host, those that make clients trust the run's CA."""
    names = set(inside.proxy_env(0)) if unshares_net(req) or bound_secrets else set()
    return tuple(sorted(names | (set(inside.trust_env()) if bound_secrets else set())))


@lru_cache(maxsize=None)
def backend_version() -> str | None:
    """The installed bubblewrap's version ("0.8.0"), or None when it cannot be asked."""
    try:
        out = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, timeout=10).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out[-1] if out else None


def bwrap_binary() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxError("bubblewrap is not installed (bwrap not on PATH): apt-get install bubblewrap")
    return path


# the folder that holds the `agentbox` package: a command started from this interpreter imports it from there
_SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the loader of the seccomp program that a locked-down command starts under, run by path
_UNIX_FILTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unix_filter.py")
# what every sandbox starts from, a run's and the MCP inventory's: the host read-only, its own /dev, a /proc it
# cannot write, an empty /tmp
_READ_ONLY_ROOT = (
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--remount-ro",
    "/proc",
    "--tmpfs",
    "/tmp",
)


def locked_down_command(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    home: str | None = None,
    bind_back: Callable[[tuple[str, ...]], Iterable[str]] | None = None,
    hide: Sequence[str] = (),
) -> LockedDownCommand:
    """`command args` in a locked-down bubblewrap (host read-only, /proc read-only, private /tmp and /run, `home`
    hidden unless None and AGENTBOX_HOME always, no network, its own user namespace with no capability, and the
    run's seccomp denylist with new unix sockets refused), for a command started on the host outside any run (an
    MCP server asked for its tools): it may be a file a run could have rewritten, and what it answers may come
    back into a run's config. `bind_back`: given the hidden folders, those below them it needs (its install);
    `hide`: folders hidden besides, nothing below them bound back (the project of a run without a workspace)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError(
            "bubblewrap is not installed (bwrap not on PATH), and the server is never started "
            "outside it: apt-get install bubblewrap"
        )
    # Folders a server expects under /tmp exist again, empty, on the private /tmp: what it writes
    # there at start-up (a log, a marker) never reaches the host.
    # Elsewhere, a file the server would create (an absolute argument that does not exist yet) gets
    # an empty private folder in place of its parent.
    dirs = sorted({os.path.dirname(a) for a in args if a.startswith("/tmp/") and os.path.dirname(a) != "/tmp"})
    made = [x for d in dirs for x in ("--dir", d)]
    fresh = sorted(
        {
            os.path.dirname(a)
            for a in args
            if os.path.isabs(a)
            and not a.startswith("/tmp/")
            and not os.path.exists(a)
            and os.path.isdir(os.path.dirname(a))
            and os.path.dirname(a) != "/"
        }
    )
    made += [x for d in fresh for x in ("--tmpfs", d)]
    # What the server reads here it may hand back in its tool names, which the compile writes into the run's
    # config: so it sees no more than the run will, the home hidden when the profile hides it, and never
    # AGENTBOX_HOME (every profile's kept answers).
    # Judged where they lead, not by their spelling (`//home/u`, a link), as bubblewrap mounts them.
    hidden = ("/tmp", *((os.path.realpath(home),) if home and os.path.realpath(home) != "/" else ()))
    # The project, where the run has no workspace (its tmpfs): nothing below it is bound back, as the run binds
    # nothing back there either (a `python -m` server's sys.path holds the current folder).
    project = tuple(r for r in dict.fromkeys(map(os.path.realpath, hide)) if r != "/")
    covered = (*hidden, *project)

    def back(path: str) -> bool:
        real = os.path.realpath(path)
        return any(is_within(real, h) for h in hidden) and real not in covered and not _below(real, project)

    # A server started from this interpreter (`python -m ...`) must still find its packages when they
    # live under a hidden folder (an editable install in a temporary checkout, a PYTHONPATH entry).
    keep = sorted({p for p in (*sys.path, _SOURCE_ROOT) if os.path.isdir(p) and back(p)})
    # the server's own install, when it lies in a hidden folder, as the run's sandbox binds it
    keep += [d for d in (bind_back(hidden) if bind_back else ()) if d not in keep and not _below(d, project)]
    made += [x for d in keep for x in ("--ro-bind", d, d)]
    # the seccomp program is loaded inside, by path (the MCP client cannot hand bwrap a descriptor), from the cache
    # under AGENTBOX_HOME, bound read-only wherever it lies
    program = host_program_path(deny_unix=True)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    base = [*_READ_ONLY_ROOT, *(x for h in (*hidden[1:], *project) for x in ("--tmpfs", h))]
    base += hide_state(base, state_home())
    argv = [
        bwrap,
        *base,
        "--tmpfs",
        "/run",
        *made,
        "--ro-bind",
        program,
        program,
        "--ro-bind",
        _UNIX_FILTER,
        _UNIX_FILTER,
        "--unshare-user",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
        "--",
        python,
        "-I",
        "-S",
        _UNIX_FILTER,
        program,
        "--",
        command,
        *args,
    ]
    check_covers(argv)  # a search-path folder bound back must not be the home or a folder above it
    # bubblewrap hands its own environment on to the command
    return LockedDownCommand(argv=tuple(argv), env=dict(env))


def _below(path: str, folders: Sequence[str]) -> bool:
    """Whether `path` lies in one of `folders`, by where it leads."""
    real = os.path.realpath(path)
    return any(is_within(real, f) for f in folders)


class BwrapBackend:
    """bubblewrap as a SandboxBackend (agentbox.sandbox.backend): this module's functions, by the contract's names."""

    name = "bwrap"
    user_namespaces = USER_NAMESPACES

    @property
    def declarations(self) -> Declarations:
        return load_declarations(self.name)

    def backend_version(self) -> str | None:
        return backend_version()

    def binary(self) -> str:
        return bwrap_binary()

    def hidden_roots(self, req: RuntimeRequirements, home: str) -> tuple[str, ...]:
        return hidden_roots(req, home)

    def compile(self, request: SandboxRequest) -> SandboxPlan:
        return compile_bwrap(request)

    def coverage(self, request: SandboxRequest, version: str | None) -> dict[str, LayerCoverage]:
        return coverage(request, version)

    def enforced_items(self, req: RuntimeRequirements) -> tuple[str, ...]:
        return enforced_items(req)

    def sandbox_env_names(self, req: RuntimeRequirements, bound_secrets: bool = False) -> tuple[str, ...]:
        return sandbox_env_names(req, bound_secrets)

    def model_route_url(self, req: RuntimeRequirements, base_url: str | None) -> str | None:
        return model_route_url(req, base_url)

    def locked_down_command(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        home: str | None = None,
        bind_back: Callable[[tuple[str, ...]], Iterable[str]] | None = None,
        hide: Sequence[str] = (),
    ) -> LockedDownCommand:
        return locked_down_command(command, args, env, home, bind_back, hide)


BACKEND = BwrapBackend()
