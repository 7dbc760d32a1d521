"""The shapes that flow through a compile: context in, native result and run plan out.

Every model here is frozen and serialises canonically, so a plan's hash is a pure function of
the profile and the context it was compiled for.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentbox.core.capability import Support
from agentbox.egress.policy import EgressPolicy
from agentbox.core.paths import check_relative

__all__ = [
    "CompileContext",
    "Artifact",
    "Surface",
    "RuntimeRequirements",
    "LayerCoverage",
    "CompileResult",
    "KeyApproval",
    "StateFile",
    "ItemPlan",
    "OverrideRecord",
    "Placeholder",
    "Credential",
    "SandboxPlan",
    "EffectiveRunPlan",
    "canonical_json",
    "SCHEMA_VERSION",
]

SCHEMA_VERSION = 1

# Fixed paths inside the sandbox: the private config home and temp dir live on the sandbox's own
# /tmp tmpfs, so they never depend on where the host keeps the run's folder.
SANDBOX_CONFIG_HOME = "/tmp/agentbox/config"
SANDBOX_TMPDIR = "/tmp/agentbox/tmp"


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompileContext(_Frozen):
    """Where the harness will run, as the harness process sees it."""

    cwd: str
    home: str
    config_home: str = SANDBOX_CONFIG_HOME
    tmpdir: str = SANDBOX_TMPDIR
    harness_version: str | None = None
    # server -> every tool it offers, asked from the server before the run (empty: unknown)
    mcp_tools: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    # server -> why asking it for its tools failed (a compile names it beside the gap)
    mcp_problems: dict[str, str] = Field(default_factory=dict)
    # Intent items the OS sandbox around the harness enforces exactly for every process (empty when the
    # harness runs alone). Where the harness's own mechanism for such an item cannot work inside that
    # sandbox, its adapter may leave it out: the item stays exact through the OS layer.
    sandbox_enforces: tuple[str, ...] = ()
    # Variables the OS sandbox gives every process and the harness must hand on to the commands it runs
    # (the egress proxy's), by name.
    sandbox_env: tuple[str, ...] = ()
    # Whether processes of the run may create user namespaces. An OS sandbox that refuses them (least
    # privilege: a nested namespace hands back CAP_SYS_ADMIN) breaks a harness sandbox built on one, so its
    # adapter must pick a mechanism that needs none, or leave it to the OS layer.
    user_namespaces: bool = True
    # The base URL the harness must use for its model inside the OS sandbox: the egress proxy's model route on
    # loopback, which forwards to the profile's model.base_url with the real key swapped in (None: the harness
    # runs alone, or the profile names no base_url). Its port may be MODEL_PORT_TOKEN, filled at run start.
    model_base_url: str | None = None


class Artifact(_Frozen):
    """One native config file, relative to the private config home, with its exact content."""

    path: str
    content: str
    owners: dict[str, str] = Field(default_factory=dict)  # dotted key -> intent item it enforces

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        return check_relative(value)


class Surface(_Frozen):
    """A project-level config entry a harness discovers (seed 002's registry)."""

    path: str
    kind: Literal["directory", "file"]
    discovery: Literal["launch_root_only", "git_root_to_cwd", "ancestor_chain"] = "git_root_to_cwd"
    default_text: str = ""

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        return check_relative(value)


class RuntimeRequirements(_Frozen):
    """What the harness layer delegates to the OS sandbox."""

    workspace: Literal["none", "read_only", "read_write"]
    network: Literal["none", "restricted", "unrestricted"]
    allow_domains: tuple[str, ...] = ()
    host_home: Literal["hidden", "visible"]
    env_allow: tuple[str, ...] = ()
    env_set: dict[str, str] = Field(default_factory=dict)
    surfaces: tuple[Surface, ...] = ()
    model_endpoint: str | None = None  # host:port the harness must reach for its model
    model_tls: bool = False  # that endpoint speaks https (set by core from model.base_url)
    writable_tmp: bool = True
    # what programs on the host run later from the workspace (host_executed): read-only to the run unless
    # `writable`; the names the profile frees (`host_writable`)
    host_executed: Literal["protected", "writable"] = "protected"
    host_writable: tuple[str, ...] = ()


class Placeholder(_Frozen):
    """How a credential's per-run placeholder looks: `prefix`, then `length` random characters, shaped so the
    harness takes it for a key (an adapter knows what its harness checks)."""

    prefix: str = ""
    length: int = Field(default=48, ge=24, le=128)
    alphabet: Literal["alphanumeric", "hex"] = "alphanumeric"


class Credential(_Frozen):
    """A secret that enters the sandbox only as a per-run placeholder in `variable`; the egress proxy holds the
    real value (read from the host's environment at run start, never written) and swaps it into `headers`
    (`Name: template` with `{value}`) of requests to where it is bound: the model route, or `hosts`."""

    variable: str
    headers: tuple[str, ...]
    placeholder: Placeholder = Placeholder()
    hosts: tuple[str, ...] = ()  # allow_domains syntax
    model: bool = False  # bound to the model route
    # where it is named in the profile (an error names it); a required one the host lacks refuses the run
    # (exit 4), an optional one (the model key) leaves the harness without it, as a run without the variable
    source: str
    required: bool = True


class LayerCoverage(_Frozen):
    layer: Literal["harness", "sandbox"]
    support: Support
    mechanism: str
    enforcement_scope: str = ""
    bypass_surfaces: tuple[str, ...] = ()
    reason: str = ""


class KeyApproval(_Frozen):
    """A first-run question the profile has already answered. A harness that finds its model key in the
    environment may ask, on first start, whether to use it, and keep the answer in a state file as part
    of the key (Claude Code: the last 20 characters, in `.claude.json`). The profile names the key
    (`model.api_key_env`), so a launch answers yes for it: the launcher writes `template` into `file`
    (a compiled artifact) at each start, `{key_suffix}` replaced by the key's last `last` characters.
    Never compiled into the plan: the key is known only at start, and only on the host."""

    file: str
    key: str
    template: Any
    variable: str
    last: int = Field(gt=0, le=64)


class StateFile(_Frozen):
    """A file the harness keeps its own answers in (first-run dialogs, tips seen, start counters), compiled like an
    artifact (`path` names one) but left writable in the run so the harness can save. At the end of a launch the
    keys that match `keep` are copied into the profile's private state, and the next launch starts from that state
    merged under the compiled file (the plan's keys win). Every other key is dropped and named on stderr, with its
    reason from `widens` when the adapter knows how it could widen the plan.

    Keys are dotted paths into the JSON object, each segment a glob (`projects.*.last*`: those keys of every
    project). Each reason says why the key widens nothing (`keep`) or how it could widen (`widens`)."""

    path: str
    keep: dict[str, str]
    widens: dict[str, str] = Field(default_factory=dict)

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        return check_relative(value)

    @field_validator("keep", "widens")
    @classmethod
    def _reasons(cls, value: dict[str, str]) -> dict[str, str]:
        for key, reason in value.items():
            if not key or "" in key.split(".") or not reason.strip():
                raise ValueError(f"{key!r}: every key needs a dotted path and a reason")
        return value


class CompileResult(_Frozen):
    """A harness adapter's pure output for one intent."""

    harness: str
    version: str | None
    dialect: str
    artifacts: tuple[Artifact, ...] = ()
    argv: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    requirements: RuntimeRequirements
    coverage: dict[str, LayerCoverage] = Field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    key_approvals: tuple[KeyApproval, ...] = ()
    # artifacts the harness writes its answers into: writable in the run, their allowlisted keys kept per profile
    state_files: tuple[StateFile, ...] = ()
    # the harness's own model key, as the adapter knows its harness reads and sends it; inside the OS sandbox
    # it is a placeholder that the model route swaps for the real key
    model_credential: Credential | None = None


class ItemPlan(_Frozen):
    item: str
    capability: str
    requirement: Literal["required", "advisory"]
    provenance: Literal["intent", "default", "override"]
    layers: tuple[LayerCoverage, ...]
    effective: Support
    gap: str | None = None


class OverrideRecord(_Frozen):
    harness: str
    applied: bool
    patch: dict[str, Any]
    changed_keys: tuple[str, ...] = ()
    weakens: tuple[str, ...] = ()
    unsafe_override: bool = False
    reason: str = ""


class SandboxPlan(_Frozen):
    backend: str
    argv: tuple[str, ...]  # up to and excluding the command; {run_dir} marks the run's host folder
    env: dict[str, str] = Field(default_factory=dict)
    binds: tuple[tuple[str, str, str], ...] = ()  # (mode, host source, sandbox target)
    # (loopback port inside, socket name in the run's relay folder): the inner relay's mappings, if any
    relay: tuple[tuple[int, str], ...] = ()
    egress: EgressPolicy | None = None  # the egress proxy's policy; None: the run has no proxy
    unix_filter: bool = False  # every process of the run is refused new unix sockets
    # every process of the run gets the seccomp denylist (agentbox/data/seccomp/denylist.yaml)
    syscall_filter: bool = False
    # every process of the run is kept from abstract unix sockets made outside it (Landlock scope), where the run
    # shares the host's network namespace and with it the host's abstract sockets; wanted here, entered at the
    # start where the kernel has it
    abstract_unix_scope: bool = False
    # how the harness reaches the model route: "relay" (a loopback port of the inner relay, network unshared) or
    # "tcp" (a loopback port the proxy listens on, network shared; its number fills MODEL_PORT_TOKEN at start)
    model_route: Literal["relay", "tcp"] | None = None
    # network shared and secrets bound to hosts: the proxy also listens on a loopback TCP port of the host, which
    # the run's proxy variables name (its number fills PROXY_PORT_TOKEN at start), to swap them in
    proxy_tcp: bool = False
    credentials: tuple[Credential, ...] = ()  # placeholders in, real values swapped in by the egress proxy
    # a secret is bound to a host: the run's CA (made at its start) is trusted inside, for the TLS the proxy ends
    run_ca: bool = False
    # the workspace's host-executed paths to hold at each run's start (agentbox.sandbox.host_guard): the names to
    # look for, the depth, the names the profile frees; None when nothing of the workspace is writable or the
    # profile frees them all
    host_executed: dict[str, Any] | None = None


class EffectiveRunPlan(_Frozen):
    schema_version: int = SCHEMA_VERSION
    profile: str
    profile_digest: str
    harness: str
    harness_version: str | None
    dialect: str
    binary: str | None = None
    binary_sha256: str | None = None
    cwd: str
    intent: dict[str, Any]
    native: CompileResult
    sandbox: SandboxPlan
    items: tuple[ItemPlan, ...]
    overrides: tuple[OverrideRecord, ...] = ()
    portable: bool = True
    warnings: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @property
    def hash(self) -> str:
        return hashlib.sha256(canonical_json(self.body()).encode()).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {**self.body(), "plan_hash": self.hash}

    def item(self, name: str) -> ItemPlan:
        return next(i for i in self.items if i.item == name)
