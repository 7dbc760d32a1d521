"""bubblewrap backend: runtime requirements in, a bwrap argv out.

The host file system is visible read-only; /tmp is private; the home is private when hidden; the
workspace is bound as the intent says; existing project config surfaces are masked read-only by the
profile's private backing. The environment is passed to bwrap itself (never as --setenv), so no
value ever appears in an argv that other host processes can read.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from ..capability import capability_id, load_declarations
from ..errors import SandboxError
from ..paths import is_within
from ..plan import SANDBOX_CONFIG_HOME, SANDBOX_TMPDIR, LayerCoverage, RuntimeRequirements, SandboxPlan
from .surfaces import Mask

__all__ = ["SandboxRequest", "compile_bwrap", "coverage", "bwrap_binary", "hidden_paths", "hidden_roots", "BASE_ENV"]

RUN_DIR = "{run_dir}"
# Names every run keeps; everything else must be allowed by environment.allow.
BASE_ENV = ("PATH", "TERM", "LANG", "LC_ALL")


@dataclass(frozen=True)
class SandboxRequest:
    requirements: RuntimeRequirements
    workspace: str
    home: str
    masks: tuple[Mask, ...] = ()
    ro_binds: tuple[str, ...] = ()
    rw_binds: tuple[str, ...] = ()  # host folders a run must write to (e.g. a test's observation log)
    config_files: tuple[str, ...] = ()  # compiled artifacts, relative to the config home: bound read-only
    extra_env: dict[str, str] = field(default_factory=dict)


def _is_loopback(endpoint: str | None) -> bool:
    if endpoint is None:
        return True
    host = endpoint.rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def unshares_net(req: RuntimeRequirements) -> bool:
    # A non-loopback model cannot be relayed without an egress proxy, so the namespace stays shared.
    return req.network == "none" and _is_loopback(req.model_endpoint)


def hidden_paths(request: SandboxRequest) -> tuple[str, ...]:
    """Host paths the sandbox covers with private mounts."""
    return hidden_roots(request.requirements, request.home)


def hidden_roots(req: RuntimeRequirements, home: str) -> tuple[str, ...]:
    return ("/tmp", home) if req.host_home == "hidden" else ("/tmp",)


def _check(request: SandboxRequest) -> None:
    ws, home = request.workspace, request.home
    if not os.path.isabs(ws):
        raise SandboxError(f"workspace {ws} must be an absolute path")
    if ws == "/":
        raise SandboxError("workspace / would expose the whole host file system")
    if is_within(ws, "/tmp/agentbox"):
        raise SandboxError(f"workspace {ws} would be hidden by the sandbox's private /tmp/agentbox")
    if request.requirements.host_home == "hidden" and is_within(home, ws):
        raise SandboxError(f"workspace {ws} contains the host home {home}, which host_home: hidden must hide")
    for path in (*request.ro_binds, *request.rw_binds):
        if not os.path.isabs(path):
            raise SandboxError(f"bind path {path} must be absolute")


def compile_bwrap(request: SandboxRequest) -> SandboxPlan:
    """Pure: the argv up to `--`, with {run_dir} standing for the run's host folder."""
    _check(request)
    req = request.requirements
    ws = request.workspace
    argv: list[str] = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    binds: list[tuple[str, str, str]] = []

    def bind(mode: str, src: str, dst: str) -> None:
        argv.extend([f"--{mode}", src, dst])
        binds.append((mode, src, dst))

    if req.host_home == "hidden":
        argv.extend(["--tmpfs", request.home])
    elif is_within(request.home, "/tmp"):
        bind("ro-bind", request.home, request.home)  # a visible home must survive the private /tmp
    for path in request.ro_binds:
        if any(is_within(path, h) for h in hidden_paths(request)):
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
    if unshares_net(req) and req.model_endpoint:
        bind("bind", f"{RUN_DIR}/relay", "/tmp/agentbox/relay")
    if unshares_net(req):
        # the host's system sockets (docker, dbus, systemd) live under /run: no network means none of them
        argv.extend(["--unshare-net", "--tmpfs", "/run"])
    argv.extend(["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"])
    argv.extend(["--chdir", ws])
    env = {"HOME": request.home, "TMPDIR": SANDBOX_TMPDIR, **req.env_set, **request.extra_env}
    return SandboxPlan(backend="bwrap", argv=tuple(argv), env=dict(sorted(env.items())), binds=tuple(binds))


def coverage(request: SandboxRequest, version: str | None = None) -> dict[str, LayerCoverage]:
    """What this backend enforces for each intent item of the request."""
    decl = load_declarations("bwrap")
    req = request.requirements
    values = {
        "workspace": {"access": req.workspace},
        "shell": None,
        "command_network": {"access": req.network},
        "mcp": {},
        "host_home": {"access": req.host_home},
        "environment": {},
    }
    mechanisms = {
        "workspace": {"none": "workspace hidden by tmpfs", "read_only": "--ro-bind workspace",
                      "read_write": "--bind workspace, read-only host, private /tmp"}[req.workspace],
        "command_network": "--unshare-net" if unshares_net(req) else "shared network namespace",
        "host_home": "--tmpfs over the home" if req.host_home == "hidden" else "home visible read-only",
        "environment": "clean environment: " + ", ".join((*BASE_ENV, *req.env_allow)),
        "mcp": "none",
    }
    out: dict[str, LayerCoverage] = {}
    for item, value in values.items():
        if value is None:
            out[item] = LayerCoverage(layer="sandbox", support="unsupported", mechanism="none",
                                      reason="the OS sandbox cannot restrict a harness's shell tool")
            continue
        cap = capability_id(item, value)
        report = decl.report(cap, version)
        support, reason = report.support, report.reason
        if item == "command_network" and req.network == "none" and not unshares_net(req):
            support = "unsupported"
            reason = (f"the model endpoint {req.model_endpoint} is not on loopback, so the network namespace "
                      "cannot be unshared without an egress proxy")
        out[item] = LayerCoverage(layer="sandbox", support=support, mechanism=mechanisms[item],
                                  enforcement_scope=report.enforcement_scope,
                                  bypass_surfaces=report.bypass_surfaces, reason=reason)
    return out


def bwrap_binary() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxError("bubblewrap is not installed (bwrap not on PATH): apt-get install bubblewrap")
    return path
