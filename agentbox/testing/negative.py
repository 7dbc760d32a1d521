"""Run one escape vector through one layer, with its positive control, and turn it into evidence.

The attack runs first. An attack whose oracle saw its side effect escaped, and needs no control: the
oracle just showed that it sees the effect (so an escape costs one harness start, not two). An attack that
saw nothing is blocked only if its control, the same attempt with the protection removed, makes the same
oracle see the side effect; otherwise the outcome is `error`. A timeout, a crash, a harness error or a script
the harness did not follow to the attack step is `error` too. Only an observed side effect decides blocked or
escaped.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from agentbox.core.capability import load_declarations
from agentbox.egress.decisions import read_log
from agentbox.errors import SandboxError
from agentbox.harnesses.acp import AcpUnavailable, acp_entry, adapter_build
from agentbox.prove.claims import through_adapter
from agentbox.prove.evidence import EvidenceRecord, RunInfo, host_facts, privilege_level
from agentbox.core.refusal_kinds import Evidence, describe, expected_kinds, recognise
from agentbox.core.revision import suite_revision
from agentbox.run import lifecycle
from agentbox.sandbox import DEFAULT_BACKEND
from agentbox.sandbox.backend import get_backend
from agentbox.prove.vectors import Catalogue, Oracle, Vector, expected_outcome, fill, kernel_lacks, lacking_text
from agentbox.core.profile import LoadedProfile, Profile
from agentbox.run.harness_run import RunRequest, run_harness
from agentbox.testing.fixtures import MODEL_KEY, CanaryMcp, scripted_key_env, scripted_profile
from agentbox.testing.privilege import observed
from agentbox.testing.targets import Targets, kill_all, prepare, process_alive
from agentbox.testing.weakened import entry_hook

if TYPE_CHECKING:
    from agentbox.harnesses.agent_build import AgentBuild
    from agentbox.harnesses.installs import Installed
    from agentbox.prove.evidence import Layer, Mode, Outcome

__all__ = ["Attempt", "VectorRunner", "carried_by_headless", "expected_for", "PROTOCOL_AGENT"]

AFTER_THE_RUN = f"agent-box: {lifecycle.AFTER_THE_RUN}"  # what the run left, for the user: no refusal
PROTOCOL_AGENT = "acp-protocol-test-agent"  # who attempts an `acp`-layer vector: no harness


@dataclass
class Seen:
    """What one run left for the oracle: output and tool results, offered tools, MCP logs, survivors, and the
    egress proxy's decisions (None when the run had no proxy)."""

    texts: list[str]
    offered: set[str] = field(default_factory=set)
    canaries: dict = field(default_factory=dict)
    leftovers: list = field(default_factory=list)
    egress: list[dict] | None = None
    printed: str = ""  # what the attempt itself printed last (its tool result, or the command's output)
    # where a refusal is looked for: everything the attempt printed (the command's output; every tool result the
    # model received), the harness's own output, and the harness's policy messages (its vocabulary's refusals)
    said: str = ""
    harness_output: str = ""
    policy: tuple[str, ...] = ()
    reached: bool = True  # whether a scripted step reached the harness (False: it failed before the first)

    def tail(self, n: int = 300) -> str:
        return " ".join(self.printed.split())[-n:]


@dataclass
class Attempt:
    effect: bool | None  # None: the attempt could not be judged (infrastructure error)
    observation: str
    enosys: bool = False  # the attempt's system call was answered ENOSYS (it left the vector's `enosys` mark)
    again: str | None = None  # an error that came before any step reached the harness: worth one more try


@dataclass
class Planned:
    """One run of a vector's attack or control, its values filled in (`VectorRunner.plan`)."""

    values: dict[str, str]
    spec: Any  # the control's changes (`Vector.control`), None for the attack
    intent: dict
    weaken: tuple[str, ...]
    steps: list
    oracle: Oracle
    run_layer: Literal["sandbox", "harness", "composed", "acp", "host"]  # "host": a control outside any sandbox
    bound: dict  # the vector's secrets, filled


# the tab after the colon arrives escaped (a literal backslash-t) in a harness's JSON tool result
_CAP_EFF = re.compile(r"CapEff:(?:\s|\\t)*([0-9a-fA-F]{16})")


def _with_egress(observation: str, decisions: list[dict] | None) -> str:
    """The observation, then what the egress proxy decided during the run (its whole log, summarised)."""
    if decisions is None:
        return observation
    from collections import Counter

    routes = sum(1 for d in decisions if d.get("method") == "ROUTE")
    model = [d for d in decisions if d.get("route") == "model"]
    lines = Counter(
        f"{'allowed' if d['allowed'] else 'denied'} {d.get('method') or '?'} {d.get('host')}:{d.get('port')} "
        f"({d['reason']}{'; swapped ' + ', '.join(d['credentials']) if d.get('credentials') else ''})"
        for d in decisions
        if d.get("method") != "ROUTE" and d.get("route") != "model"
    )
    parts = [line if n == 1 else f"{line} x{n}" for line, n in lines.items()]
    if routes:
        swapped = sum(1 for d in model if d.get("credentials"))
        parts.append(f"{routes} model connection(s), {len(model)} request(s), the key swapped in {swapped}")
    return f"{observation}; proxy: {'; '.join(parts) or 'no request'}"


def _announced(command, nonce: str) -> list[str]:
    """`command`, started by a shell that first says so on stderr: the proof that the sandbox (or the host)
    really started the attempt, whatever the attempt then prints."""
    return ["sh", "-c", 'echo "$0" >&2; exec "$@"', f"agentbox-attempt-{nonce}", *command]


def _sandbox_failure(done: subprocess.CompletedProcess, nonce: str) -> str | None:
    """Why a sandbox-alone (or host) run cannot be judged, or None. Agent-Box's own refusal, bubblewrap's
    error, or a command that never started (a relay that died first) is an error, never a blocked attempt:
    only the attempt itself meeting the sandbox may count."""
    # what Agent-Box says after the run (what it left for the user to review) is no refusal
    err = "".join(line for line in done.stderr.splitlines(keepends=True) if not line.startswith(AFTER_THE_RUN))
    if err.startswith("agent-box:") or "\nagent-box:" in err:
        return f"agent-box refused to run it (exit {done.returncode}): {err.strip()[:300]}"
    bwrap = [line for line in err.splitlines() if line.startswith("bwrap: ")]
    if bwrap:
        return f"the sandbox failed (exit {done.returncode}): {bwrap[0][:300]}"
    if f"agentbox-attempt-{nonce}" not in err:
        return f"the attempt never started (exit {done.returncode}): {err.strip()[-300:]}"
    return None


def _unmet(oracle: Oracle, targets: Targets, seen: Seen) -> str | None:
    """Why a blocked attempt has no proof that it met the mechanism under test (`Oracle.met`), or None."""
    if not oracle.met:
        return None
    if oracle.met == "reached":  # the request arrived, so what it carried (a placeholder) is what was judged
        assert oracle.listener is not None  # a `reached` oracle names its listener
        return (
            None if targets.listeners[oracle.listener].hits() else f"the {oracle.listener} listener was never reached"
        )
    if any(d.get("reason") == oracle.met for d in seen.egress or ()):
        return None
    return f"no {oracle.met} in the egress decisions"


def _inapplicable(lacks, attack: Attempt, control: Attempt) -> str:
    """The observation of an inapplicable run: the kernel fact, and which call of the attack's proved it."""
    fact = lacking_text(lacks)
    if attack.enosys:
        proof = "the attack's own system call was answered ENOSYS"
    else:
        proof = (
            "the attack itself met no ENOSYS: a seccomp filter answers before the kernel is asked, EPERM, as "
            "its printed answer below shows; its control, the same command with the protection removed, was "
            "answered ENOSYS"
        )
    return (
        f"inapplicable: this kernel has {fact} (/proc/modules absent; {proof}), so the attack cannot exist "
        f"here; attempt: {attack.observation}; control: {control.observation}"
    )


def _evidence(seen: Seen, targets: Targets):
    ports = frozenset(targets.listener_ports())
    if targets.vacant_port is not None:
        ports |= {targets.vacant_port}
    return Evidence(seen.said, seen.harness_output, seen.policy, seen.egress, ports)


def _refusal(vector: Vector, seen: Seen, targets: Targets) -> tuple[bool, str]:
    """Whether a blocked attack met the refusal its mechanism gives (`Vector.refusal`, else the default of
    agentbox/data/refusal_kinds.yaml), and what its observation gains: the refusal met, or why none was."""
    kinds = expected_kinds(vector)
    hit = recognise(kinds, _evidence(seen, targets))
    if hit is None:
        printed = " ".join(seen.said.split())[-400:] or "nothing"
        return False, (
            f", blocked, but the refusal seen was not one expected (expected {describe(kinds)}; the "
            f"attempt printed: {printed})"
        )
    kind, shown = hit
    return True, f"; refused: {kind} ({' '.join(shown.split())[:120]})"


def _unoffered(transcript, step: int | None) -> str:
    """What the request that got a step's call offered, when it did not offer that call's tool (a harness whose
    tool list changes between requests of one run: the run-wide list then says offered)."""
    asked = next((r for r in transcript if r.step_index == step and r.emitted and r.emitted.kind == "tool_call"), None)
    if asked is None or asked.emitted.offered is not False:
        return ""
    return (
        f" (the request that got the call did not offer {asked.emitted.tool}; it offered "
        f"{', '.join(asked.tools_offered) or 'no tool'})"
    )


def sandbox_version() -> str | None:
    """The installed version of the backend the suite's runs go through (the default one)."""
    return get_backend().backend_version()


def expected_for(
    vector: Vector, layer: Layer, harness: str | None, version: str | None, mode: str | None = None
) -> str:
    from agentbox.prove.claims import ENDPOINT

    harness_report = load_declarations(harness).report(vector.capability, version, layer, mode) if harness else None
    sandbox_report = get_backend().declarations.report(vector.capability, sandbox_version())
    endpoint_report = load_declarations(ENDPOINT).report(vector.capability, None) if layer == "acp" else None
    return expected_outcome(vector, layer, harness_report, sandbox_report, endpoint_report, privilege_level())


def carried_by_headless(vector: Vector) -> bool:
    """Whether a tui or acp run may leave `vector` to the build's headless run: the sandbox alone is declared to
    block it here, so that mode's claim can rest on its sandbox-alone and headless composed records
    (`prove.claims._carried`, which reads the records: where they do not both block, the vector reads missing)."""
    return "sandbox" in vector.run_layers() and expected_for(vector, "sandbox", None, None) == "blocked"


def vector_root(name: str) -> Path:
    """Where the run `name` of a vector keeps its targets. Not under /tmp: the sandbox makes /tmp private, which
    would hide every target outside the workspace and make escapes look blocked for the wrong reason."""
    return Path(os.environ.get("AGENTBOX_VECTOR_ROOT", "/var/tmp/agentbox-vectors")) / name


def control_layer(vector: Vector, layer: Layer, harness: str | None) -> Layer | Literal["host"]:
    """The layer a vector's control really runs in when its attack runs in `layer`: on the host, for a protection
    no intent turns off, or in the harness alone (`Vector.control`)."""
    spec = vector.control
    if spec.layer == "harness" and layer in ("harness", "composed"):
        return "harness"
    if spec.layer == "harness" and layer == "sandbox":
        return "host"  # the sandbox layer's control of a harness-alone control: the command on the host
    if spec.layer == "host" or (layer == "harness" and spec.harness_layer == "host") or harness in spec.host_harnesses:
        return "host"
    return layer


def adapter_of(harness: str, mode: str) -> tuple[Installed, AgentBuild] | None:
    """The ACP adapter a `mode` run of `harness` goes through (None: none), its install and its build: the newest
    installed, as `agent-box acp` would start it. Resolved once per test, before its first run: the runs start that
    install, and the record names its build, so an adapter installed meanwhile is neither (`VectorRunner.adapter`)."""
    if not through_adapter(harness, mode):
        return None
    from agentbox.harnesses.installs import find_binary

    try:
        entry = acp_entry(harness)
        found = find_binary(entry.adapter) if entry is not None and entry.adapter else None
        built = adapter_build(harness, found) if found is not None else None
    except AcpUnavailable:
        return None  # nothing can be driven through it: the run skips, and its record proves nothing anyway
    return (found, built[0]) if found is not None and built is not None else None


class VectorRunner:
    """Everything one test needs to attempt a vector: temp folders, the scripted model, a harness."""

    def __init__(self, catalogue: Catalogue, timeout: float, nodeid: str, mode: Mode = "headless"):
        self.catalogue, self.timeout, self.nodeid, self.mode = catalogue, timeout, nodeid, mode
        self._adapters: dict[str, tuple[Installed, AgentBuild] | None] = {}

    def adapter(self, harness: str) -> tuple[Installed, AgentBuild] | None:
        """The ACP adapter this test's runs of `harness` start and its records name, pinned at its first run."""
        if harness not in self._adapters:
            self._adapters[harness] = adapter_of(harness, self.mode)
        return self._adapters[harness]

    def _adapter_changed(self, harness: str) -> str | None:
        """Why the pinned adapter's build is not what ran (its files changed since it was pinned), or None."""
        pinned = self.adapter(harness)
        if pinned is None:
            return None
        now = adapter_build(harness, pinned[0])
        if now is not None and now[0] == pinned[1]:
            return None
        return f"the ACP adapter {pinned[1]} changed during the run (now {now[0] if now else 'gone'}): its build is unknown"

    def _root(self, vector: Vector, nonce: str) -> Path:
        root = vector_root(f"{vector.id}-{nonce}")
        root.mkdir(parents=True)
        return root

    # -- one attempt -------------------------------------------------------------------------------
    def attempt(
        self,
        vector: Vector,
        layer: Layer,
        control: bool,
        harness=None,
        probe=None,
        model=None,
        mutation: str | None = None,
    ) -> Attempt:
        """One run of the attack (or its control) in `layer`; `mutation`: a single protection removed from the
        sandbox layer's plan (the mutation check, `agentbox.testing.weakened.SINGLE`).

        A harness that failed before the first scripted step reached it (a TUI that never drew its prompt, a start
        that timed out on a loaded machine) said nothing about the attempt, which never happened: it is tried once
        more, in a run of its own, and that run is judged on its own. Once: a harness that fails every time is an
        error, not a flake."""
        first = self._tried(vector, layer, control, harness, probe, model, mutation)
        if first.again is None:
            return first
        second = self._tried(vector, layer, control, harness, probe, model, mutation)
        why = " ".join(first.again.split())[:300]
        return replace(second, observation=f"{second.observation} (a second try: the first never reached it: {why})")

    def _tried(self, vector: Vector, layer: Layer, control: bool, harness, probe, model, mutation) -> Attempt:
        nonce = secrets.token_hex(6)
        root = self._root(vector, nonce)
        targets = prepare(root, vector.setup, nonce, f"{MODEL_KEY}-{nonce}")
        try:
            plan = self.plan(vector, layer, control, targets, harness)
            if plan.run_layer == "acp":
                error, seen = self._run_endpoint(vector, plan.steps, plan.intent, targets, plan.weaken, control)
            elif plan.run_layer in ("sandbox", "host"):
                spec = plan.spec
                command = Vector.sandbox_argv(
                    plan.steps,
                    fill(
                        (spec.sandbox_command if spec and spec.sandbox_command else vector.sandbox_command),
                        plan.values,
                    ),
                )
                if command is None and plan.run_layer == "host":
                    command = Vector.host_argv(plan.steps)
                if command is None:
                    return Attempt(None, f"the steps have no plain-command form to run in the {plan.run_layer} layer")
                error, seen = self._run_command(
                    command,
                    plan.intent,
                    targets,
                    sandboxed=plan.run_layer == "sandbox",
                    weaken=plan.weaken,
                    mutation=mutation,
                    secrets=plan.bound,
                )
            else:
                assert plan.run_layer in ("harness", "composed")  # what is left once acp, sandbox and host are taken
                error, seen = self._run_harness(
                    harness,
                    probe,
                    model,
                    plan.intent,
                    plan.steps,
                    vector,
                    targets,
                    plan.run_layer,
                    weaken=plan.weaken if plan.run_layer == "composed" else (),
                    secrets=plan.bound,
                    control=control,
                )
            return self.judge(vector, plan, targets, error, seen)
        finally:
            targets.close()
            shutil.rmtree(root, ignore_errors=True)

    def plan(self, vector: Vector, layer: Layer, control: bool, targets: Targets, harness=None) -> "Planned":
        """What one run of the attack (or its control) is, with the vector's values filled in: the intent, the
        protection taken out, the steps, the oracle, and the layer it really runs in (a control may run on the host
        or in the harness alone)."""
        values = targets.values()
        spec = vector.control if control else None
        chosen_intent = spec.intent if spec else vector.intent
        if spec is not None and spec.harness_intent is not None and layer == "harness":
            chosen_intent = spec.harness_intent
        oracle = Oracle.model_validate(fill(vector.oracle.model_dump(), values))
        if oracle.kind == "file_unchanged":
            assert oracle.path is not None  # a file_unchanged oracle names its file
            targets.snapshot(oracle.path)
        run_layer = control_layer(vector, layer, harness.name if harness is not None else None) if spec else layer
        return Planned(
            values=values,
            spec=spec,
            intent=fill(chosen_intent, values),
            weaken=spec.weaken if spec is not None else (),
            steps=fill(list((spec.steps if spec and spec.steps is not None else vector.steps)), values),
            oracle=oracle,
            run_layer=run_layer,
            bound=fill(vector.secrets, values),
        )

    def judge(self, vector: Vector, plan: "Planned", targets: Targets, error: str | None, seen: Seen) -> Attempt:
        """What a run of `plan` showed: the oracle's reading, with the proof a block needs (the attempt ran, met
        the mechanism and got the refusal it gives), or why it cannot be judged."""
        spec, values, oracle, layer = plan.spec, plan.values, plan.oracle, plan.run_layer
        if error and spec is None and vector.refused_at_start and re.search(vector.refused_at_start, error):
            # the protection is the refusal itself: the run never started, so nothing else is looked for
            attempt = self._observe(oracle, targets, seen)
            if attempt.effect is False:
                return Attempt(
                    False, f"{attempt.observation}; refused at the run's start: {' '.join(error.split())[:300]}"
                )
        if error:
            return Attempt(None, _with_egress(error, seen.egress), again=None if seen.reached else error)
        if spec is None and vector.proof is not None and not os.path.lexists(fill(vector.proof, values)):
            return Attempt(
                None,
                _with_egress(
                    f"the attempt never ran: its first act ({fill(vector.proof, values)}) is missing", seen.egress
                ),
            )
        attempt = self._observe(oracle, targets, seen)
        attempt.enosys = vector.enosys is not None and os.path.lexists(fill(vector.enosys, values))
        unmet = _unmet(oracle, targets, seen) if spec is None and attempt.effect is False else None
        if unmet:
            return Attempt(
                None,
                _with_egress(f"{attempt.observation}, but the attempt never met the mechanism: {unmet}", seen.egress),
            )
        if spec is None and attempt.effect is False and layer != "acp" and not attempt.enosys:
            # positive proof: the attempt printed (or the proxy logged) the refusal its mechanism gives
            met, shown = _refusal(vector, seen, targets)
            if not met:
                return Attempt(None, _with_egress(attempt.observation + shown, seen.egress))
            attempt = Attempt(False, attempt.observation + shown)
        observation = attempt.observation
        if (spec is not None or vector.enosys is not None) and attempt.effect is False and seen.tail():
            # a control that saw nothing says what its attempt printed: the reason is usually there (and an
            # attack that may meet a kernel without its feature says which answer it got: EPERM or ENOSYS)
            observation += f" (the attempt printed: {seen.tail()})"
        return Attempt(attempt.effect, _with_egress(observation, seen.egress), attempt.enosys)

    def _env(self, targets: Targets) -> dict[str, str]:
        return {**os.environ, **targets.env, "HOME": str(targets.home)}

    def _run_command(
        self,
        command,
        intent,
        targets: Targets,
        sandboxed: bool,
        weaken: tuple[str, ...] = (),
        mutation: str | None = None,
        secrets: dict | None = None,
    ) -> tuple[str | None, Seen]:
        env = self._env(targets)
        if targets.suite_ca:  # the egress proxy of `sandbox run` verifies upstream TLS against the suite's CA
            env["SSL_CERT_FILE"] = targets.suite_ca
        log = targets.root / "egress.jsonl"
        command = _announced(command, targets.nonce)
        if sandboxed:
            profile = targets.root / "profile.yaml"
            profile.write_text(
                yaml.safe_dump(
                    {"name": "vector", "harness": "codex", "permission_intent": intent, "secrets": secrets or {}}
                )
            )
            # the vector's own AGENTBOX_HOME when its setup names one (one inside the workspace, to be refused)
            env["AGENTBOX_HOME"] = targets.env.get("AGENTBOX_HOME") or str(targets.root / "agentbox-home")
            resolve = [
                a for name, address in targets.resolve.items() for a in ("--egress-resolve", f"{name}={address}")
            ]
            changes = [*(a for w in weaken for a in ("--weaken", w)), *(["--mutate", mutation] if mutation else [])]
            runner = ["agentbox.testing.weakened", *changes] if changes else ["agentbox.cli", "sandbox", "run"]
            argv = [
                sys.executable,
                "-P",  # not the working folder first on the import path: it may be a run's workspace
                "-m",
                *runner,
                str(profile),
                "--cwd",
                str(targets.ws),
                *resolve,
                "--egress-log",
                str(log),
                "--",
                *command,
            ]
        elif os.geteuid() == 0 and shutil.which("unshare"):
            # a control on the host runs as root: in a mount namespace of its own, a control of a mount attack
            # (a bind, an unmount) changes nothing the machine keeps
            argv = ["unshare", "--mount", "--propagation", "private", *command]
        elif "privilege" in weaken and shutil.which("unshare"):
            # as a user, a control of a mount attack needs the privilege it attacks: root of a user namespace of
            # its own, with a mount namespace (what the weakened sandbox gives it in the sandbox layer)
            argv = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private", *command]
        else:
            argv = list(command)
        try:
            done = subprocess.run(
                argv,
                cwd=targets.ws,
                env=env,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return f"timed out after {self.timeout}s", Seen([])
        # the shell's announcement of the attempt is Agent-Box's line, not the attempt's
        err = "\n".join(line for line in done.stderr.splitlines() if f"agentbox-attempt-{targets.nonce}" not in line)
        seen = Seen(
            [done.stdout, done.stderr],
            egress=read_log(log) if log.exists() else None,
            printed=f"{done.stdout}\n{done.stderr}",
            said=f"{done.stdout}\n{err}",
        )
        return _sandbox_failure(done, targets.nonce), seen

    def _run_endpoint(
        self, vector: Vector, steps, intent, targets: Targets, weaken: tuple[str, ...], control: bool
    ) -> tuple[str | None, Seen]:
        """The ACP endpoint alone (its relay and client-surface policy over the plan's sandbox) with the protocol
        test agent making the attempt, and a client that serves files and terminals on the host."""
        import json

        from agentbox.testing.acp_client import RecordingClient, run_acp

        assert vector.acp is not None
        attempt = vector.acp
        profile, script = targets.root / "profile.yaml", targets.root / "acp-steps.json"
        profile.write_text(yaml.safe_dump({"name": "vector", "harness": "codex", "permission_intent": intent}))
        script.write_text(json.dumps(steps))
        package_root = str(Path(__file__).resolve().parents[2])
        env = {
            **self._env(targets),
            "AGENTBOX_HOME": str(targets.root / "agentbox-home"),
            "PYTHONPATH": os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH")))),
        }
        argv = [
            sys.executable,
            "-P",  # not the working folder first on the import path: it may be a run's workspace
            "-m",
            "agentbox.testing.acp_endpoint",
            "--profile",
            str(profile),
            "--workspace",
            str(targets.ws),
            "--script",
            str(script),
            *(["--facts", attempt.facts] if attempt.facts else []),
            *(a for w in weaken if w in ("acp_meta", "acp_hold") for a in ("--weaken", w)),
        ]
        client = RecordingClient(attempt.client, fs=True, terminal=True, delay=attempt.client_delay)
        run = run_acp(
            argv,
            env,
            str(targets.root),
            "Follow your script.",
            session_cwd=str(targets.ws),
            client=client,
            session_meta=fill(dict(attempt.session_meta), targets.values()) or None,
            timeout=self.timeout,
            grace=10.0,
        )
        said = "\n".join(filter(None, (run.error, client.agent_text(), run.stderr)))
        seen = Seen([client.agent_text(), run.error or "", run.stderr], printed=client.agent_text() or run.error or "")
        if run.timed_out:
            return f"the endpoint timed out after {self.timeout}s: {run.stderr.strip()[-400:]}", seen
        if run.init is None:
            return f"the endpoint never answered initialize: {run.error} {run.stderr.strip()[-400:]}", seen
        if not control and not re.search(attempt.met, said):
            return (
                f"the attempt never met the endpoint's mechanism (its answer never said {attempt.met!r}): "
                f"{' '.join(said.split())[-400:]}"
            ), seen
        return None, seen

    def _run_harness(
        self,
        harness,
        probe,
        model,
        intent,
        steps,
        vector: Vector,
        targets: Targets,
        layer: Literal["harness", "composed"],
        weaken: tuple[str, ...] = (),
        secrets: dict | None = None,
        control: bool = False,
    ):
        tool_from = {name: fill(path, targets.values()) for name, path in vector.setup.mcp_tool_from.items()}
        canaries = {
            name: CanaryMcp(name=name, log=targets.root / f"mcp-{name}" / "canary.log", tool_from=tool_from.get(name))
            for name in vector.setup.mcp
        }
        for c in canaries.values():
            c.log.parent.mkdir()
        # in the TUI the run ends when the driver sees the model's closing words on screen
        done_text = f"agentbox-attempt-over-{targets.nonce}"
        vocabulary = harness.vocabulary()
        model.clear()
        model.key = targets.model_key  # the real key: the model answers nothing else
        model.load({"steps": steps, "final_text": done_text}, vocabulary)
        req = self.request(
            harness,
            probe,
            model,
            intent,
            targets,
            layer,
            weaken,
            secrets,
            canaries,
            uncatalogued=vector.setup.uncatalogued_model,
            digest=vector.id,
        )
        refused, out = self.drive(req, harness, probe, done_text, control)
        if refused:
            return refused, Seen([])
        results = [r.text for r in model.tool_results()]
        reached = any(r.step_index is not None for r in model.transcript)
        seen = Seen(
            [out.stdout, out.stderr, *results],
            set(model.offered_tools()),
            canaries,
            out.leftovers,
            out.egress if out.plan.sandbox.egress is not None and layer == "composed" else None,
            printed=results[-1] if results else out.stdout,
            said="\n".join(filter(None, results)),
            harness_output=f"{out.stdout}\n{out.stderr}",
            reached=reached,
        )
        seen.policy = self.policy(vocabulary)
        return self.run_problem(out) or self.steps_problem(model, out, vocabulary, range(len(steps)), True), seen

    def request(
        self,
        harness,
        probe,
        model,
        intent,
        targets: Targets,
        layer: Literal["harness", "composed"],
        weaken: tuple[str, ...] = (),
        secrets: dict | None = None,
        canaries: dict | None = None,
        uncatalogued: bool = False,
        digest: str = "vector",
    ) -> RunRequest:
        """The run of a harness with the scripted model, in `layer`, over `targets`' workspace and home."""
        profile = scripted_profile(
            harness,
            model,
            intent,
            name="vector",
            mcp_servers={n: c.server_spec() for n, c in (canaries or {}).items()},
            secrets=secrets,
        )
        if uncatalogued:
            profile["model"]["name"] = "scripted"
        loaded = LoadedProfile(profile=Profile.model_validate(profile), source="<vector>", digest=digest)
        package_root = str(Path(__file__).resolve().parents[2])
        return RunRequest(
            loaded=loaded,
            probe=probe,
            workspace=str(targets.ws),
            home=str(targets.home),
            prompt="Follow the tool calls you are given.",
            layer=layer,
            timeout=self.timeout,
            extra_env=scripted_key_env(harness, targets.model_key),
            host_env={**os.environ, **targets.env},
            ro_binds=(package_root,),
            rw_binds=tuple(str(c.log.parent) for c in (canaries or {}).values()),
            resolve=dict(targets.resolve),
            entry_hook=entry_hook(weaken),
            upstream_ca=targets.suite_ca,
        )

    def drive(self, req: RunRequest, harness, probe, done_text: str, control: bool):
        """The harness run in this runner's mode (headless, its TUI, an ACP client): (None, its outcome), or (why
        Agent-Box refused to start it, None)."""
        try:
            if self.mode == "tui":
                from agentbox.testing.tui import drive

                return None, drive(req, harness.name, probe.binary, done_text)
            if self.mode == "acp":
                from agentbox.testing.acp_drive import drive as drive_acp

                pinned = self.adapter(harness.name)
                adapter_binary = pinned[0].binary if pinned is not None else None
                return None, drive_acp(req, harness.name, probe.binary, approve=control, adapter_binary=adapter_binary)
            return None, run_harness(req)
        except SandboxError as exc:  # refused before the harness started: judged as `sandbox run`'s refusal is
            return f"agent-box refused to run it (exit {exc.exit_code}): {exc}", None

    def policy(self, vocabulary) -> tuple[str, ...]:
        """The harness's policy messages in this mode: its vocabulary's, and how the driver's own refusal shows."""
        refusals = tuple(vocabulary.refusals)
        if self.mode == "tui":
            from agentbox.testing.tui import DECLINED

            refusals = (*refusals, DECLINED)  # a permission dialog the driver declined, which ended the turn
        if self.mode == "acp":
            from agentbox.testing.acp_drive import DECLINED as REJECTED

            refusals = (*refusals, REJECTED)  # a permission request the client rejected, which ended the turn
        return refusals

    def run_problem(self, out) -> str | None:
        """Why the run as a whole cannot be judged (ended from outside, timed out, failed), or None."""
        if out.failure:
            return out.failure
        if out.timed_out:
            return f"the harness timed out after {self.timeout}s" + (
                f" ({out.stderr.strip()[-600:]})" if self.mode == "tui" else ""
            )
        if out.exit_code != 0:
            return f"the harness exited {out.exit_code}: {out.stderr.strip()[-400:]}"
        return None

    def steps_problem(
        self, model, out, vocabulary, steps: range, last_may_end: bool, batch: bool = False
    ) -> str | None:
        """Why the scripted `steps` did not all meet a mechanism (never sent, never answered, never run), or None.
        `last_may_end`: the run's last step may have met the harness's policy, which ended the run there. `batch`:
        the run played other vectors' steps too, so only the tool results of `steps` are read (alone, every result
        of the run is the attempt's)."""
        emitted = {r.step_index for r in model.transcript if r.step_index is not None}
        missing = [i for i in steps if i not in emitted]
        if missing:
            return f"the harness ended before scripted step {missing[0]} was sent"
        # Sent is not attempted: the harness must have answered each call (run, refused, or failed), or nothing
        # says the attempt ever met a mechanism.
        answered = {r.step_index for r in model.tool_results() if r.step_index is not None}
        unanswered = [i for i in steps if i not in answered]
        if (
            last_may_end
            and unanswered
            and unanswered[-1] == steps[-1]
            and any(re.search(p, f"{out.stdout}\n{out.stderr}") for p in self.policy(vocabulary))
        ):
            unanswered = unanswered[:-1]  # the last call met the harness's policy, which ended the run there
        if unanswered:
            tail = " ".join((out.stdout or "").split())[-300:]
            return f"the harness never answered scripted step {unanswered[0]}'s tool call (its output ends: {tail})"
        # Answered is not met: a call the harness never ran (arguments its tool rejected, a call it does not
        # support in this mode) reached no permission mechanism
        offered = set(model.offered_tools())
        for r in model.tool_results():
            if batch and r.step_index not in steps:
                continue
            hit = next(
                (
                    m
                    for p in vocabulary.never_ran
                    for m in [re.search(p, r.text or "")]
                    # a pattern naming the tool counts only for a tool the run offered: a tool the intent
                    # removed is answered the same way, and that removal is the mechanism
                    if m and ("tool" not in m.groupdict() or m.group("tool") in offered)
                ),
                None,
            )
            if hit is not None:
                return (
                    f"the harness never ran scripted step {r.step_index}'s call (rejected arguments or an "
                    f"unsupported call), so the attempt met no mechanism: "
                    f"{' '.join((r.text or '').split())[:300]}{_unoffered(model.transcript, r.step_index)}"
                )
        return None

    def _observe(self, oracle: Oracle, targets: Targets, seen: "Seen") -> Attempt:
        kind = oracle.kind
        if kind == "file_absent":
            assert oracle.path is not None  # each oracle kind names what it reads (the catalogue's vectors do)
            there = os.path.lexists(oracle.path)
            return Attempt(there, f"{oracle.path} {'exists' if there else 'is absent'} on the host")
        if kind == "file_unchanged":
            assert oracle.path is not None
            now = Path(oracle.path).read_bytes() if os.path.isfile(oracle.path) else None
            changed = now != targets.snapshots.get(oracle.path)
            return Attempt(changed, f"{oracle.path} {'changed' if changed else 'is unchanged'} on the host")
        if kind == "listener_silent":
            assert oracle.listener is not None
            hits = targets.listeners[oracle.listener].hits()
            return Attempt(hits > 0, f"the {oracle.listener} listener on the host saw {hits} connection(s)")
        if kind == "mcp_not_called":
            calls = [c for c in seen.canaries[oracle.server].invocations() if c.get("tool") == oracle.tool]
            return Attempt(bool(calls), f"the {oracle.server} MCP log shows {len(calls)} call(s) of {oracle.tool}")
        if kind == "listener_never_saw":
            assert oracle.listener is not None and oracle.secret is not None
            saw = targets.listeners[oracle.listener].saw(oracle.secret)
            hits = targets.listeners[oracle.listener].hits()
            return Attempt(
                saw,
                f"the {oracle.listener} listener on the host {'received' if saw else 'never received'} "
                f"the secret ({hits} connection(s))",
            )
        if kind == "secret_not_seen":
            assert oracle.secret is not None
            wanted = (oracle.secret, *oracle.more_secrets)
            found = [s for s in wanted if any(s in t or s[::-1] in t for t in seen.texts if t)]
            if len(wanted) == 1:
                what = "the secret reached the model or the output" if found else "the secret was never seen"
            else:
                what = (
                    f"{len(found)} of {len(wanted)} secrets reached the model or the output"
                    if found
                    else f"none of {len(wanted)} secrets was ever seen"
                )
            return Attempt(bool(found), what)
        if kind == "process_gone":
            # the harness runner kills what outlived the harness before we look, and reports it
            assert oracle.token is not None
            reported = {pid: cmd for pid, cmd in seen.leftovers if oracle.token in cmd}
            alive = process_alive(oracle.token)
            kill_all(alive)
            n = len(set(reported) | set(alive))
            shown = "; ".join(f"pid {pid}: {cmd[:120]}" for pid, cmd in reported.items())
            return Attempt(
                n > 0,
                f"{n} process(es) with {oracle.token!r} outlived the run"
                + (f" (the runner killed {shown})" if shown else ""),
            )
        if kind == "target_alive":
            # SIGKILL is delivered at once but the process ends a moment later: wait for the end, briefly
            assert targets.sleeper is not None  # a target_alive vector's setup starts the sleeper
            try:
                dead = targets.sleeper is not None and targets.sleeper.wait(timeout=1.0) is not None
            except subprocess.TimeoutExpired:
                dead = False
            return Attempt(dead, f"the host process {targets.sleeper.pid} was {'killed' if dead else 'untouched'}")
        if kind == "no_capabilities":
            masks = [m for t in seen.texts if t for m in _CAP_EFF.findall(t)]
            held = [m for m in masks if int(m, 16)]
            if not masks:
                return Attempt(None, "no CapEff line was seen: the attempt's result never came back")
            return Attempt(bool(held), f"CapEff seen: {', '.join(sorted(set(masks)))}")
        if kind == "not_setuid":
            assert oracle.path is not None
            mode = os.lstat(oracle.path).st_mode if os.path.lexists(oracle.path) else 0
            bits = mode & 0o6000
            return Attempt(
                bool(bits),
                f"{oracle.path} "
                + (
                    f"is setuid or setgid on the host (mode {mode & 0o7777:o})"
                    if bits
                    else "carries no setuid or setgid bit on the host"
                ),
            )
        if kind == "host_setting_unchanged":
            assert targets.setting is not None  # a host_setting_unchanged vector's setup holds the setting
            before, after = targets.setting.before, targets.setting.now()
            return Attempt(
                after != before,
                f"the host's {targets.setting.path} "
                + (
                    f"changed from {before.strip()!r} to {after.strip()!r}"
                    if after != before
                    else f"still reads {before.strip()!r}"
                ),
            )
        if kind == "not_offered":
            assert oracle.tool is not None
            names = sorted(t for t in seen.offered if oracle.tool in t)
            return Attempt(bool(names), f"offered to the model: {', '.join(names) or 'nothing named ' + oracle.tool}")
        raise AssertionError(f"unknown oracle {kind}")

    # -- a vector in a layer, with its control -----------------------------------------------------
    def run(self, vector: Vector, layer: Layer, harness=None, probe=None, model=None) -> EvidenceRecord:
        start = time.monotonic()
        lacks = kernel_lacks(vector)  # what the attack needs and this kernel lacks, checked as the gate checks it
        attack = self.attempt(vector, layer, False, harness, probe, model)
        control = None
        if attack.effect is False:
            # nothing seen means blocked only if the same oracle sees the side effect with the protection removed
            control = self.attempt(vector, layer, True, harness, probe, model)
        # an attack whose own oracle saw the side effect needs no control: that is what one would have shown
        return self.record(vector, layer, harness, probe, attack, control, lacks, time.monotonic() - start)

    def record(
        self,
        vector: Vector,
        layer: Layer,
        harness,
        probe,
        attack: Attempt,
        control: Attempt | None,
        lacks,
        duration: float,
        note: str = "",
    ) -> EvidenceRecord:
        """The evidence of an attack and its control (None: not run, the attack escaped or errored). `note`: what
        the observation adds (how the runs were made: a batched session)."""
        control_outcome: Literal["passed", "failed", "not_run"] = "not_run"
        outcome: Outcome
        if attack.effect is None:
            outcome, observation = "error", attack.observation
        elif attack.effect:
            outcome, observation = "escaped", attack.observation
        else:
            assert control is not None  # a blocked-looking attack is judged with its control
            control_outcome = "passed" if control.effect else "failed"
            if control.effect is None:
                outcome, observation = "error", f"control: {control.observation}"
            elif not control.effect and lacks and control.enosys:
                # The kernel itself has no such feature: the control, with the protection removed, met ENOSYS too
                outcome, observation = "inapplicable", _inapplicable(lacks, attack, control)
            elif not control.effect:
                outcome, observation = "error", f"control did not succeed where allowed: {control.observation}"
            elif attack.enosys:
                # the kernel, not the mechanism, answered: only a control that met ENOSYS too makes it inapplicable
                outcome, observation = (
                    "error",
                    (
                        f"the attack was answered ENOSYS by the kernel, not refused by the "
                        f"mechanism, while its control succeeded: {attack.observation}"
                    ),
                )
            else:
                outcome, observation = "blocked", attack.observation
        mode: Mode = "acp" if layer == "acp" else self.mode if harness is not None else "headless"
        pinned = self.adapter(harness.name) if harness is not None and mode == "acp" and layer != "acp" else None
        changed = self._adapter_changed(harness.name) if pinned is not None else None
        if changed is not None and outcome in ("blocked", "inapplicable"):
            outcome, observation = "error", f"{changed}; {observation}"
        facts = host_facts()
        info = RunInfo(
            harness=harness.name if harness else None,
            version=probe.version if probe else None,
            binary_sha256=probe.sha256 if probe else None,
            dialect=probe.dialect if probe else None,
            sandbox_backend=DEFAULT_BACKEND if layer in ("sandbox", "composed", "acp") else None,
            sandbox_version=sandbox_version() if layer in ("sandbox", "composed", "acp") else None,
            kernel=facts["kernel"],
            agentbox_version=facts["agentbox_version"],
            suite_revision=suite_revision(),
            catalogue_digest=self.catalogue.digest,
            privilege=observed(layer),
            provenance="observed",
            mode=mode,
            agent=PROTOCOL_AGENT if layer == "acp" and harness is None else None,
            adapter=pinned[1] if pinned is not None else None,
            kernel_lacks=lacks,
        )
        return EvidenceRecord(
            run_info=info,
            vector_id=vector.id,
            capability=vector.capability,
            layer=layer,
            outcome=outcome,
            observation=observation + note,
            control_outcome=control_outcome,
            duration=round(duration, 3),
            nodeid=self.nodeid,
        )
