"""`agent-box launch`: the cold half. Probe, compile, reconcile the evidence, gate; then refuse or launch.

Nothing is written to the project or a private home, and no harness session or sandbox is started,
before the gate allows the launch. What does happen first: the binary's `--version` probe (the
version and build digest are what the evidence is looked up by), the evidence index catching up with its
store, and, on refusal, the refused Run in the Run store. Private config, masks and processes come
after (`launch.execute`).
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentbox.compile.adapters import get_adapter
from agentbox.compile.adapters.base import Probe
from agentbox.compile.compiler import compile_plan
from agentbox.errors import HarnessError, InputError
from agentbox.gate import LAUNCH_MODE, Decision, Target, decide, proven_elsewhere, unknown_accepted
from agentbox.run.launch import FORMAT, SENTINEL, binary_state, cache_file, execute, stat_key, surface_state
from agentbox.core.paths import is_within
from agentbox.core.plan import EffectiveRunPlan, canonical_json
from agentbox.core.profile import LoadedProfile, load_profile
from agentbox.hot import agentbox_home, kernel_traces, write_marshal_atomic

if TYPE_CHECKING:
    from agentbox.harnesses.agent_build import AgentBuild

__all__ = ["Built", "build", "launch"]


@dataclass
class Built:
    loaded: LoadedProfile
    probe: Probe
    plan: EffectiveRunPlan
    decision: Decision
    fields: dict  # the Run's columns
    check: dict  # what a cached launch re-checks (see launch.py)
    claims: dict  # capability -> Claim of this exact build
    vectors: dict  # capability -> the catalogue's composed vectors for this harness
    probe_errors: tuple[str, ...] = ()
    sandbox_claims: dict | None = None  # capability -> the sandbox-alone Claim of the plan's backend
    other_modes: dict | None = None  # capability -> the build's claim from headless runs


def _binary(harness: str, binary: str | None) -> tuple[str, dict]:
    if binary is not None:
        return binary, {}
    from agentbox.harnesses.installs import find_binary, layout

    where = layout(harness)
    state = binary_state(*where)  # before the choice: a change meanwhile makes the cache stale, never wrong
    found = find_binary(harness)
    if found is None:
        raise HarnessError(
            f"{harness} is not installed: agent-box harness install {harness}@VERSION (or give --binary PATH)"
        )
    return found.binary, {"layout": list(where), "binary_state": state}


def _surface_paths(plan: EffectiveRunPlan) -> list[str]:
    from agentbox.sandbox.surfaces import _layers

    ws = plan.cwd
    paths = {
        os.path.join(layer, s.path) for s in plan.native.requirements.surfaces for layer in _layers(ws, s.discovery)
    }
    paths.add(os.path.join(ws, ".agentbox"))
    paths |= {os.path.join(str(d), ".git") for d in (Path(ws), *Path(ws).parents)}  # git roots pick the layers
    return sorted(paths)


def refuse_planted(loaded: LoadedProfile, cwd: str | None, binary: str) -> None:
    """Fail closed before the probe runs the harness's binary on the host (`--version`): a binary inside the
    project is one a run could have replaced (a run of this profile or of any other that writes the project), and
    Agent-Box would start it outside any sandbox."""
    if cwd is None:
        return
    real, project = os.path.realpath(binary), os.path.realpath(cwd)
    if is_within(real, project):
        from agentbox.errors import SandboxError

        raise SandboxError(
            f"the {loaded.profile.harness} binary {real} lies inside the project {project}, which a "
            "run with a read_write workspace can write (sandbox layer): a run could replace what "
            "Agent-Box starts on the host to probe it; install the harness outside the project "
            f"(agent-box harness install {loaded.profile.harness}@VERSION)"
        )


def probe_and_check(loaded: LoadedProfile, binary: str | None, cwd: str | None = None) -> tuple[Probe, dict]:
    """The harness's probe, and what a cached answer built on it must find unchanged (`launch.plan_current`):
    the binary `find_binary` picks and its build, the user, the sandbox's program and each MCP server's command. The
    caller adds the project's config surfaces once its plan is compiled. `cwd`: the project, where a binary
    is refused before it is run (`refuse_planted`)."""
    from agentbox.hot import which
    from agentbox.sandbox.backend import get_backend

    invoked, check = _binary(loaded.profile.harness, binary)
    refuse_planted(loaded, cwd, invoked)
    resolved = os.path.realpath(invoked)
    stat = stat_key(resolved)
    probe, identity = get_adapter(loaded.profile.harness).known_probe(invoked)
    commands = sorted({loaded.profile.mcp_servers[s].command for s in loaded.profile.permission_intent.mcp.servers})
    sandbox = get_backend().binary()
    check.update(
        uid=os.geteuid(),
        sandbox_program=os.path.basename(sandbox),  # found on PATH again at each start (`launch.plan_current`)
        sandbox_binary=stat_key(sandbox),
        invoked=invoked,
        resolved=resolved,
        stat=stat,
        build=identity.as_check(),
        mcp=[[c, [which(c), stat_key(which(c) or "")]] for c in commands],
    )
    return probe, check


def surfaces_check(plan: EffectiveRunPlan) -> dict:
    return surface_state(_surface_paths(plan))


def build(
    profile_arg: str,
    cwd: str,
    *,
    evidence: str | None = None,
    accept_unverified: tuple[str, ...] = (),
    binary: str | None = None,
    mode: str = LAUNCH_MODE,
    ro_binds: tuple[str, ...] = (),
    adapter: AgentBuild | None = None,
) -> Built:
    """Everything the gate decides from, and its decision. Writes nothing but caches.

    `mode`: how the harness will be driven (`launch`: its TUI; `agent-box acp`: as an ACP agent), whose evidence
    the gate counts; `ro_binds`: host paths the started process needs to see (an ACP adapter's install folder);
    `adapter`: the ACP adapter build the start drives (acp mode of a harness an adapter drives), whose acp evidence
    alone counts: another adapter build is another program."""
    from agentbox.prove.claims import NO_HARNESS, carries_into, default_catalogue_dir, reconcile
    from agentbox.core.revision import suite_revision
    from agentbox.prove.evidence import EvidenceRecord, privilege_level
    from agentbox.prove.evidence_index import lookup, signature, unproven
    from agentbox.sandbox.backend import get_backend
    from agentbox.core.home import evidence_store
    from agentbox.prove.vectors import kernel_lacks_here, load_catalogue

    loaded = load_profile(profile_arg)
    harness = loaded.profile.harness
    probe, check = probe_and_check(loaded, binary, cwd)
    from agentbox.compile.mcp_inventory import for_profile

    # a tool allowlist is exact only with each server's tool list, asked (locked down) before the gate decides
    plan = compile_plan(
        loaded, cwd, probe=probe, ro_binds=ro_binds, **for_profile(loaded.profile, workspace=cwd).compile_args()
    )
    unknown = unknown_accepted(plan.items, accept_unverified)
    if unknown:
        names = ", ".join(f"{i.item} ({i.capability})" for i in plan.items)
        raise InputError(
            f"--accept-unverified {unknown[0]}: no item of this profile is called that; "
            f"name an item or its capability: {names}",
            file=loaded.source,
        )
    store = evidence_store(evidence)
    backend = plan.sandbox.backend
    # the gate's answer holds for this user (evidence matches the privilege a launch runs with) and this
    # bubblewrap (its version is part of the evidence key)
    check.update(surfaces=surface_state(_surface_paths(plan)), evidence=str(store), evidence_signature=signature(store))
    # a claim resting on vectors inapplicable where recorded holds only on a kernel lacking the same features
    lacks = kernel_lacks_here()
    # ... and evidence is keyed by the kernel release (`evidence_index`): a cached entry holds on this kernel only
    check.update(kernel_traces=kernel_traces(), kernel=os.uname().release)

    privilege, bversion = privilege_level(), get_backend(backend).backend_version()
    key = adapter.key if adapter is not None else ""
    rows = lookup(
        store, harness, probe.version, probe.sha256, backend, privilege=privilege, backend_version=bversion, adapter=key
    )
    left_out = unproven(
        store, harness, probe.version, probe.sha256, backend, privilege=privilege, backend_version=bversion, adapter=key
    )
    catalogue = load_catalogue(default_catalogue_dir())
    table = reconcile([EvidenceRecord.model_validate(r) for r in rows], catalogue, suite_revision=suite_revision())
    mine = [c for c in table.claims if c.harness == harness and c.backend == backend]
    # the lookup gave acp rows of this adapter build only; said again here, where the claims are picked
    claims = {c.capability: c for c in mine if c.mode == mode and (mode != "acp" or c.adapter == adapter)}
    # another mode's claims (headless runs) speak only where the sandbox alone carries the item (`gate`), and never
    # for an ACP adapter: another program, in a sandbox with its own install bound in (`claims.carries_into`)
    other_modes = {c.capability: c for c in mine if c.mode == "headless"} if carries_into(harness, mode) else {}
    sandbox_claims = {
        c.capability: c for c in table.claims if c.harness == NO_HARNESS and c.backend == backend and c.mode != "acp"
    }
    # an ACP endpoint is judged on its client-surface vectors too (the protocol test agent's `acp` layer)
    surface_claims = (
        {c.capability: c for c in table.claims if c.harness == NO_HARNESS and c.backend == backend and c.mode == "acp"}
        if mode == "acp"
        else {}
    )
    surface_vectors = (
        {
            i.capability: tuple(
                v.id for v in catalogue.vectors if v.capability == i.capability and "acp" in v.run_layers()
            )
            for i in plan.items
        }
        if mode == "acp"
        else {}
    )
    # a vector the catalogue cannot run on this harness is named too: it leaves the item unverified
    vectors = {
        i.capability: tuple(
            v.id
            for v in catalogue.vectors
            if v.capability == i.capability
            and "composed" in v.run_layers()
            and (not v.privileges or privilege in v.privileges)  # the claims leave out what the kernel refuses users
            and (v.applies_to(harness, version=probe.version) or v.skipped_on(harness, probe.version) is not None)
        )
        for i in plan.items
    }
    probe_errors = (f"{harness} binary {probe.binary}: {probe.problem}",) if probe.version is None else ()
    target = Target(harness, probe.version, probe.sha256, backend, str(store), adapter)
    decision = decide(
        plan.items,
        claims,
        target,
        accept_unverified=accept_unverified,
        vectors=vectors,
        errors=[*plan.native.errors, *probe_errors],
        sandbox_claims=sandbox_claims,
        unproven=left_out,
        other_modes=other_modes,
        mode=mode,
        surface_claims=surface_claims,
        surface_vectors=surface_vectors,
        kernel_lacks=lacks,
    )
    used = {v for ids in vectors.values() for v in ids}
    fields = {
        "profile": loaded.profile.name,
        "profile_digest": loaded.digest,
        "profile_source": os.path.abspath(loaded.source),
        "project_root": plan.cwd,
        "harness": harness,
        "version": probe.version,
        "binary": probe.binary,
        "binary_sha256": probe.sha256,
        "backend": backend,
        "intent_hash": hashlib.sha256(canonical_json(plan.intent).encode()).hexdigest(),
        "plan_hash": plan.hash,
        "claims": decision.claims(),
        "evidence_ids": sorted(r["id"] for r in rows if r["layer"] == "composed" and r["vector_id"] in used),
        "overrides": [o.model_dump(mode="json") for o in plan.overrides],
        "accept_unverified": bool(decision.accepted),
        "accepted_items": [v.item for v in decision.accepted],
    }
    return Built(
        loaded, probe, plan, decision, fields, check, claims, vectors, probe_errors, sandbox_claims, other_modes
    )


def _entry(built: Built) -> tuple[dict, bool]:
    """The launch entry, and whether it may be cached (an adapter that appends the user's args)."""
    from agentbox.sandbox.backend import get_backend
    from agentbox.sandbox.session import entry_from_plan
    from agentbox.sandbox.surfaces import discover

    plan = built.plan
    req = plan.native.requirements
    hidden = get_backend(plan.sandbox.backend).hidden_roots(req, os.environ.get("HOME") or "/root")
    masks = discover(plan.cwd, plan.profile, req.surfaces, hidden)
    argv = get_adapter(plan.harness).interactive_argv(plan.native, [SENTINEL])
    appendable = argv[-1:] == [SENTINEL] and SENTINEL not in argv[:-1]
    sandbox = {**entry_from_plan(plan, masks), "trusted": trusted(built)}
    entry = {
        "format": FORMAT,
        "check": built.check,
        "sandbox": sandbox,
        "harness": [built.probe.binary, *argv[:-1]],
        "run": built.fields,
        "notice": built.decision.notice() if built.decision.accepted else None,
        # checked at each start, cached or not: the harness would start without its model key
        "key_env": built.loaded.profile.model.api_key_env,
    }
    return entry, appendable


def trusted(built: Built) -> dict[str, str]:
    """What the next launch reads back and must not be the run's to write (checked at every start, cached or
    not: `sandbox.session.refuse_writable_state`): the evidence store the gate read, the profile, the binary."""
    return {
        "the evidence store": built.check["evidence"],
        "the profile": built.loaded.source,
        "the harness binary": built.probe.binary,
    }


def launch(
    profile_arg: str,
    cwd: str,
    extra: list[str],
    *,
    evidence: str | None = None,
    accept_unverified: tuple[str, ...] = (),
    binary: str | None = None,
) -> int:
    from agentbox.run.runs import RunStore

    built = build(profile_arg, cwd, evidence=evidence, accept_unverified=accept_unverified, binary=binary)
    if not built.decision.allowed:
        store = RunStore(os.path.join(agentbox_home(), "agentbox.db"))
        store.reap()
        shown = with_remedies(built).message(lead="agent-box: ")
        run_id = store.refuse({**built.fields, "harness_args": extra}, shown.removeprefix("agent-box: "))
        store.close()
        print(f"{shown}\n(run {run_id} recorded as refused: agent-box runs show {run_id})", file=sys.stderr)
        return 3
    entry, cacheable = _entry(built)
    if not cacheable:
        # an adapter that places the user's args itself: build the argv for these args, uncached
        adapter = get_adapter(built.plan.harness)
        entry["harness"] = [built.probe.binary, *adapter.interactive_argv(built.plan.native, extra)]
        return execute(entry, [])
    if not built.loaded.profile.permission_intent.mcp.tools:  # a tool inventory is asked afresh each launch
        with open(built.loaded.source, "rb") as f:
            data = f.read()
        write_marshal_atomic(
            cache_file(data, built.loaded.source, built.plan.cwd, built.check["evidence"], binary, accept_unverified),
            entry,
        )
    return execute(entry, extra)


def with_remedies(built: Built) -> Decision:
    """The refused decision with what its message offers besides the evidence command: the items' YAML to make
    them advisory, the harness versions on which the evidence proves them, and whether the harness can be
    driven in the launch's mode at all. Only a refusal reads every build's evidence for that."""
    from dataclasses import replace

    from agentbox.prove.claims import default_catalogue_dir, reconcile
    from agentbox.prove.evidence import EvidenceRecord, privilege_level
    from agentbox.prove.evidence_index import observed
    from agentbox.core.home import evidence_store
    from agentbox.gate.refusal import Remedies, prove_command
    from agentbox.core.revision import suite_revision
    from agentbox.sandbox.backend import get_backend
    from agentbox.harnesses.tui import unsupported
    from agentbox.prove.vectors import kernel_lacks_here, load_catalogue

    decision = built.decision
    target = decision.target
    version = get_backend(target.backend).backend_version()
    rows = observed(built.check["evidence"], target.backend, privilege=privilege_level(), backend_version=version)
    table = reconcile(
        [EvidenceRecord.model_validate(r) for r in rows],
        load_catalogue(default_catalogue_dir()),
        suite_revision=suite_revision(),
    )
    intent = built.loaded.profile.permission_intent
    stated = {v.item: intent.item(v.item).model_dump(mode="json", exclude_defaults=True) for v in decision.refused}
    proven = proven_elsewhere(table.claims, target, decision.mode, kernel_lacks_here())
    driver = unsupported(target.harness) if decision.mode == "tui" else None
    store = None if target.evidence_dir == str(evidence_store(None)) else target.evidence_dir
    prove = prove_command(built.loaded.source, built.plan.cwd, store, decision.mode)
    return replace(
        decision, remedies=Remedies(stated=stated, proven_elsewhere=proven, driver_missing=driver, prove=prove)
    )
