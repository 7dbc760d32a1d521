"""`agent-box acp <profile>`: one endpoint process, one gate decision, one sandbox, one Run.

Order: gate (nothing read, nothing started) -> refused: answer `initialize` with the refusal, record the
refused Run, exit 3 -> allowed: record the Run, materialize the private config, start the egress proxy and
the harness's ACP agent inside the sandbox, relay until either side ends, end the whole process tree,
keep the egress log, record how the Run ended.

How a Run ends: the client closing its stream is the normal end (`finished`, exit 0), unless a prompt was
still running (`interrupted`); a signal to the endpoint is `interrupted` (128+N); the agent exiting or
garbling its stream under the client is `failed` (exit 1, or the agent's own non-zero status); the egress
proxy dying takes the run down (`failed`, exit 4). An endpoint killed outright leaves a `running` Run that
the next command marks `interrupted`, killing what is left (`RunStore.reap`).
"""

from __future__ import annotations

import asyncio
import os
import signal

from acp import RequestError

from ..errors import AgentBoxError
from .gate import answer_with_error, prepare, refusal_data
from .relay import REFUSED, Relay, note, refused

__all__ = ["main", "serve", "surface_policy", "sandbox_entry", "HARNESS_FACTS"]

HARNESS_FACTS = object()  # `serve`'s default: the ACP facts of the plan's harness


def main(profile: str, cwd: str, *, evidence: str | None = None, accept_unverified: tuple[str, ...] = (),
         binary: str | None = None) -> int:
    from ..hot import agentbox_home
    from ..runs import RunStore

    try:
        ready = prepare(profile, cwd, evidence=evidence, accept_unverified=accept_unverified, binary=binary)
    except AgentBoxError as exc:
        note(str(exc))
        answer_with_error(RequestError(REFUSED, f"agent-box: {exc}", {"refusedBy": "agent-box",
                                                                      "exitCode": exc.exit_code}))
        return exc.exit_code
    decision = ready.built.decision
    store = RunStore(os.path.join(agentbox_home(), "agentbox.db"))
    store.reap()
    if not decision.allowed:
        message = decision.message()
        run_id = store.refuse({**ready.built.fields, "mode": "acp", "harness_args": ready.argv}, message)
        store.close()
        note(f"{message}\n(run {run_id} recorded as refused: agent-box runs show {run_id})")
        answer_with_error(refused(message, refusal_data(ready.built, run_id)))
        return 3
    if decision.accepted:
        note(decision.notice())
    built = ready.built
    try:
        return asyncio.run(serve(built.plan, built.loaded.profile, ready.argv, ready.env, built.fields, store,
                                 label=f"{built.plan.harness} {built.probe.version}"))
    finally:
        store.close()


def sandbox_entry(plan) -> dict:
    """The plan's sandbox as plain data (launch's entry), with the project's config surfaces masked."""
    from ..sandbox import bwrap
    from ..sandbox.session import entry_from_plan
    from ..sandbox.surfaces import discover

    req = plan.native.requirements
    masks = discover(plan.cwd, plan.profile, req.surfaces, bwrap.hidden_roots(req, os.environ.get("HOME") or "/root"))
    return entry_from_plan(plan, masks)


def surface_policy(plan, entry: dict, profile, facts=None) -> "SurfacePolicy":
    """The client-surface policy of a compiled plan, with an ACP agent's facts (`acp.AcpEntry`; none: a protocol
    test agent, which reads no `_meta` and has no modes)."""
    from .policy import SurfacePolicy
    from .view import SandboxView, mounts_of

    intent = profile.permission_intent
    session_mcp = None
    if facts is not None and facts.mcp_from_session:
        session_mcp = tuple({"name": name, "command": spec.command, "args": list(spec.args),
                             "env": [{"name": k, "value": v} for k, v in spec.env.items()]}
                            for name, spec in profile.mcp_servers.items() if name in intent.mcp.servers)
    return SurfacePolicy(
        workspace=os.path.realpath(plan.cwd), workspace_access=intent.workspace.access, shell=intent.shell.access,
        view=SandboxView(mounts_of(entry["argv"])),
        meta_keep=facts.meta.keep if facts else (), meta_refuse=dict(facts.meta.refuse) if facts else {},
        refuse_modes=dict(facts.refuse_modes) if facts else {}, session_mcp=session_mcp)


async def serve(plan, profile, argv: list[str], env: dict[str, str], fields: dict, store, *, label: str,
                facts=HARNESS_FACTS, policy_hook=None) -> int:
    """Serve the client on stdio with `argv` as the ACP agent inside `plan`'s sandbox, recorded as one Run
    (`fields`: its columns). `facts`: the agent's ACP facts (`acp.AcpEntry`, None for none), default its harness's.
    `policy_hook`: a testing seam (the `acp` layer's controls take one protection out); the command never sets it."""
    from acp.stdio import stdio_streams

    from ..acp import acp_entry
    from ..hot import agentbox_home
    from ..launch import make_run_dir
    from ..runs import egress_log
    from .sandboxed import STDIO_LIMIT, SandboxedRun
    from .terminals import Terminals

    entry = sandbox_entry(plan)
    run_dir = make_run_dir()
    run_id = store.start({**fields, "mode": "acp", "harness_args": argv, "run_dir": run_dir})
    note(f"run {run_id}: {label} as an ACP agent in the sandbox (agent-box runs show {run_id})")
    sbx: SandboxedRun | None = None
    state, status = "failed", 1
    try:
        sbx = SandboxedRun.open(entry, run_dir, run_id, plan.cwd, env)
        proc = await sbx.spawn(argv)
        policy = surface_policy(plan, entry, profile, acp_entry(plan.harness) if facts is HARNESS_FACTS else facts)
        relay = Relay(policy_hook(policy) if policy_hook is not None else policy,
                      Terminals(lambda argv: sbx.spawn(argv, pipes=False)),
                      on_session=lambda sid: store.add_session(run_id, sid))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, relay._end, "stopped", f"agent-box acp got {signal.Signals(sig).name}",
                                    128 + sig)
        reader, writer = await stdio_streams(limit=STDIO_LIMIT)
        ending = await relay.run(reader, writer, proc)
        agent_status = await SandboxedRun.stop(proc)
        note(f"run {run_id} ended: {ending.detail}")
        if sbx.proxy_notes():
            state, status = "failed", 4
        elif ending.kind == "client_eof":
            state, status = ("interrupted" if ending.prompts_in_flight else "finished"), 0
        elif ending.kind == "stopped":
            state, status = "interrupted", ending.status or 130
        else:
            state, status = "failed", (ending.status or agent_status or 1) if ending.kind == "agent_exit" else 1
    except AgentBoxError as exc:
        note(str(exc))
        status = exc.exit_code
    except OSError as exc:  # bwrap missing, a backing that cannot be created
        note(f"cannot start the sandbox: {exc}")
        status = 4
    finally:
        if sbx is not None:
            done = sbx.close(egress_log(str(agentbox_home()), run_id))
        else:
            from ..sandbox.session import cleanup

            done = cleanup(run_id, run_dir)
        store.finish(run_id, status, done, state)
    return status
