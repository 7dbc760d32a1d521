"""What a sandboxed run has running before its command starts: the egress proxy on the host (watched, so
its death ends the run), the inner relay that is the sandbox's first process, and the unix-socket filter
for a run without a relay (`bwrap --seccomp FD`). Also the decision log's way out of the run folder.

Imported on the hot paths: the proxy's own modules (pydantic among them) load only when a plan has one.
"""

from __future__ import annotations

import os

from agentbox.egress.inside import LOG_NAME, MODEL_PORT_TOKEN, PROXY_PORT_TOKEN
from agentbox.sandbox.host_guard import Guard, guard_folder
from agentbox.sandbox.session import RUN_DIR, copy_decisions, kill_marked, python_for_sandbox, sandbox_argv, state_home

__all__ = [
    "Started",
    "start_egress",
    "run_authority",
    "fill_ports",
    "relay_prefix",
    "filter_fd",
    "end_run_if_proxy_dies",
    "read_decisions",
    "copy_decisions",
]


def run_authority(entry: dict, run_dir: str, swaps: list[dict]):
    """The run's CA when a secret is bound to a host (None otherwise), its certificate and a bundle of the host's
    CAs plus it written to the run's `ca` folder (public material only: the key stays in memory). A CA that
    cannot be made refuses the run (SandboxError, exit 4)."""
    if not entry.get("run_ca"):
        return None
    from agentbox.egress.inside import BUNDLE_NAME, CA_NAME
    from agentbox.errors import SandboxError

    hosts = [h for s in swaps for h in s["hosts"]]
    try:
        from agentbox.egress.policy import parse_entry
        from agentbox.egress.run_ca import Authority, host_bundle

        authority = Authority(tuple(parse_entry(h) for h in hosts)) if hosts else None
        folder = os.path.join(run_dir, "ca")
        os.makedirs(folder, exist_ok=True)
        ca = authority.cert_pem() if authority is not None else b""
        with open(os.path.join(folder, CA_NAME), "wb") as f:
            f.write(ca)
        with open(os.path.join(folder, BUNDLE_NAME), "wb") as f:
            f.write(host_bundle().rstrip(b"\n") + b"\n" + ca)
    except Exception as exc:  # ImportError (no cryptography), OSError, a library refusal: all fail closed
        raise SandboxError(
            f"secrets: the run's certificate authority cannot be created ({exc!r}), so the egress "
            f"proxy cannot swap a secret into TLS to its bound hosts (sandbox layer); refusing to "
            f"start the run"
        ) from None
    return authority


def bind_egress(entry: dict, run_dir: str):
    """Every socket the run's egress proxy will serve, bound and listening now (`egress.listen.Bound`, standard
    library only), for `start_egress(bound=...)` to serve later; None when the plan needs no proxy. The same set
    start_egress binds: the proxy socket and each fixed route the relay dials, the model route's socket or port,
    the proxy's TCP port."""
    if not entry.get("egress"):
        return None
    from agentbox.egress.inside import MODEL_SOCKET, SOCKET_NAME, loopback_socket
    from agentbox.egress.listen import Bound

    relay_dir = os.path.join(run_dir, "relay")
    names = {name for _, name in entry.get("relay", ())}
    route = entry.get("model_route")
    routes = sorted({name for port, name in entry.get("relay", ()) if name == loopback_socket(int(port))})
    paths = [
        os.path.join(relay_dir, n)
        for n in (
            *([SOCKET_NAME] if SOCKET_NAME in names else []),
            *routes,
            *([MODEL_SOCKET] if route == "relay" else []),
        )
    ]
    return Bound.bind(paths, model_tcp=route == "tcp", proxy_tcp=bool(entry.get("proxy_tcp")))


def start_egress(
    entry: dict,
    run_dir: str,
    resolve: dict[str, str] | None = None,
    swaps: list[dict] | tuple[dict, ...] = (),
    upstream_ca: str | None = None,
    authority=None,
    bound=None,
):
    """Start the run's egress proxy before anything runs; None when the plan needs none.

    It serves the proxy socket and the fixed routes in the run's relay folder, the model route there or (network
    shared) on a loopback TCP port, and logs to the run folder. `swaps` are the run's credentials (`issue`),
    held in this process's memory only. `resolve` (name -> address) and `upstream_ca` (a CA bundle for upstream
    TLS in place of the host's) are testing aids. A proxy that cannot start raises ProxyStartError (a
    SandboxError): the run is refused. `bound`: the sockets `bind_egress` made ahead (served, not bound again).
    """
    if not entry.get("egress"):
        return None
    from agentbox.egress.inside import MODEL_SOCKET, SOCKET_NAME, loopback_socket
    from agentbox.egress.policy import EgressPolicy
    from agentbox.egress.proxy import EgressProxy
    from agentbox.egress.swap import Swap, SwapTable

    data = dict(entry["egress"])
    data["resolver_overrides"] = {**data.get("resolver_overrides", {}), **(resolve or {})}
    policy = EgressPolicy.model_validate(data)
    relay_dir = os.path.join(run_dir, "relay")
    names = {name for _, name in entry.get("relay", ())}
    fixed = {loopback_socket(e.port): e for e in policy.loopback_routes()}
    routes = {os.path.join(relay_dir, name): fixed[name] for name in names if name in fixed}
    route = entry.get("model_route")
    return EgressProxy(
        policy,
        os.path.join(run_dir, LOG_NAME),
        socket_path=os.path.join(relay_dir, SOCKET_NAME) if SOCKET_NAME in names else None,
        routes=routes,
        model_socket=os.path.join(relay_dir, MODEL_SOCKET) if route == "relay" else None,
        model_tcp=route == "tcp",
        tcp_port=0 if entry.get("proxy_tcp") else None,
        swaps=SwapTable([Swap.make(**s) for s in swaps]),
        upstream_ca=upstream_ca,
        authority=authority,
    ).start(bound)


def fill_ports(run_dir: str, env: dict[str, str], ports: dict[str, int]) -> None:
    """Write each port over its token (MODEL_PORT_TOKEN, PROXY_PORT_TOKEN) in the run's config files and
    variables: under a shared network the proxy's ports are loopback ports of the host, known only once it
    listens."""

    def filled(text: str) -> str:
        for token, port in ports.items():
            text = text.replace(token, str(port))
        return text

    for name, value in env.items():
        env[name] = filled(value)
    for root, _dirs, files in os.walk(os.path.join(run_dir, "config")):
        for name in files:
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            if filled(text) != text:
                with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(filled(text))


def relay_prefix(entry: dict, run_dir: str) -> list[str]:
    """The inner relay's argv prefix (installing it in the run folder), or [] when the run has no relay."""
    if not entry.get("relay"):
        return []
    from agentbox.sandbox.relay import install, relay_argv

    install(run_dir, denylist=bool(entry.get("seccomp")))
    return relay_argv(python_for_sandbox(), [(int(port), name) for port, name in entry["relay"]])


def filter_fd(entry: dict) -> int | None:
    """The seccomp program for `bwrap --seccomp FD` (the caller closes it): the denylist, refusing new unix
    sockets too when the run needs that and has no relay to do it (a relay keeps its own and applies the
    unix-socket filter to the command itself)."""
    deny_unix = bool(entry.get("unix_filter")) and not entry.get("relay")
    if not entry.get("seccomp") and not deny_unix:
        return None
    try:
        if entry.get("seccomp"):
            from agentbox.sandbox import syscall_filter

            return syscall_filter.program_fd(deny_unix)
        from agentbox.sandbox import unix_filter

        return unix_filter.program_fd()
    except OSError as exc:
        from agentbox.errors import SandboxError

        raise SandboxError(f"the sandbox's seccomp filter cannot be prepared: {exc}") from None


class Started:
    """What a run has running before its command starts: the argv up to the command, the watched proxy, and
    the descriptor bwrap must inherit (the unix-socket filter, when no relay applies it).

    `serve_later`: the proxy's sockets are bound now (so the argv, the ports and the relay folder are final), and
    the proxy itself starts serving them at `serve()`, which the caller may run while the command starts (a
    connection made before waits in the backlog; a proxy that cannot start ends the run, as its death does).
    Only `agent-box acp` does, where the proxy's start (the pydantic import of its policy model) would sit between
    an editor's `initialize` and its answer."""

    def __init__(
        self,
        entry: dict,
        run_dir: str,
        run_id: str,
        resolve: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        source=None,
        upstream_ca: str | None = None,
        serve_later: bool = False,
    ):
        """`env`: the run's environment, given the credentials' placeholders (and the model route's port) here;
        `source`: where the real values are read (default: this process's environment)."""
        from agentbox.sandbox.credentials import issue
        from agentbox.sandbox.session import refuse_writable_state

        # the record of held placeholders, found once: checked out of the run's reach, then used by its guard
        guards = guard_folder() if entry.get("host_executed") else None
        refuse_writable_state(entry, run_dir, os.environ if source is None else source, guards)  # before the run exists
        self.guard = None
        self.notes: list[str] = []  # what went wrong during the run (the proxy's death)
        self.fd: int | None = None
        self.proxy = None
        self._bound = None
        self._run = (entry, run_dir, run_id)
        issued = issue(entry.get("credentials", ()), os.environ if source is None else source)
        self.missing = issued.missing  # optional credentials the host lacks: the harness starts without them
        # the CA's files are read by the command as it starts: made now in either case
        self._later = (resolve, issued.swaps, upstream_ca, run_authority(entry, run_dir, issued.swaps))
        if serve_later:
            self._bound = bind_egress(entry, run_dir)
        else:
            self.proxy = start_egress(entry, run_dir, *self._later)
        try:
            if env is not None:
                env.update(issued.env)
                addresses: tuple[tuple[str, int | None], ...]
                if self._bound is not None:
                    addresses = (
                        (MODEL_PORT_TOKEN, self._bound.port("model")),
                        (PROXY_PORT_TOKEN, self._bound.port("proxy")),
                    )
                else:
                    addresses = (
                        ()
                        if self.proxy is None
                        else (
                            (MODEL_PORT_TOKEN, (self.proxy.model_address or (None, None))[1]),
                            (PROXY_PORT_TOKEN, (self.proxy.tcp_address or (None, None))[1]),
                        )
                    )
                ports = {token: port for token, port in addresses if port}
                if ports:
                    fill_ports(run_dir, env, ports)
            if not serve_later:
                end_run_if_proxy_dies(self.proxy, run_id, self.notes)
            if entry.get("host_executed"):
                # scanned now, not at compile time: a cached entry would miss what the project gained since
                launcher = os.environ if source is None else source
                self.guard = Guard(
                    {**entry["host_executed"], "environ": launcher},  # git's own config is found by it
                    [a.replace(RUN_DIR, run_dir) for a in entry["argv"]],
                    run_dir,
                    launcher.get("PATH"),
                    guards,
                )
            self.fd = filter_fd(entry)
            self.argv = [
                *sandbox_argv(
                    entry,
                    run_dir,
                    self.fd,
                    self.guard.args if self.guard else (),
                    state_home(os.environ if source is None else source),
                ),
                "--",
                *relay_prefix(entry, run_dir),
            ]
        except BaseException:
            self.close()
            self.release_guard()
            raise

    def serve(self) -> None:
        """Start the proxy on the sockets bound at `serve_later` (from any thread, once, and finished before
        `close`); ProxyStartError when it cannot: the caller ends the run (the sockets are closed, so whatever
        waits on them is refused)."""
        bound, self._bound = self._bound, None
        if bound is None:
            return
        entry, run_dir, run_id = self._run
        try:
            self.proxy = start_egress(entry, run_dir, *self._later, bound=bound)
        finally:
            bound.close()  # whatever start_egress did not take
        end_run_if_proxy_dies(self.proxy, run_id, self.notes)

    def release_guard(self) -> tuple[list[str], list[str]]:
        """Let the workspace's placeholders go (once the run has ended): the ones left behind, and the
        host-executed paths that came during the run where nothing held them."""
        guard, self.guard = self.guard, None
        if guard is None:
            return [], []
        guard.close_fds()
        return guard.release(), guard.newcomers()

    @property
    def guard_fds(self) -> tuple[int, ...]:
        """What the guard's options bind by descriptor: every sandbox started from `argv` inherits them (bwrap
        closes its own copies before the command starts); open until `close`, as an ACP session starts more than
        one sandbox from `argv`."""
        return tuple(self.guard.fds) if self.guard else ()

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (() if self.fd is None else (self.fd,)) + self.guard_fds

    def close(self) -> None:
        """Stop the proxy (it logs every open connection first) and release the filter's and the guard's
        descriptors."""
        if self._bound is not None:  # bound, never served
            self._bound.close()
            self._bound = None
        if self.proxy is not None:
            self.proxy.stop()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.guard is not None:
            self.guard.close_fds()


def end_run_if_proxy_dies(proxy, run_id: str, notes: list[str]) -> None:
    """Fail closed: a proxy that stops before the run ends takes every process of the run with it."""
    if proxy is None:
        return

    def died(code) -> None:
        notes.append("the egress proxy stopped during the run, so the run was ended")
        kill_marked(run_id)

    proxy.watch(died)


def read_decisions(run_dir: str) -> list[dict]:
    """The run's egress decisions, as the proxy logged them (stop the proxy first: it logs open connections then)."""
    from agentbox.egress.decisions import read_log

    try:
        return read_log(os.path.join(run_dir, LOG_NAME))
    except OSError:
        return []
