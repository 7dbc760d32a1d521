"""The sandbox backend contract: what compiling, running and proving ask of an OS sandbox, found by its name.

A backend compiles a run's requirements into a SandboxPlan (the argv up to `--`), declares what it enforces
of each intent item (its capability declarations, and the coverage of one request at one version), names
its installed program and version (the identity evidence is keyed by), and wraps a single command to start
locked down on the host outside any run (an MCP server asked for its tools before a compile). Code outside `agentbox/sandbox/` asks
`get_backend(name)` for one, by the name a plan or an evidence record carries (`DEFAULT_BACKEND` where a default
is meant), and never imports a backend's module. bubblewrap (`bwrap`) is the first.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from agentbox.errors import InputError
from agentbox.sandbox import DEFAULT_BACKEND

if TYPE_CHECKING:
    from agentbox.core.capability import Declarations
    from agentbox.core.plan import Credential, LayerCoverage, RuntimeRequirements, SandboxPlan
    from agentbox.sandbox.surfaces import Mask

__all__ = [
    "SandboxRequest",
    "LockedDownCommand",
    "SandboxBackend",
    "get_backend",
    "known_backends",
    "DEFAULT_BACKEND",
]

# name -> "module:attribute" of its implementation, imported on first use
_BACKENDS = {"bwrap": "agentbox.sandbox.bwrap:BACKEND"}
_LOADED: dict[str, SandboxBackend] = {}


@dataclass(frozen=True)
class SandboxRequest:
    """What a backend compiles: the run's requirements and the host paths it is made around."""

    requirements: RuntimeRequirements
    workspace: str
    home: str
    masks: tuple[Mask, ...] = ()
    ro_binds: tuple[str, ...] = ()
    rw_binds: tuple[str, ...] = ()  # host folders a run must write to (e.g. a test's observation log)
    config_files: tuple[str, ...] = ()  # compiled artifacts, relative to the config home: bound read-only
    extra_env: dict[str, str] = field(default_factory=dict)
    credentials: tuple[Credential, ...] = ()  # secrets the sandbox sees as placeholders (the egress proxy swaps)


@dataclass(frozen=True)
class LockedDownCommand:
    """A command as the backend starts it locked down: the argv to execute (the backend's own program first, the
    command after it) and the environment to start that argv with."""

    argv: tuple[str, ...]
    env: dict[str, str]


class SandboxBackend(Protocol):
    """An OS sandbox backend, as the compiler, the runs and the suite use one."""

    @property
    def name(self) -> str:
        """The name plans, evidence records and claims carry ("bwrap")."""
        ...

    @property
    def user_namespaces(self) -> bool:
        """Whether a run's processes may create user namespaces."""
        ...

    @property
    def declarations(self) -> Declarations:
        """The layer's capability declarations (`agentbox/data/capabilities/<name>.yaml`)."""
        ...

    def backend_version(self) -> str | None:
        """The installed backend's version, or None when it cannot be asked."""
        ...

    def binary(self) -> str:
        """The installed program's path; a SandboxError when it is not installed."""
        ...

    def hidden_roots(self, req: RuntimeRequirements, home: str) -> tuple[str, ...]:
        """The host folders the sandbox covers with private mounts."""
        ...

    def compile(self, request: SandboxRequest) -> SandboxPlan:
        """Pure: the request in, the plan out (a SandboxError when it cannot be built as asked)."""
        ...

    def coverage(self, request: SandboxRequest, version: str | None) -> dict[str, LayerCoverage]:
        """What this backend, at `version`, enforces of each intent item of the request."""
        ...

    def enforced_items(self, req: RuntimeRequirements) -> tuple[str, ...]:
        """The intent items enforced exactly for every process of a run (what an adapter may rely on)."""
        ...

    def sandbox_env_names(self, req: RuntimeRequirements, bound_secrets: bool = False) -> tuple[str, ...]:
        """The variables the backend may give every process of the run, which its harness must pass on."""
        ...

    def model_route_url(self, req: RuntimeRequirements, base_url: str | None) -> str | None:
        """The base URL a harness inside uses for its model, or None without a base URL."""
        ...

    def locked_down_command(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        home: str | None = None,
        bind_back: Callable[[tuple[str, ...]], Iterable[str]] | None = None,
        hide: Sequence[str] = (),
    ) -> LockedDownCommand:
        """`command args` wrapped to start on the host, outside any run, where it can change nothing and learn no
        more than a run could: host read-only, no network, no capability, the run's system-call denylist with new
        unix sockets refused, AGENTBOX_HOME hidden, and `home` hidden unless None. `env`: what the command is to
        see of the environment; `bind_back`: given the folders hidden, those below them the command needs in order
        to start (its install), bound back read-only; `hide`: folders hidden besides, with nothing below them bound
        back (the project, where the run has no workspace). A SandboxError when the backend is not installed: the
        command is then never started."""
        ...


def known_backends() -> tuple[str, ...]:
    return tuple(sorted(_BACKENDS))


def get_backend(name: str = DEFAULT_BACKEND) -> SandboxBackend:
    """The backend called `name`, its module imported on first use; an InputError naming the known ones else."""
    found = _LOADED.get(name)
    if found is not None:
        return found
    where = _BACKENDS.get(name)
    if where is None:
        raise InputError(f"unknown sandbox backend {name!r}: the known ones are {', '.join(known_backends())}")
    module, attr = where.split(":")
    backend: SandboxBackend = getattr(importlib.import_module(module), attr)
    _LOADED[name] = backend
    return backend
