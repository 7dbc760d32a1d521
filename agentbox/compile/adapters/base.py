"""The harness adapter contract. Core talks to harnesses only through this class.

An adapter probes a binary, declares what it enforces (from its data file), compiles an intent into
native artifacts purely, names its tool vocabulary for the scripted model, and explains itself.
Harness quirks live in the subclass; nothing here names a harness.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from abc import ABC, abstractmethod
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from agentbox.harnesses.build_identity import BuildFiles, Identity, identify, single_file
from agentbox.core.capability import CapabilityReport, Declarations, capability_id, load_declarations, weakest
from agentbox.errors import HarnessError
from agentbox.hot import agentbox_home, package_fingerprint, sha256, stat_key, write_json_atomic
from agentbox.core.intent import ITEMS, PermissionIntent
from agentbox.core.plan import (
    Artifact,
    CompileContext,
    CompileResult,
    Credential,
    KeyApproval,
    LayerCoverage,
    Placeholder,
    RuntimeRequirements,
    StateFile,
    Surface,
)
from agentbox.core.profile import Profile
from agentbox.compile.adapters.native import endpoint

__all__ = ["Compilation", "HarnessAdapter", "Probe", "ToolCall", "ToolVocabulary", "WireApi"]

WireApi = Literal["anthropic-messages", "openai-responses", "openai-chat"]


class Probe(BaseModel):
    model_config = ConfigDict(frozen=True)
    harness: str
    binary: str
    version: str | None
    sha256: str  # the build digest: what actually runs, not the launcher (`build_identity`)
    dialect: str
    raw: str
    in_tested_range: bool
    problem: str | None = None


class ToolCall(BaseModel):
    """A native tool call template: string values may hold {placeholders} of the abstract step."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str
    # The bare string "{arguments}" means: the native arguments are the step's own arguments object.
    arguments: dict[str, Any] | Literal["{arguments}"]


class ToolVocabulary(BaseModel):
    """How the scripted model asks this harness to act: one template per abstract step."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    wire_api: WireApi
    # a model name for which the harness offers every tool (some harnesses pick tools by model family)
    scripted_model_name: str | None = None
    shell: ToolCall | None = None
    write_file: ToolCall | None = None
    edit_file: ToolCall | None = None
    read_file: ToolCall | None = None
    fetch_url: ToolCall | None = None
    mcp_call: ToolCall | None = None  # tool may use {server} and {tool}; arguments may be "{arguments}"
    # How the harness's own output records a call it refused and never answered to the model (OpenCode ends
    # a headless run at an `ask`): a match proves the attempt met its policy; regular expressions
    refusals: tuple[str, ...] = ()
    # How the harness answers a call it never ran: arguments its tool rejects (a wrong name, a missing field), a
    # call it does not support in this mode. Such a call met no permission mechanism, so an attempt that got one
    # proves nothing, and neither does its "blocked" (regular expressions; one with a `tool` group counts only
    # when that tool was offered in the run)
    never_ran: tuple[str, ...] = ()
    # What the harness makes in the workspace or home while it runs, by itself, relative to either ("x/": x and
    # everything below it): a batched session's watch does not hold these against the step that was playing
    own_state: tuple[str, ...] = ()
    # What it writes in its config home (the run's, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`...) as it runs, relative to
    # it (its transcript, logs, session database; `*` matches within a name): never what it reads back as a command
    # runs (a shell snapshot, its settings), which a member changing would change for the next one
    config_state: tuple[str, ...] = ()
    # What it writes in its $TMPDIR as it runs, relative to it: files only (`*` matches within a name), never a
    # folder on their way, whose mode a member changing would fail the harness's next write for the next member
    tmp_state: tuple[str, ...] = ()
    # The modes in which a batched session cannot stand for its members, and why: the harness itself rewrites there,
    # as it runs, what it reads back (a settings file, its shell's saved state), which a member could have rewritten
    # too, and no look can tell the two apart. Its vectors run alone in them.
    unbatched_modes: dict[str, str] = {}


class Compilation:
    """The state of one compile, which the adapter's steps fill in and the base turns into a CompileResult.

    Mutable on purpose: each step (`HarnessAdapter.compile_<step>`) adds its item's native keys, owners,
    mechanism, warnings and errors here, so no step has to hand its part back through return values.
    """

    def __init__(self, adapter: HarnessAdapter, profile: Profile, context: CompileContext) -> None:
        self.profile = profile
        self.context = context
        self.intent = profile.permission_intent
        self.version = context.harness_version
        self.dialect = adapter.declarations.dialect_for(self.version)
        self.config: dict[str, Any] = {}  # the main native config file, as the adapter builds it
        self.owners: dict[str, str] = {}  # native key -> the intent item it serves (a config_patch may not undo it)
        self.warnings: list[str] = []
        self.errors: list[str] = []
        self.mechanisms: dict[str, str] = {}  # item -> how this plan enforces it (an item left out: "none")
        self.env: dict[str, str] = {}  # the harness's environment (also what the sandbox sets)
        # the model key's variable, which the sandbox passes through (None: no key)
        self.key_env: str | None = profile.model.api_key_env
        # the variable the harness sends its model key from, which the model route swaps (None: it sends none)
        self.credential_env: str | None = profile.model.api_key_env
        self.artifacts: tuple[Artifact, ...] = ()
        self.argv: tuple[str, ...] = ()
        self.key_approvals: tuple[KeyApproval, ...] = ()
        self.state_files: tuple[StateFile, ...] = ()
        # item -> [(reason, extra bypass surfaces)]: where this plan compiled only part of the declared mechanism
        self.degraded: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        # item -> coverage fields replaced: where this plan leaves the item to the OS sandbox altogether
        self.delegated: dict[str, dict[str, Any]] = {}
        # what an adapter's steps share beyond these (its own rule lists, a sandbox they fill together)
        self.native: Any = None

    def degrade(self, item: str, reason: str, extra: tuple[str, ...] = ()) -> None:
        """Lower the item's declared coverage to at most partial, naming why and what else bypasses it."""
        self.degraded.setdefault(item, []).append((reason, extra))

    def delegate(self, item: str, reason: str, **also: Any) -> None:
        """Declare the item unsupported at the harness layer in this plan: the OS sandbox holds it instead.
        A later call for the same item wins field by field (`also` replaces more coverage fields)."""
        update = {"support": "unsupported", "bypass_surfaces": (), "reason": reason, **also}
        self.delegated[item] = {**self.delegated.get(item, {}), **update}

    def primary(self, contributors: list[str]) -> str:
        """The item a multi-purpose key is recorded under: the first required contributor, else the first."""
        return next((i for i in contributors if self.intent.item(i).requirement == "required"), contributors[0])


def _degrade(cov: LayerCoverage, reason: str, extra: tuple[str, ...]) -> LayerCoverage:
    """Lower a declared coverage to at most partial where this plan could not compile the full mechanism."""
    if cov.support == "unsupported":
        return cov
    bypass = tuple(dict.fromkeys((*cov.bypass_surfaces, *extra)))
    # the declared scope describes the whole mechanism (e.g. Bash in Claude Code's sandbox); this plan
    # compiled only part of it, so `explain` must name what the plan holds, not what the harness could
    return cov.model_copy(
        update={
            "support": weakest(cov.support, "partial"),
            "bypass_surfaces": bypass,
            "enforcement_scope": f"{cov.mechanism} only, in this plan",
            "reason": f"{cov.reason}; {reason}" if cov.reason else reason,
        }
    )


class HarnessAdapter(ABC):
    name: ClassVar[str]
    binary_name: ClassVar[str]
    version_args: ClassVar[tuple[str, ...]] = ("--version",)
    version_pattern: ClassVar[str]  # a regex with a `version` group, matched against the output
    # How the harness sends its model key (the headers the model route swaps the real key into) and what a key
    # looks like to it (the placeholder it gets inside the sandbox). Most speak OpenAI's wire: a bearer token.
    key_headers: ClassVar[tuple[str, ...]] = ("Authorization: Bearer {value}",)
    key_placeholder: ClassVar[Placeholder] = Placeholder(prefix="sk-agentbox-", length=48)

    # The adapter's data, in the packaged layout: capabilities/NAME.yaml (declarations), vocabulary/NAME.yaml,
    # packages.yaml (its install recipe), acp.yaml (its ACP entry, when it has one), tui.yaml (how its TUI is
    # driven, when it can be). An adapter of another distribution points this at a folder of its own.
    data_dir: ClassVar[Path] = Path(__file__).parents[2] / "data"

    @cached_property
    def declarations(self) -> Declarations:
        return load_declarations(self.name, self.data_dir)  # its own data, registered or not

    @cached_property
    def tool_vocabulary(self) -> ToolVocabulary:
        import yaml

        path = self.data_dir / "vocabulary" / f"{self.name}.yaml"
        return ToolVocabulary.model_validate(yaml.safe_load(path.read_text()))

    def vocabulary_for(self, version: str | None) -> ToolVocabulary:
        """The vocabulary of one version; adapters whose tool names changed across versions override it."""
        return self.tool_vocabulary

    @property
    def surfaces(self) -> tuple[Surface, ...]:
        """Every known project config surface, not only this harness's: a harness may start another
        (a shell runs `claude`), and a masked file costs nothing while an unmasked one can widen a run."""
        from agentbox.sandbox.surfaces import all_surfaces

        return all_surfaces()

    # -- probe -----------------------------------------------------------------------------------
    def parse_version(self, output: str) -> str | None:
        match = re.search(self.version_pattern, output)
        return match.group("version") if match else None

    def build_files(self, binary: str) -> BuildFiles:
        """The files that run when `binary` is invoked: by default the file itself, symlinks resolved.

        Adapters whose launcher starts something else (a native binary of a platform package, an
        installed Python distribution) override it: evidence is keyed by the digest of these files."""
        return single_file(binary)

    def probe(self, binary: str, timeout: float = 30.0, identity: Identity | None = None) -> Probe:
        """Run the binary's version command and identify its build (`identity`, when the caller has it)."""
        path = str(Path(binary).resolve()) if Path(binary).exists() else binary
        try:
            done = subprocess.run(
                [binary, *self.version_args],
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                env=self.probe_env(),
            )
        except FileNotFoundError:
            raise HarnessError(f"{self.name}: binary {binary} not found") from None
        except subprocess.TimeoutExpired:
            raise HarnessError(f"{self.name}: `{binary} {' '.join(self.version_args)}` timed out") from None
        raw = (done.stdout + done.stderr).strip()
        version = self.parse_version(raw) if done.returncode == 0 else None
        problem = None
        if version is None:
            problem = (
                f"cannot parse a version from `{' '.join(self.version_args)}` (exit {done.returncode}): {raw[:200]!r}"
            )
        elif not self.declarations.in_tested_range(version):
            problem = (
                f"version {version} is outside the tested range {self.declarations.tested_range}; "
                "security capabilities are at most partial"
            )
        identity = identity or identify(self.build_files(path))
        return Probe(
            harness=self.name,
            binary=path,
            version=version,
            sha256=identity.sha256,
            dialect=self.declarations.dialect_for(version),
            raw=raw,
            in_tested_range=version is not None and self.declarations.in_tested_range(version),
            problem=problem,
        )

    def remembered_probe(self, binary: str) -> tuple[Probe, Identity]:
        """The probe and the build's identity; the probe (which runs the binary) is remembered while the
        launcher's stat, the build digest and this package's own files are unchanged."""
        resolved = os.path.realpath(binary)
        identity = identify(self.build_files(binary))
        key = sha256(f"{self.name}\0{resolved}\0{package_fingerprint()}".encode()).hexdigest()
        memo = os.path.join(agentbox_home(), "cache", "probe", f"{key}.json")
        stat = stat_key(resolved)
        try:
            with open(memo) as f:
                saved = json.load(f)
            probe = Probe.model_validate(saved["probe"])
            if stat is not None and saved["stat"] == stat and probe.sha256 == identity.sha256:
                return probe, identity
        except (OSError, ValueError, KeyError):
            pass
        probe = self.probe(binary, identity=identity)
        if stat is not None and stat_key(resolved) == stat:
            write_json_atomic(memo, {"stat": stat, "probe": probe.model_dump()})
        return probe, identity

    def known_probe(self, binary: str) -> tuple[Probe, Identity]:
        """`remembered_probe`, for a command that must not go on without a version: a binary that does not
        answer as this harness (a stand-in such as /bin/true, a broken install) is a harness binary problem
        (exit 5), never a plan compiled for "version unknown" in the oldest dialect."""
        probe, identity = self.remembered_probe(binary)
        if probe.version is None:
            tested = ", ".join(self.declarations.tested_versions) or "none declared"
            raise HarnessError(
                f"{self.name}: binary {probe.binary} does not answer as {self.name}: {probe.problem}; "
                f"give the harness binary with --binary, or install one (tested: {tested}): "
                f"agent-box harness install {self.name}@VERSION"
            )
        return probe, identity

    def probe_env(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TERM")}

    # -- declarations ----------------------------------------------------------------------------
    def capabilities(self, version: str | None, intent: PermissionIntent | None = None) -> list[CapabilityReport]:
        """Declared support per intent item (for the values `intent` asks, or every restrictive value)."""
        if intent is not None:
            ids = [capability_id(i, intent.item(i).model_dump()) for i in ITEMS]
        else:
            ids = sorted(self.declarations.capabilities)
        return [self.declarations.report(c, version) for c in ids]

    def coverage(
        self, intent: PermissionIntent, version: str | None, mechanisms: dict[str, str]
    ) -> dict[str, LayerCoverage]:
        out = {}
        for item in ITEMS:
            report = self.declarations.report(capability_id(item, intent.item(item).model_dump()), version)
            out[item] = LayerCoverage(
                layer="harness",
                support=report.support,
                mechanism=mechanisms.get(item, "none"),
                enforcement_scope=report.enforcement_scope,
                bypass_surfaces=report.bypass_surfaces,
                reason=report.reason,
            )
        return out

    # -- compile ---------------------------------------------------------------------------------
    # The steps `compile` runs, in order: the model settings and one per intent item (host_executed is the OS
    # sandbox's alone). An adapter may reorder them where its native file or its warnings need another order.
    compile_steps: ClassVar[tuple[str, ...]] = (
        "model",
        "workspace",
        "shell",
        "command_network",
        "host_home",
        "mcp",
        "environment",
    )

    def compile(self, profile: Profile, context: CompileContext) -> CompileResult:
        """Pure: the same profile and context always give the same result, byte for byte.

        A template: `start`, each of `compile_steps` (`compile_<step>`), `finish`, then the shared result. An
        adapter overrides the steps it needs (each contributes nothing by default), or `compile` whole."""
        c = Compilation(self, profile, context)
        self.start(c)
        for step in self.compile_steps:
            getattr(self, f"compile_{step}")(c)
        self.finish(c)
        return self.result(c)

    def start(self, c: Compilation) -> None:
        """Set up what several steps share (the dialect's switches, the config's first keys)."""

    def compile_model(self, c: Compilation) -> None:
        """The model, its endpoint and its key."""

    def compile_workspace(self, c: Compilation) -> None:
        """What the harness's own tools and sandbox may read and write of the workspace."""

    def compile_shell(self, c: Compilation) -> None:
        """Whether the harness offers its shell, asks before it, or denies it."""

    def compile_command_network(self, c: Compilation) -> None:
        """What the harness's fetch tools and its commands may reach."""

    def compile_host_home(self, c: Compilation) -> None:
        """Whether the harness's tools see the user's home."""

    def compile_mcp(self, c: Compilation) -> None:
        """The allowlisted MCP servers, and of each the allowlisted tools."""

    def compile_environment(self, c: Compilation) -> None:
        """Which variables the harness hands on to the commands it runs."""

    def finish(self, c: Compilation) -> None:
        """Render what the steps built into `c.artifacts` (and `c.argv`)."""

    def result(self, c: Compilation) -> CompileResult:
        """The CompileResult of a finished compilation: what every adapter's result shares."""
        intent, env = c.intent, dict(sorted(c.env.items()))
        base_url = c.profile.model.base_url
        coverage = self.coverage(intent, c.version, c.mechanisms)
        for item, update in c.delegated.items():
            coverage[item] = coverage[item].model_copy(update=update)
        for item, notes in c.degraded.items():
            for reason, extra in notes:
                coverage[item] = _degrade(coverage[item], reason, extra)
        requirements = RuntimeRequirements(
            workspace=intent.workspace.access,
            network=intent.command_network.access,
            allow_domains=intent.command_network.allow_domains,
            host_home=intent.host_home.access,
            env_allow=tuple(sorted({*intent.environment.allow, *([c.key_env] if c.key_env else [])})),
            env_set=env,
            surfaces=self.surfaces,
            model_endpoint=endpoint(base_url) if base_url else None,
        )
        return CompileResult(
            harness=self.name,
            version=c.version,
            dialect=c.dialect,
            artifacts=c.artifacts,
            argv=c.argv,
            env=env,
            requirements=requirements,
            coverage=coverage,
            warnings=tuple(c.warnings),
            errors=tuple(c.errors),
            key_approvals=c.key_approvals,
            state_files=c.state_files,
            model_credential=self.model_credential(c.credential_env),
        )

    def model_credential(self, variable: str | None) -> Credential | None:
        """The harness's model key in `variable`, as the model route must swap it (None: the harness reads none)."""
        if not variable:
            return None
        return Credential(
            variable=variable,
            headers=self.key_headers,
            placeholder=self.key_placeholder,
            source="model.api_key_env",
            required=False,
        )

    @staticmethod
    def base_url(profile: Profile, context: CompileContext) -> str | None:
        """The model base URL the harness is configured with: inside the OS sandbox the egress proxy's model route
        (which forwards to the profile's), alone the profile's own."""
        return context.model_base_url or profile.model.base_url

    def apply_patch(self, result: CompileResult, patch: dict[str, Any]) -> tuple[CompileResult, list[str]]:
        """Merge a native config_patch into the main artifact; return the result and the dotted keys changed.

        The default merges into the first artifact; adapters whose main file is elsewhere override it.
        """
        from agentbox.compile.adapters.native import merge_into_artifact

        return merge_into_artifact(result, 0, patch)

    # -- run -------------------------------------------------------------------------------------
    @abstractmethod
    def headless_argv(self, result: CompileResult, prompt: str) -> list[str]:
        """Arguments after the binary for a one-shot, non-interactive run of `prompt` with this plan."""

    def headless_artifacts(self, result: CompileResult) -> tuple[Artifact, ...]:
        """The config files a one-shot headless run writes: the plan's own, unless a setting only means something
        with a person at the terminal (how long a prompt waits for an answer nobody will type)."""
        return result.artifacts

    def interactive_argv(self, result: CompileResult, extra: list[str]) -> list[str]:
        """Arguments after the binary for an interactive (TUI) run with this plan, plus the user's `extra`."""
        return [*result.argv, *extra]

    def install_roots(self, binary: str) -> tuple[str, ...]:
        """The folders that must stay visible inside the sandbox for the binary to run."""
        resolved = Path(binary).resolve()
        for parent in resolved.parents:
            # the package folder itself, never the prefix above it: `npm i` in a home has the home as its prefix
            if parent.name in ("node_modules", "venv", ".venv"):
                return (str(parent),)
        return (str(resolved.parent),)
