"""One bounded run of a real harness: a request in, an outcome out, the whole process tree gone after.

Layers: `composed` runs the compiled plan inside bubblewrap, with the egress proxy on the host for
the run's length (its decisions come back in the outcome); `harness` runs the same native config
with no OS sandbox (the harness alone). Every process of a run carries a marker variable, so the
run's leftovers are found and killed even when they left its session.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Literal

from agentbox.compile.adapters import get_adapter
from agentbox.compile.adapters.base import Probe
from agentbox.compile.compiler import compile_plan
from agentbox.hot import run_root
from agentbox.compile.mcp_inventory import for_profile
from agentbox.core.plan import CompileResult, EffectiveRunPlan
from agentbox.core.profile import LoadedProfile
from agentbox.run.profile_state import keep, restore
from agentbox.sandbox.backend import get_backend
from agentbox.run.lifecycle import NAMESPACE_GRACE, ProxyDied, sandboxed
from agentbox.sandbox.session import (
    MARKER,
    cleanup,
    entry_from_plan,
    kill_marked,
    settle_key_approvals,
    start_scoped,
    write_config,
)
from agentbox.sandbox.startup import Started, read_decisions
from agentbox.sandbox.surfaces import discover

__all__ = [
    "RunRequest",
    "RunOutcome",
    "Prepared",
    "HarnessCommand",
    "prepared",
    "run_harness",
    "kill_marked",
    "MARKER",
    "NAMESPACE_GRACE",
]

Layer = Literal["composed", "harness"]


@dataclass
class RunRequest:
    loaded: LoadedProfile
    probe: Probe
    workspace: str
    home: str
    prompt: str
    layer: Layer = "composed"
    timeout: float = 120.0
    extra_env: dict[str, str] = field(default_factory=dict)
    keep_run_dir: bool = False
    host_env: dict[str, str] | None = None  # the environment the run starts from (default: this process's)
    ro_binds: tuple[str, ...] = ()  # host paths that must stay visible in the composed layer
    rw_binds: tuple[str, ...] = ()  # host paths the composed layer may write (observation logs)
    # name -> address for the egress proxy (a testing aid: names the host's DNS does not know)
    resolve: dict[str, str] = field(default_factory=dict)
    # a CA bundle the egress proxy verifies upstream TLS against instead of the host's (a testing aid: the suite's
    # own TLS listeners)
    upstream_ca: str | None = None
    # A testing seam: the conformance suite's controls take one protection out of the composed run's entry
    # (agentbox.testing.weakened) to prove that a vector's oracle sees the side effect. Launch never sets it.
    entry_hook: Callable[[dict], dict] | None = None
    # The profile's kept answers (`profile_state`): the run starts from them and keeps its own at the end, as a
    # launch does. None (the suite's runs): the run starts from the compiled files alone and keeps nothing.
    state_dir: str | None = None
    # Testing aids: the run's id (its processes' marker) and its private folder (new, empty, made by the caller),
    # chosen by a caller who watches them as the run goes (a batched session of the negative suite); None: made here
    run_id: str | None = None
    run_dir: str | None = None


@dataclass
class RunOutcome:
    exit_code: int | None
    stdout: str
    stderr: str
    elapsed: float
    timed_out: bool
    plan: EffectiveRunPlan
    argv: list[str]
    artifacts: list[str]
    run_dir: str
    leftovers: list[tuple[int, str]]  # (pid, command line) of processes that outlived the harness
    egress: list[dict] = field(default_factory=list)  # the egress proxy's decisions (composed runs)
    failure: str | None = None  # the run was ended from outside (the egress proxy died)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.failure is None


@dataclass
class Prepared:
    """A run ready to start: the full argv (sandbox, relay, harness), its environment and folders."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    plan: EffectiveRunPlan
    run_dir: str
    run_id: str
    artifacts: list[str]
    started: Started | None = None  # composed runs: the egress proxy and the filter's descriptor
    # with a state_dir: what `profile_state` said at the start (a kept state it could not read) and at the end
    state_notes: list[str] = field(default_factory=list)

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return self.started.pass_fds if self.started is not None else ()

    def end_egress(self) -> list[dict]:
        """Stop the egress proxy (its open connections are logged then) and return its decisions."""
        if self.started is None:
            return []
        self.started.close()
        return read_decisions(self.run_dir)


@dataclass(frozen=True)
class HarnessCommand:
    """What a custom command starts: its argv, variables it adds, and host paths it must see."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ro_binds: tuple[str, ...] = ()


Command = Callable[[CompileResult], "list[str] | HarnessCommand"]


@contextmanager
def prepared(req: RunRequest, command: Command | None = None) -> Iterator[Prepared]:
    """Compile and wire up a run; the composed layer runs in the lifecycle `launch` and `acp` use
    (`run.lifecycle.sandboxed`), the harness layer in a bare run folder; afterwards the run's processes are gone
    and its folder removed.

    `command` gives the harness argv from the compiled result (default: the adapter's headless
    one-shot run of `req.prompt`); ACP and interactive runs pass their own. It may return a
    `HarnessCommand` to add variables and read-only binds (e.g. an ACP adapter's install folder).
    """
    adapter = get_adapter(req.loaded.profile.harness)
    asked = for_profile(req.loaded.profile, home=req.home, workspace=req.workspace).compile_args()
    if req.layer == "harness":
        with _alone(req, adapter, asked, command) as run:
            yield run
        return
    plan = compile_plan(
        req.loaded, req.workspace, probe=req.probe, home=req.home, ro_binds=req.ro_binds, rw_binds=req.rw_binds, **asked
    )
    launch = _command(req, adapter, plan, command)
    if launch.ro_binds:  # the binds are known only now: compile again
        plan = compile_plan(
            req.loaded,
            req.workspace,
            probe=req.probe,
            home=req.home,
            ro_binds=(*req.ro_binds, *launch.ro_binds),
            rw_binds=req.rw_binds,
            **asked,
        )
    native = plan.native.requirements
    backend = get_backend(plan.sandbox.backend)
    masks = discover(plan.cwd, plan.profile, native.surfaces, backend.hidden_roots(native, req.home))
    entry = entry_from_plan(plan, masks)
    if command is None:  # a headless run's own config: the plan's, but for what needs a person at the terminal
        entry["config"] = {a.path: a.content for a in adapter.headless_artifacts(plan.native)}
    if req.entry_hook is not None:
        entry = req.entry_hook(entry)
    backend.binary()  # a missing sandbox program is a SandboxError here, not a failed exec later
    notes: list[str] = []
    try:
        with sandboxed(
            entry,
            req.run_dir or tempfile.mkdtemp(prefix="agentbox-run-", dir=run_root()),
            run_id=req.run_id,
            source=req.host_env,
            extra_env={**req.extra_env, **launch.env},
            resolve=req.resolve,
            upstream_ca=req.upstream_ca,
            state_dir=req.state_dir,
            keep_run_dir=req.keep_run_dir,
            tell=notes.append,
        ) as run:
            yield Prepared(
                argv=[*run.argv, *launch.argv],
                env=run.env,
                cwd=plan.cwd,
                plan=plan,
                run_dir=run.run_dir,
                run_id=run.run_id,
                artifacts=run.artifacts,
                started=run.started,
                state_notes=notes,
            )
    except ProxyDied:
        pass  # the outcome names it (`failure`, from the proxy's notes)


def _command(req: RunRequest, adapter, plan: EffectiveRunPlan, command: Command | None) -> HarnessCommand:
    if command is None:
        return HarnessCommand([req.probe.binary, *adapter.headless_argv(plan.native, req.prompt)])
    got = command(plan.native)
    return got if isinstance(got, HarnessCommand) else HarnessCommand(list(got))


@contextmanager
def _alone(req: RunRequest, adapter, asked: dict, command: Command | None) -> Iterator[Prepared]:
    """The harness layer: the same native config with no OS sandbox, the harness inheriting everything, as it
    would when started by hand; its processes carry the marker all the same."""
    # where every run keeps its own (hot.run_root)
    run_dir = req.run_dir or tempfile.mkdtemp(prefix="agentbox-run-", dir=run_root())
    run_id = req.run_id or secrets.token_hex(8)
    try:
        plan = compile_plan(
            req.loaded,
            req.workspace,
            probe=req.probe,
            home=req.home,
            **asked,
            config_home=os.path.join(run_dir, "config"),
            tmpdir=os.path.join(run_dir, "tmp"),
            sandboxed=False,
        )
        os.makedirs(os.path.join(run_dir, "tmp"), exist_ok=True)
        artifacts = write_config(
            {
                a.path: a.content
                for a in (plan.native.artifacts if command is not None else adapter.headless_artifacts(plan.native))
            },
            os.path.join(run_dir, "config"),
        )
        os.makedirs(os.path.join(run_dir, "config"), exist_ok=True)
        launch = _command(req, adapter, plan, command)
        env = dict(os.environ if req.host_env is None else req.host_env)
        env.update({**req.extra_env, **launch.env})
        env[MARKER] = run_id
        # PWD too: a harness that trusts $PWD over getcwd() would otherwise work in the caller's folder
        env.update({"HOME": req.home, "TMPDIR": os.path.join(run_dir, "tmp"), "PWD": plan.cwd})
        env.update(plan.native.env)
        # as a launch does: the profile named the model key, so the harness's first-run question about it is answered
        settle_key_approvals(
            {"key_approvals": [a.model_dump(mode="json") for a in plan.native.key_approvals]}, run_dir, env
        )
        run = Prepared(
            argv=launch.argv, env=env, cwd=plan.cwd, plan=plan, run_dir=run_dir, run_id=run_id, artifacts=artifacts
        )
        states = {"state_files": [s.model_dump(mode="json") for s in plan.native.state_files]}
        if req.state_dir is not None:
            run.state_notes.extend(restore(states, run_dir, req.state_dir))
        yield run
        if req.state_dir is not None:
            kill_marked(run_id, NAMESPACE_GRACE)  # nothing of the run writes its state any more
            run.state_notes.extend(keep(states, run_dir, req.state_dir))
    finally:
        cleanup(run_id, run_dir, keep_run_dir=req.keep_run_dir)


def run_harness(req: RunRequest) -> RunOutcome:
    """A headless one-shot run, bounded by `req.timeout`; the process group is killed on timeout."""
    with prepared(req) as run:
        start = time.monotonic()
        proc = start_scoped(
            run.argv,
            lambda argv: subprocess.Popen(
                argv,
                cwd=run.cwd,
                env=run.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                text=True,
                pass_fds=run.pass_fds,
            ),
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=req.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        elapsed = time.monotonic() - start
        leftovers = kill_marked(run.run_id, grace=NAMESPACE_GRACE)
        failure = "; ".join(run.started.notes) if run.started is not None and run.started.notes else None
        return RunOutcome(
            exit_code=None if timed_out else proc.returncode,
            stdout=out,
            stderr=err,
            elapsed=elapsed,
            timed_out=timed_out,
            plan=run.plan,
            argv=run.argv,
            artifacts=run.artifacts,
            run_dir=run.run_dir,
            leftovers=leftovers,
            egress=run.end_egress(),
            failure=failure,
        )
