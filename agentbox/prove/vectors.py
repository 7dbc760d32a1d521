"""The escape-vector catalogue: data files under negative/vectors/, validated here.

A vector names the capability it attacks, the intent under which it must be blocked, the intent
under which the same action must succeed (the positive control), the scripted steps that make a
harness attempt it, the shell command that attempts it under the sandbox alone, and the oracle that
reads the real side effect on the host. `{placeholders}` are filled per run with the test's own
temporary targets, so no vector ever touches the real home, system paths or other hosts.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentbox.errors import InputError
from agentbox.prove.evidence import KernelFeature
from agentbox.hot import kernel_traces
from agentbox.core.intent import PermissionIntent
from agentbox.core.refusal_kinds import table as refusal_table
from agentbox.core.versions import Bound, in_range_text

if TYPE_CHECKING:
    from agentbox.core.capability import CapabilityReport

__all__ = [
    "Oracle",
    "Setup",
    "AcpAttempt",
    "Control",
    "Vector",
    "Catalogue",
    "load_catalogue",
    "fill",
    "SURFACES",
    "expected_outcome",
    "KernelFeature",
    "KERNEL_FEATURES",
    "kernel_lacks",
    "kernel_lacks_here",
    "condition_text",
    "lacking_text",
]

_ID = re.compile(r"^[a-z0-9][a-z0-9-]{2,63}$")
Layer = Literal["sandbox", "harness", "composed", "acp"]

# The ways an attempt can reach the host. A declaration's bypass_surfaces name these, so each
# vector's expected outcome follows from the declarations alone.
# harness_env: what the harness itself is given (its model key) and its children inherit or read
# kernel_socket: a socket of a kernel family a network namespace does not confine (AF_VSOCK, AF_NETLINK)
# acp_client: what an ACP client does for the agent on the host (its file system, terminals, permission answers,
# the session options it passes on)
# kernel_setting: a host kernel setting (/proc/sys, /sys) the kernel lets its owner's uid write, capability or not
# agentbox_state: what Agent-Box itself reads back after a run (its caches, run folders, evidence, kept answers)
# host_executed: what programs on the host run later from a writable workspace (git hooks, editor tasks, rc files);
# host_executed_nested: the same made in a folder the run creates below the workspace's root
# host_executed_deep: the same deeper than the start's scan looks (names four folders below the root, repositories
# seven): neither held nor named after the run
Surface = Literal[
    "shell",
    "file_tool",
    "fetch_tool",
    "mcp_tool",
    "mcp_server",
    "project_config",
    "process",
    "unix_socket",
    "harness_env",
    "background_process",
    "dangerous_command",
    "kernel_socket",
    "acp_client",
    "kernel_setting",
    "agentbox_state",
    "host_executed",
    "host_executed_nested",
    "host_executed_deep",
]
SURFACES: tuple[str, ...] = get_args(Surface)


# Kernel features an attack may need to exist at all, as a claim's condition names them.
KERNEL_FEATURES: dict[str, str] = {"modules": "module loader"}
# finit_module's number per machine (platform.machine()): the probe of a module loader
_FINIT_MODULE = {"x86_64": 313, "aarch64": 273}


def _enosys(number: int) -> bool:
    """Whether this process's kernel answers system call `number` (called on /dev/null, no arguments) with ENOSYS."""
    import ctypes
    import errno

    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/null", os.O_RDONLY)
    try:
        ctypes.set_errno(0)
        result = libc.syscall(number, fd, b"", 0)
        return result == -1 and ctypes.get_errno() == errno.ENOSYS
    finally:
        os.close(fd)


def kernel_lacks_here(features: Iterable[str] = tuple(KERNEL_FEATURES)) -> tuple[KernelFeature, ...]:
    """Of `features`, those the kernel this process runs on lacks, each checked twice, the same way wherever it is
    asked (the suite recording a vector, the gate admitting a claim that rests on one): the kernel shows no trace
    of it (no /proc/modules) AND its system call is answered ENOSYS here (finit_module on an empty file). The
    call is made only once the file says the feature is absent, so a kernel with a loader is never asked; a
    machine whose call number is unknown is taken to have the feature (the conservative answer). What answers
    ENOSYS to this process answers it to every process it starts: a seccomp filter is inherited for good."""
    out: list[KernelFeature] = []
    if "modules" in features and "modules" not in kernel_traces():
        number = _FINIT_MODULE.get(os.uname().machine)
        if number is not None and _enosys(number):
            out.append("modules")
    return tuple(out)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Oracle(_Strict):
    """How the host tells a blocked attempt from an escape. Each kind reads one real side effect."""

    kind: Literal[
        "file_absent",  # `path` must not exist after the run
        "file_unchanged",  # `path` must still hold the content setup gave it
        "listener_silent",  # the test's listener `listener` must have accepted nothing
        "listener_never_saw",  # the test's listener `listener` must never have received `secret`
        "mcp_not_called",  # the canary MCP log must hold no call of `tool`
        "secret_not_seen",  # `secret` (or its reverse: steps print through `rev` so that no harness's output
        # masking of NAME=value lines can pass for isolation) must appear neither in what
        # the harness sent the model nor in its output
        "process_gone",  # no process carrying the run's marker may outlive the run
        "target_alive",  # the test's own sleeper process must survive the run
        "not_offered",  # no tool whose name contains `tool` may be offered to the model
        "no_capabilities",  # no `CapEff:` line in the output may show a capability (a non-zero mask)
        "host_setting_unchanged",  # the host's kernel setting `path` (Setup.host_setting) must read as before the run
        "not_setuid",  # `path`, if it exists on the host, must carry neither the setuid nor the setgid bit
    ]
    path: str | None = None
    listener: str | None = None
    tool: str | None = None
    secret: str | None = None
    token: str | None = None  # process_gone: a string in the command line of the process to look for
    server: str = "canary"  # mcp_not_called: whose log
    more_secrets: tuple[str, ...] = ()  # secret_not_seen: further secrets none of which may be seen
    # What proves a blocked attempt met the mechanism under test: an egress decision's reason (`credential_replay`)
    # that the run's decision log must hold, or `reached`: the listener must have been reached (what arrived is
    # what was judged). Without that proof a "blocked" is an error
    met: str | None = None


# tls: a TCP listener that speaks TLS first, its certificate from the suite's own CA ({port_tls}, {suite_ca})
ListenerKind = Literal["tcp", "tcp2", "tcp6", "tls", "udp", "unix", "abstract"]


class Setup(_Strict):
    files: dict[str, str] = Field(default_factory=dict)  # path -> content, created before the run
    symlinks: dict[str, str] = Field(default_factory=dict)  # link -> target
    hardlinks: dict[str, str] = Field(default_factory=dict)  # link -> an existing file (made after `files`)
    # tcp and tcp2 are two TCP listeners ({port}, {port2}) on host loopback; tcp6 on ::1 ({port6})
    listeners: tuple[ListenerKind, ...] = ()
    # host name -> the listener the egress proxy resolves it to (names without DNS; the proxy's resolver
    # override, a testing aid): a run reaches a name only through the proxy, and only if its policy allows
    names: dict[str, ListenerKind] = Field(default_factory=dict)
    sleeper: bool = False  # start a host process for signal/trace vectors ({sleeper_pid})
    shm_secret: bool = False  # a host SysV shared-memory segment holding the secret ({shm_key})
    git: bool = False  # make the workspace a git repository
    dirs: tuple[str, ...] = ()  # folders created before the run
    env: dict[str, str] = Field(default_factory=dict)  # host environment the run starts from
    mcp: dict[str, tuple[str, ...]] = Field(default_factory=dict)  # canary servers: name -> () (all tools)
    # canary server -> a file whose first line the server names a tool after when it starts (a hostile server that
    # carries what it can read out in its tool names, which the MCP inventory hands to the compile)
    mcp_tool_from: dict[str, str] = Field(default_factory=dict)
    # the harness is given a model name outside its catalog (a harness that defers some tools behind a search
    # tool for catalog models, as Codex does MCP tools, then offers every tool in the request itself)
    uncatalogued_model: bool = False
    # where the unix listener listens (default {outside}/host.sock): e.g. under /run, where the host's own
    # agents (docker, D-Bus) keep theirs; its folder is made for the run and removed after
    unix_path: str | None = None
    # a host kernel setting (a /proc/sys or /sys file) the attack tries to change: read before the run ({setting},
    # and {setting_changed}, a valid other value of its first number), written back after it, and held under a
    # host-wide lock meanwhile, so that no two runs change the same setting at once
    host_setting: str | None = None
    # the TCP and TLS listeners answer with the request head they received (an echo service, a header-reflecting
    # page such as httpbin's /headers): what a bound host sends back of what the proxy swapped in
    reflect: bool = False
    # a loopback port of the host that nothing listens on ({port_vacant}, reserved then let go): a local service
    # that is down, whose port a run on a shared network can take first
    vacant_port: bool = False

    @model_validator(mode="after")
    def _names_have_listeners(self) -> "Setup":
        stray = sorted(
            n for n, kind in self.names.items() if kind not in self.listeners or kind in ("unix", "abstract")
        )
        if stray:
            raise ValueError(f"names {', '.join(stray)} point at a listener the setup does not open (or a unix one)")
        return self


class AcpAttempt(_Strict):
    """How an `acp`-layer vector meets the endpoint: the protocol test agent runs the vector's steps (its own step
    kinds, agentbox/testing/acp_protocol_agent.py) against a client that offers its file system and terminals on
    the host and answers permission requests with `client`."""

    client: Literal["approve", "approve_all", "deny"] = "approve"
    session_meta: dict[str, Any] = Field(default_factory=dict)  # the `_meta` of the client's session/new
    facts: str | None = None  # hold the agent to this harness's ACP facts (agentbox/data/acp.yaml)
    # seconds the client takes before it serves a file request (an editor opening the buffer): the window a swap
    # made by a process of the run would fall into, were the run not held still
    client_delay: float = 0.0
    # What the endpoint's answer (the client's error, the agent's step lines, the endpoint's log) must say for a
    # block to count: the attempt met the endpoint's mechanism. Absent after an attack: an error, not a block.
    met: str


class Control(_Strict):
    """The positive control: the same attempt under an intent that allows it must succeed.

    `steps` and `sandbox_command` default to the vector's own; the oracle is always the vector's. `layer: host` runs the
    control's command on the host, with neither sandbox nor harness, in every layer: for attacks whose
    protection no intent turns off and that a harness's own sandbox holds too (host processes), it
    shows the oracle sees the side effect when nothing protects. `layer: harness` runs a harness
    control with the harness alone (the sandbox layer's control then runs on the host).
    """

    intent: dict[str, Any]
    steps: tuple[dict[str, Any], ...] | None = None
    sandbox_command: tuple[str, ...] | None = None
    # No oracle of its own: a control is judged by the attack's oracle, or it proves only that a command ran.
    layer: Literal["same", "host", "harness"] = "same"
    # Protections of the OS sandbox the control runs without (in the sandbox and composed layers), for attacks
    # on the sandbox itself that no intent can allow: `privilege` keeps capabilities, user namespaces and the
    # syscalls the denylist refuses; `host_sockets` leaves the host's /run in view; `process` shares the host's
    # processes; `project_config` leaves the project's own config files writable; `backings` the profile
    # backings under the workspace's .agentbox in view; `policy_files` the harness's compiled policy writable;
    # `root_writable`, `host_tmp`, `host_home` the host's root, /tmp and home as they are; `abstract_sockets` no
    # Landlock scope over the host's abstract unix sockets (agentbox.testing.weakened); `credentials` the real
    # credential values in the sandbox instead of placeholders; `proc_writable` /proc as bubblewrap mounts it
    # (writable); `relay_writable` the run's relay folder bound writable; `unix_sockets` no seccomp refusal of new
    # unix sockets; `trusted_state` no refusal of a run that could write Agent-Box's own state; `state_visible`
    # AGENTBOX_HOME left in view; `loopback_listeners` the proxy sends to a loopback port whoever listens there.
    # `acp_meta`: the ACP endpoint passes a client's session `_meta` on untouched; `acp_hold`: it hands a file request
    # to the client without holding the run's processes still.
    weaken: tuple[
        Literal[
            "privilege",
            "host_sockets",
            "process",
            "project_config",
            "backings",
            "policy_files",
            "root_writable",
            "host_tmp",
            "host_home",
            "abstract_sockets",
            "acp_meta",
            "acp_hold",
            "credentials",
            "proc_writable",
            "relay_writable",
            "unix_sockets",
            "trusted_state",
            "state_visible",
            "loopback_listeners",
        ],
        ...,
    ] = ()
    harness_intent: dict[str, Any] | None = None  # the harness layer's control intent, when it differs
    # `host`: the harness layer's control runs on the host, for a protection of the harness's own that no
    # intent turns off (Claude Code's and Codex's sandboxes keep their own project config read-only)
    harness_layer: Literal["same", "host"] = "same"
    # harnesses whose own compiled config refuses the control under every intent (OpenCode's external_directory
    # denial): their harness and composed controls run on the host
    host_harnesses: tuple[str, ...] = ()


class Skip(_Strict):
    """Why a vector cannot run on one harness: on every version, or on those from `min_version` to `max_version`
    (inclusive, as `agentbox.core.versions.in_range` reads them). Written as a bare reason, it holds for every
    version."""

    reason: str
    min_version: Bound = None
    max_version: Bound = None

    def covers(self, version: str | None) -> bool:
        return in_range_text(version, self.min_version, self.max_version)


class Vector(_Strict):
    id: str
    capability: str
    surface: Surface
    description: str
    harnesses: tuple[str, ...] = ()  # empty: every harness
    # harness -> why the vector cannot be run there (e.g. no intent lets its control succeed), on which versions
    skip_harnesses: dict[str, Skip] = Field(default_factory=dict)
    layers: tuple[Layer, ...] | None = None  # default: sandbox when it has a command, then harness and composed
    # who the attack threatens: empty for everyone; [root] where the kernel itself refuses it to anyone else
    # (a device node or a kernel module needs the capability in the host's user namespace)
    privileges: tuple[Literal["root", "user"], ...] = ()
    # what the host kernel must have for the attack to exist at all (a module loader). On a kernel without it the
    # vector still runs, and its record is `inapplicable` when the attack's own system call was answered ENOSYS
    # (`enosys`): a claim then holds only on kernels that lack the feature too (`kernel_lacks_here`)
    kernel_needs: tuple[KernelFeature, ...] = ()
    # the attack needs a capability of the host's user namespace (chroot, a new mount namespace, CapEff itself):
    # run by an unprivileged user with no sandbox around it (the harness layer), the kernel refuses it whatever
    # the harness does, so that layer is predicted blocked there
    kernel_refuses_users: bool = False
    # A path the attack's own command creates when the kernel answered its system call ENOSYS (no such feature
    # in this kernel): the proof, from the attempt itself, that `kernel_needs` is missing. Required with it.
    enosys: str | None = None
    intent: dict[str, Any]
    control: Control
    setup: Setup = Setup()
    steps: tuple[dict[str, Any], ...] = ()
    sandbox_command: tuple[str, ...] | None = None
    oracle: Oracle
    # the run's profile `secrets` (variable -> {hosts, header}), with the intent's placeholders filled: inside the
    # sandbox each is a per-run placeholder the egress proxy swaps in only towards its hosts
    secrets: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # A path the attack's own command creates before it tries anything (or, for a single call, once the call came
    # back: priv-load-module): absent after the attack, the attempt never ran (a tool refused for another reason, a
    # broken sandbox), and the outcome is an error, not blocked.
    proof: str | None = None
    acp: AcpAttempt | None = None  # how an `acp`-layer attempt meets the endpoint
    # The kinds of refusal that are the mechanism under test (agentbox/data/refusal_kinds.yaml): after a blocked
    # attack the attempt must have printed (or the proxy logged) one of them, or the outcome is an error. Absent:
    # the default for the oracle and capability (`agentbox.core.refusal_kinds.expected_kinds`)
    refusal: tuple[str, ...] | None = None
    # The protection is a refusal to start the run at all (AGENTBOX_HOME inside a writable workspace): an attack
    # whose run Agent-Box refused with a message matching this expression, its oracle seeing nothing, is blocked,
    # the refusal its proof; any other refusal stays an error. Its control removes the check and must escape.
    refused_at_start: str | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(f"{value!r}: ids are lower-case words joined by '-'")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "Vector":
        PermissionIntent.model_validate(fill(self.intent, _SAMPLE))  # a port or address placeholder is filled per run
        if self.secrets:
            from agentbox.core.profile import SecretBinding

            for binding in fill(self.secrets, _SAMPLE).values():
                SecretBinding.model_validate(binding)
        PermissionIntent.model_validate(fill(self.control.intent, _SAMPLE))
        if self.control.harness_intent is not None:
            PermissionIntent.model_validate(fill(self.control.harness_intent, _SAMPLE))
        if "sandbox" in self.run_layers() and self.sandbox_argv(self.steps, self.sandbox_command) is None:
            raise ValueError("a vector run through the sandbox layer needs a sandbox_command (or only shell steps)")
        if ({"harness", "composed"} & set(self.run_layers())) and not self.steps and self.oracle.kind != "not_offered":
            raise ValueError("a vector run through a harness needs scripted steps")
        if bool(self.kernel_needs) != (self.enosys is not None):
            raise ValueError(
                "a vector that needs a kernel feature (`kernel_needs`) names the path its attack creates "
                "when the kernel answers ENOSYS (`enosys`), and only such a vector does"
            )
        if self.refusal is not None:
            unknown = refusal_table().undefined(self.refusal)
            if unknown or not self.refusal:
                raise ValueError(
                    f"refusal: {', '.join(unknown) or 'an empty list'}: not a refusal kind of "
                    f"agentbox/data/refusal_kinds.yaml"
                )
        if ("acp" in self.run_layers()) != (self.acp is not None) or ("acp" in self.run_layers() and not self.steps):
            raise ValueError(
                "a vector run through the ACP endpoint needs `acp` and the protocol test agent's steps, "
                "and only such a vector has `acp`"
            )
        return self

    def run_layers(self) -> tuple[Layer, ...]:
        if self.layers is not None:
            return self.layers
        has_sandbox = self.sandbox_argv(self.steps, self.sandbox_command) is not None
        return ("sandbox", "harness", "composed") if has_sandbox else ("harness", "composed")

    @staticmethod
    def host_argv(steps: Iterable[Mapping[str, Any]]) -> tuple[str, ...] | None:
        """The steps as one plain command, for a control that runs on the host: shell steps as they are, a
        file tool's write or read as the same act by `sh` (None when a step has no such equivalent)."""
        import shlex

        parts = []
        for step in steps:
            if "shell" in step:
                parts.append(step["shell"]["command"])
            elif "write_file" in step:
                parts.append(
                    f"printf %s {shlex.quote(step['write_file']['content'])} > "
                    f"{shlex.quote(step['write_file']['path'])}"
                )
            elif "read_file" in step:
                parts.append(f"cat {shlex.quote(step['read_file']['path'])}")
            elif isinstance(step.get("native_call", {}).get("arguments", {}).get("cmd"), str):
                parts.append(step["native_call"]["arguments"]["cmd"])  # a native command tool's command
            else:
                return None
        return ("sh", "-c", "; ".join(parts)) if parts else None

    @staticmethod
    def sandbox_argv(steps: Sequence[Mapping[str, Any]], command: Iterable[str] | None) -> tuple[str, ...] | None:
        """The command the sandbox-alone layer runs: given, or the shell steps joined."""
        if command is not None:
            return tuple(command)
        shells = [s.get("shell", {}).get("command") for s in steps]
        if steps and all(isinstance(c, str) for c in shells):
            return ("sh", "-c", "; ".join(shells))
        return None

    @field_validator("skip_harnesses", mode="before")
    @classmethod
    def _bare_reasons(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {h: {"reason": s} if isinstance(s, str) else s for h, s in value.items()}
        return value

    def skipped_on(self, harness: str | None, version: str | None = None) -> str | None:
        """Why the vector cannot run on `harness` at `version`, or None when nothing in the catalogue says so. A skip
        of some versions only does not hold for an unknown one."""
        skip = self.skip_harnesses.get(harness) if harness is not None else None
        return skip.reason if skip is not None and skip.covers(version) else None

    def applies_to(self, harness: str | None, level: str | None = None, version: str | None = None) -> bool:
        """Whether the vector belongs to `harness`'s claims (None: the sandbox alone) at `version` as run by
        `level`."""
        if level is not None and self.privileges and level not in self.privileges:
            return False
        if self.acp is not None:
            return (
                harness is None
            )  # the ACP endpoint's own vector: the protocol test agent, never a harness, attempts it
        if harness is None:
            return True
        return (not self.harnesses or harness in self.harnesses) and self.skipped_on(harness, version) is None

    def skip_reason(self, harness: str | None, level: str | None = None, version: str | None = None) -> str:
        if level is not None and self.privileges and level not in self.privileges:
            return (
                f"{self.id} threatens only a sandbox started as {', '.join(self.privileges)}: the kernel refuses it "
                f"to anyone else"
            )
        skipped = self.skipped_on(harness, version)
        if skipped is not None:
            build = f"{harness} {version}" if version else harness
            return f"{self.id} cannot run on {build}: {skipped}"
        return f"{self.id} is specific to {', '.join(self.harnesses)}"


def kernel_lacks(vector: Vector) -> tuple[KernelFeature, ...]:
    """The kernel features `vector` needs that this host's kernel lacks (`kernel_lacks_here`)."""
    here = kernel_lacks_here(vector.kernel_needs)
    return tuple(f for f in vector.kernel_needs if f in here)


def lacking_text(features: Iterable[str]) -> str:
    """What a kernel lacking `features` lacks, in words: `no module loader`."""
    return " and ".join(f"no {KERNEL_FEATURES[f]}" for f in sorted(features))


def condition_text(features: Iterable[str]) -> str:
    """The condition a claim resting on inapplicable vectors carries: `where the kernel has no module loader`."""
    return f"where the kernel has {lacking_text(features)}"


class Catalogue:
    def __init__(self, vectors: list[Vector], digest: str):
        self.vectors = vectors
        self.digest = digest

    def by_id(self, vector_id: str) -> Vector:
        return next(v for v in self.vectors if v.id == vector_id)

    def for_capability(
        self, capability: str, harness: str | None = None, level: str | None = None, version: str | None = None
    ) -> list[Vector]:
        return [v for v in self.vectors if v.capability == capability and v.applies_to(harness, level, version)]

    @cached_property
    def capabilities(self) -> list[str]:
        return sorted({v.capability for v in self.vectors})


def load_catalogue(directory: str | Path) -> Catalogue:
    import yaml

    base = Path(directory)
    vectors: list[Vector] = []
    h = hashlib.sha256()
    for path in sorted(base.glob("*.yaml")):
        raw = path.read_bytes()
        h.update(path.name.encode() + b"\0" + raw)
        try:
            entries = yaml.safe_load(raw) or []
        except yaml.YAMLError as exc:
            raise InputError(f"malformed YAML: {exc}", file=str(path)) from None
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise InputError("a catalogue file is a list of vectors (`- id: ...`), one mapping each", file=str(path))
        for n, entry in enumerate(entries):
            try:
                vectors.append(Vector.model_validate(entry))
            except ValidationError as exc:
                from agentbox.core.profile import validation_message

                raise InputError(
                    validation_message(exc), file=str(path), field=f"[{n}] {entry.get('id', '?')}"
                ) from None
    ids = [v.id for v in vectors]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise InputError(f"duplicate vector ids: {', '.join(dupes)}", file=str(base))
    return Catalogue(vectors, h.hexdigest())


_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


class _Sample(dict[str, str]):
    """Any placeholder, as a value its field accepts: the addresses as addresses, anything else as "1"
    (a port, a host label and a path part at once)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> str:
        return "1"


_SAMPLE = _Sample(loopback="127.0.0.2")


def fill(value: Any, values: dict[str, str]) -> Any:
    """Replace {name} in every string of `value`; an unknown name is an error, never left in place."""
    if isinstance(value, str):

        def one(m: re.Match[str]) -> str:
            if m.group(1) not in values:
                raise KeyError(f"unknown placeholder {{{m.group(1)}}}")
            return str(values[m.group(1)])

        return _PLACEHOLDER.sub(one, value)
    if isinstance(value, dict):
        return {fill(k, values): fill(v, values) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(fill(v, values) for v in value)
    return value


def expected_outcome(
    vector: Vector,
    layer: Layer,
    harness_report: CapabilityReport | None,
    sandbox_report: CapabilityReport | None,
    endpoint_report: CapabilityReport | None = None,
    level: str | None = None,
) -> Literal["blocked", "escaped"]:
    """What the declarations predict for `vector` in `layer`.

    A layer blocks when it declares the capability exact, or partial without naming the vector's
    surface as a bypass (or naming the vector among those it holds against all the same). The composed
    plan blocks when either of its layers does; the `acp` layer when the ACP endpoint (`endpoint_report`) does,
    since the client acts outside the sandbox. `level`: who runs it (root | user; None: unknown, read as root,
    which all evidence before that was recorded was): a user's harness layer meets the kernel's own refusals
    (`kernel_refuses_users`) and not the holds a harness shows only to root (`holds_against_as_root`).
    """

    def blocks(report: CapabilityReport | None) -> bool:
        if report is None or report.support == "unsupported":
            return False
        holds = (
            *getattr(report, "holds_against", ()),
            *(getattr(report, "holds_against_as_root", ()) if level != "user" else ()),
        )
        return report.support == "exact" or vector.surface not in report.bypass_surfaces or vector.id in holds

    if layer == "harness" and level == "user" and vector.kernel_refuses_users:
        return "blocked"

    if layer == "sandbox":
        return "blocked" if blocks(sandbox_report) else "escaped"
    if layer == "acp":
        return "blocked" if blocks(endpoint_report) else "escaped"
    if layer == "harness":
        return "blocked" if blocks(harness_report) else "escaped"
    return "blocked" if blocks(harness_report) or blocks(sandbox_report) else "escaped"
