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

from .adapters import get_adapter
from .adapters.base import Probe
from .compiler import compile_plan
from .hot import run_root
from .mcp_inventory import for_profile
from .plan import CompileResult, EffectiveRunPlan
from .profile import LoadedProfile
from .profile_state import keep, restore
from .sandbox import bwrap
from .sandbox.session import (MARKER, cleanup, entry_from_plan, environment, kill_marked, materialize,
                              settle_key_approvals, write_config)
from .sandbox.startup import Started, read_decisions
from .sandbox.surfaces import discover

__all__ = ["RunRequest", "RunOutcome", "Prepared", "HarnessCommand", "prepared", "run_harness", "kill_marked", "MARKER"]

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


def _write_artifacts(artifacts, config_dir: str) -> list[str]:
    return write_config({a.path: a.content for a in artifacts}, config_dir)


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
    """Compile, materialize and wire up a run; afterwards stop the egress proxy, kill leftovers, remove the config.

    `command` gives the harness argv from the compiled result (default: the adapter's headless
    one-shot run of `req.prompt`); ACP and interactive runs pass their own. It may return a
    `HarnessCommand` to add variables and read-only binds (e.g. an ACP adapter's install folder).
    """
    run_dir = tempfile.mkdtemp(prefix="agentbox-run-", dir=run_root())  # where every run keeps its own (hot.run_root)
    run_id = secrets.token_hex(8)
    adapter = get_adapter(req.loaded.profile.harness)
    started = None
    try:
        profile = req.loaded.profile
        asked = for_profile(profile, home=req.home).compile_args()
        if req.layer == "composed":
            plan = compile_plan(req.loaded, req.workspace, probe=req.probe, home=req.home,
                                ro_binds=req.ro_binds, rw_binds=req.rw_binds, **asked)
        else:
            plan = compile_plan(req.loaded, req.workspace, probe=req.probe, home=req.home, **asked,
                                config_home=os.path.join(run_dir, "config"), tmpdir=os.path.join(run_dir, "tmp"),
                                sandboxed=False)
        os.makedirs(os.path.join(run_dir, "config"), exist_ok=True)
        os.makedirs(os.path.join(run_dir, "tmp"), exist_ok=True)
        # a headless run's own config: the plan's, but for what needs a person at the terminal
        artifacts = _write_artifacts(plan.native.artifacts if command is not None else
                                     adapter.headless_artifacts(plan.native), os.path.join(run_dir, "config"))
        if command is None:
            launch = HarnessCommand([req.probe.binary, *adapter.headless_argv(plan.native, req.prompt)])
        else:
            got = command(plan.native)
            launch = got if isinstance(got, HarnessCommand) else HarnessCommand(list(got))
        if req.layer == "composed" and launch.ro_binds:  # the binds are known only now: compile again
            plan = compile_plan(req.loaded, req.workspace, probe=req.probe, home=req.home,
                                ro_binds=(*req.ro_binds, *launch.ro_binds), rw_binds=req.rw_binds, **asked)
        harness_argv = launch.argv
        req_env = plan.native.requirements
        source = os.environ if req.host_env is None else req.host_env
        extra = {**req.extra_env, **launch.env}
        if req.layer == "composed":
            masks = discover(plan.cwd, plan.profile, req_env.surfaces, bwrap.hidden_roots(req_env, req.home))
            entry = entry_from_plan(plan, masks)
            if req.entry_hook is not None:
                entry = req.entry_hook(entry)
            bwrap.bwrap_binary()  # a missing bwrap is a SandboxError here, not a failed exec later
            materialize({**entry, "config": {}}, run_dir)  # the config is written above, once
            env = environment(entry, run_id, source, extra)
            # the proxy runs before the harness does; it alone holds the real credentials, the run gets placeholders
            started = Started(entry, run_dir, run_id, req.resolve, env=env, source={**source, **extra},
                              upstream_ca=req.upstream_ca)
            full = [*started.argv, *harness_argv]
        else:
            env = dict(source)  # the harness alone inherits everything, as it would when started by hand
            env.update(extra)
            env[MARKER] = run_id
            # PWD too: a harness that trusts $PWD over getcwd() would otherwise work in the caller's folder
            env.update({"HOME": req.home, "TMPDIR": os.path.join(run_dir, "tmp"), "PWD": plan.cwd})
            env.update(plan.native.env)
            full = harness_argv
        # as a launch does: the profile named the model key, so the harness's first-run question about it is answered
        settle_key_approvals({"key_approvals": [a.model_dump(mode="json") for a in plan.native.key_approvals]},
                             run_dir, env)
        states = {"state_files": [s.model_dump(mode="json") for s in plan.native.state_files]}
        run = Prepared(argv=full, env=env, cwd=plan.cwd, plan=plan, run_dir=run_dir, run_id=run_id,
                       artifacts=artifacts, started=started)
        if req.state_dir is not None:
            run.state_notes.extend(restore(states, run_dir, req.state_dir))
        yield run
        if req.state_dir is not None:
            kill_marked(run_id, NAMESPACE_GRACE)  # nothing of the run writes its state any more
            run.state_notes.extend(keep(states, run_dir, req.state_dir))
    finally:
        cleanup(run_id, run_dir, started, keep_run_dir=req.keep_run_dir)


# How long a run's processes get to end with its PID namespace before they count as outliving it (only
# spent when some process is still there: the kernel ends a namespace in milliseconds).
NAMESPACE_GRACE = 3.0


def run_harness(req: RunRequest) -> RunOutcome:
    """A headless one-shot run, bounded by `req.timeout`; the process group is killed on timeout."""
    with prepared(req) as run:
        start = time.monotonic()
        proc = subprocess.Popen(run.argv, cwd=run.cwd, env=run.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, text=True, pass_fds=run.pass_fds)
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
        return RunOutcome(exit_code=None if timed_out else proc.returncode, stdout=out, stderr=err, elapsed=elapsed,
                          timed_out=timed_out, plan=run.plan, argv=run.argv, artifacts=run.artifacts,
                          run_dir=run.run_dir, leftovers=leftovers, egress=run.end_egress(), failure=failure)
