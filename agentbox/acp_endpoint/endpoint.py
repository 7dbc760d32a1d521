"""`agent-box acp <profile>`: one endpoint process, one gate decision, one sandbox, one Run.

Order: gate (nothing read, nothing started) -> refused: answer `initialize` with the refusal, record the
refused Run, exit 3 -> allowed: record the Run, materialize the private config, bind the egress proxy's
sockets, start the harness's ACP agent inside the sandbox, relay until either side ends (the proxy serves
from the agent's `initialize` answer on), end the whole process tree, keep the egress log, record how the
Run ended.

An allowed decision is cached as `launch` caches one (`launch.py`: keyed by the profile's bytes, the project,
the evidence store, the flags and the package; re-checked against the binaries, the project's config surfaces
and the store in a few syscalls), so a later start goes from its cache straight to the sandbox (no argparse,
no asyncio, no pydantic before the agent starts), and the agent starts while the endpoint still loads its event
loop, the SDK's connection (sdk.py; its schema loads once `initialize` is answered) and its policy; the egress
proxy (pydantic again) starts serving once `initialize` is answered, on sockets bound before the agent started:
the editor waits for little more than the agent's own start. A refusal is never cached.

How a Run ends: the client closing its stream is the normal end (`finished`, exit 0), unless a prompt was
still running (`interrupted`); a signal to the endpoint is `interrupted` (128+N); the agent exiting or
garbling its stream under the client is `failed` (exit 1, or the agent's own non-zero status); the egress
proxy dying takes the run down (`failed`, exit 4). An endpoint killed outright leaves a `running` Run that
the next command marks `interrupted`, killing what is left (`RunStore.reap`).
"""

from __future__ import annotations

import json
import os

from agentbox.errors import AgentBoxError
from agentbox.acp_endpoint.notes import note

__all__ = ["main", "serve", "surface_policy", "sandbox_entry", "cache_path"]

FORMAT = "acp-1"


def cache_path(
    profile_bytes: bytes,
    profile_path: str,
    cwd: str,
    evidence: str,
    binary: str | None,
    accept_unverified: tuple[str, ...],
) -> str:
    """Where an allowed decision for exactly these inputs is kept (launch's key, with this command's format)."""
    from agentbox.run.launch import cache_file

    return cache_file(
        profile_bytes, profile_path, cwd, evidence, binary, accept_unverified, kind="acp", fmt=FORMAT, ext="json"
    )


def _cached(
    profile: str, cwd: str, evidence: str | None, accept_unverified: tuple[str, ...], binary: str | None
) -> tuple[dict, str] | None:
    """The cached allowed start for these inputs, if it is still current; else None (the gate decides afresh)."""
    from agentbox.hot import agentbox_home, resolve_profile_path, stat_key
    from agentbox.run.launch import (
        _current,
    )  # launch's freshness check: binaries, build, surfaces, uid, bwrap, evidence

    path = resolve_profile_path(profile)
    real_cwd = os.path.realpath(cwd)
    if path is None or not os.path.isdir(real_cwd):
        return None
    store = evidence or os.path.join(agentbox_home(), "evidence")
    try:
        with open(path, "rb") as f:
            key = cache_path(f.read(), path, real_cwd, store, binary, accept_unverified)
        with open(key) as f:
            entry = json.load(f)
        if entry.get("format") != FORMAT or not _current(entry, binary):
            return None
        if stat_key(entry["argv"][0]) != entry["agent_stat"]:  # the ACP adapter reinstalled or upgraded
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return entry, key


def main(
    profile: str,
    cwd: str,
    *,
    evidence: str | None = None,
    accept_unverified: tuple[str, ...] = (),
    binary: str | None = None,
) -> int:
    from agentbox.hot import agentbox_home, write_json_atomic
    from agentbox.run.runs import RunStore

    cached = _cached(profile, cwd, evidence, accept_unverified, binary)
    start: dict | int
    if cached is not None:
        start = cached[0]
    else:
        start = _decide(profile, cwd, evidence, accept_unverified, binary)
        if isinstance(start, int):
            return start
        if start.pop("cacheable"):
            with open(start["check"]["profile_path"], "rb") as f:
                write_json_atomic(
                    cache_path(
                        f.read(),
                        start["check"]["profile_path"],
                        start["cwd"],
                        start["check"]["evidence"],
                        binary,
                        accept_unverified,
                    ),
                    start,
                )
    if start.get("notice"):
        note(start["notice"])

    def policy():  # made once the agent is starting (the policy's modules are on the editor's wait otherwise)
        from agentbox.acp_endpoint.policy import SurfacePolicy

        return SurfacePolicy.from_data(start["policy"], start["sandbox"]["argv"])

    store = RunStore(os.path.join(agentbox_home(), "agentbox.db"))
    try:
        store.reap()
        from agentbox.run.profile_state import state_dir

        kept = state_dir(agentbox_home(), start["run"]["profile"], start["run"]["harness"])
        return serve(
            start["sandbox"],
            start["cwd"],
            policy,
            start["argv"],
            start["env"],
            start["run"],
            store,
            label=start["label"],
            state_dir=kept,
        )
    finally:
        store.close()


def _decide(
    profile: str, cwd: str, evidence: str | None, accept_unverified: tuple[str, ...], binary: str | None
) -> dict | int:
    """The gate, afresh: the start entry when it allows, else the exit status after answering the client."""
    from agentbox.acp_endpoint.sdk import framing

    framing()
    from acp.exceptions import RequestError

    from agentbox.harnesses.acp import acp_entry
    from agentbox.hot import agentbox_home, stat_key
    from agentbox.run.launch_plan import trusted, with_remedies
    from agentbox.run.runs import RunStore
    from agentbox.acp_endpoint.gate import answer_with_error, prepare, refusal_data
    from agentbox.acp_endpoint.relay import REFUSED, refused

    try:
        ready = prepare(profile, cwd, evidence=evidence, accept_unverified=accept_unverified, binary=binary)
    except AgentBoxError as exc:
        note(str(exc))
        answer_with_error(
            RequestError(REFUSED, f"agent-box: {exc}", {"refusedBy": "agent-box", "exitCode": exc.exit_code})
        )
        return exc.exit_code
    built = ready.built
    if not built.decision.allowed:
        store = RunStore(os.path.join(agentbox_home(), "agentbox.db"))
        store.reap()
        # the refusal offers what launch's does, `agent-box prove ... --mode acp` among it
        message = with_remedies(built).message()
        run_id = store.refuse({**built.fields, "mode": "acp", "harness_args": ready.argv}, message)
        store.close()
        note(f"{message}\n(run {run_id} recorded as refused: agent-box runs show {run_id})")
        answer_with_error(refused(message, refusal_data(built, run_id)))
        return 3
    entry = {**sandbox_entry(built.plan), "trusted": trusted(built)}
    policy = surface_policy(built.plan, entry, built.loaded.profile, acp_entry(built.plan.harness))
    return {
        "format": FORMAT,
        "check": {**built.check, "profile_path": built.loaded.source},
        "sandbox": entry,
        "cwd": built.plan.cwd,
        "policy": policy.data(),
        "argv": ready.argv,
        "env": ready.env,
        "run": built.fields,
        "label": f"{built.plan.harness} {built.probe.version}",
        "agent_stat": stat_key(ready.argv[0]),
        "notice": built.decision.notice() if built.decision.accepted else None,
        # a tool allowlist's inventory is asked afresh at every start (as launch does)
        "cacheable": not built.loaded.profile.permission_intent.mcp.tools,
    }


def _in_thread(fn, name: str):
    """`fn()` in a daemon thread; its concurrent.futures.Future."""
    import threading
    from concurrent.futures import Future

    future: Future = Future()

    def run() -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def sandbox_entry(plan) -> dict:
    """The plan's sandbox as plain data (launch's entry), with the project's config surfaces masked."""
    from agentbox.sandbox.backend import get_backend
    from agentbox.sandbox.session import entry_from_plan
    from agentbox.sandbox.surfaces import discover

    req = plan.native.requirements
    hidden = get_backend(plan.sandbox.backend).hidden_roots(req, os.environ.get("HOME") or "/root")
    masks = discover(plan.cwd, plan.profile, req.surfaces, hidden)
    return entry_from_plan(plan, masks)


def surface_policy(plan, entry: dict, profile, facts=None):
    """The client-surface policy of a compiled plan, with an ACP agent's facts (`acp.AcpEntry`; none: a protocol
    test agent, which reads no `_meta` and has no modes)."""
    from agentbox.acp_endpoint.policy import SurfacePolicy
    from agentbox.sandbox.view import SandboxView, mounts_of

    intent = profile.permission_intent
    session_mcp = None
    if facts is not None and facts.mcp_from_session:
        session_mcp = tuple(
            {
                "name": name,
                "command": spec.command,
                "args": list(spec.args),
                "env": [{"name": k, "value": v} for k, v in spec.env.items()],
            }
            for name, spec in profile.mcp_servers.items()
            if name in intent.mcp.servers
        )
    return SurfacePolicy(
        workspace=os.path.realpath(plan.cwd),
        workspace_access=intent.workspace.access,
        shell=intent.shell.access,
        view=SandboxView(mounts_of(entry["argv"])),
        meta_keep=facts.meta.keep if facts else (),
        meta_refuse=dict(facts.meta.refuse) if facts else {},
        refuse_modes=dict(facts.refuse_modes) if facts else {},
        session_mcp=session_mcp,
    )


def serve(
    entry: dict,
    cwd: str,
    policy,
    argv: list[str],
    env: dict[str, str],
    fields: dict,
    store,
    *,
    label: str,
    policy_hook=None,
    hold: bool = True,
    state_dir: str | None = None,
) -> int:
    """Serve the client on stdio with `argv` as the ACP agent inside the sandbox `entry` describes, recorded as one
    Run (`fields`: its columns), its client surfaces held by `policy` (a SurfacePolicy, or a function that makes
    one: the command's is read from its cache once the agent is starting). `policy_hook` and `hold=False`:
    testing seams (the `acp` layer's controls take one protection out); the command never sets them. `state_dir`:
    the profile's kept answers (`profile_state`), which the command passes as `launch` does; the suite's runs keep
    none.

    The Run is recorded, the sandbox made and the agent started before asyncio is even imported: the editor waits
    for the agent's `initialize` answer, and the event loop, the SDK's connection and the policy load while the
    agent starts (measured: benchmarks/acp_endpoint.py)."""
    from agentbox.hot import agentbox_home, private_folder
    from agentbox.run.lifecycle import Record, cannot_start, sandboxed
    from agentbox.run.runs import egress_log
    from agentbox.acp_endpoint.sandboxed import SandboxedRun

    record = Record(store, {**fields, "mode": "acp", "harness_args": argv})
    proxy: list = []  # the egress proxy's start (a Future), once begun
    try:
        with sandboxed(
            entry,
            private_folder("agentbox-launch-"),
            record=record,
            extra_env=env,
            serve_later=True,
            state_dir=state_dir,
            egress_copy=lambda rid: egress_log(str(agentbox_home()), rid),
            tell=note,
        ) as run:
            note(f"run {run.run_id}: {label} as an ACP agent in the sandbox (agent-box runs show {run.run_id})")
            sbx = SandboxedRun(run, cwd)
            try:
                try:
                    agent = sbx.start(argv)
                except OSError as exc:
                    raise cannot_start(exc) from exc
                import asyncio

                ending, agent_status = asyncio.run(
                    _relay(sbx, agent, entry, policy, store, run.run_id, policy_hook, hold, proxy)
                )
            finally:
                if proxy:
                    from concurrent.futures import wait

                    wait(proxy)  # started or failed: then it can be stopped
            note(f"run {run.run_id} ended: {ending.detail}")
            if ending.kind == "client_eof":
                run.ended(0, "interrupted" if ending.prompts_in_flight else "finished")
            elif ending.kind == "stopped":
                run.ended(ending.status or 130, "interrupted")
            else:
                run.ended((ending.status or agent_status or 1) if ending.kind == "agent_exit" else 1, "failed")
    except AgentBoxError as exc:
        note(str(exc))
        return exc.exit_code
    assert run.status is not None  # run.ended() above gave it an exit status
    return run.status


async def _relay(sbx, agent, entry: dict, policy, store, run_id: str, policy_hook, hold: bool, proxy: list):
    """The relay between this process's stdio and the started agent, until either ends: (its Ending, the agent's
    exit status). The egress proxy starts serving once the agent has answered `initialize`, or the client sent
    anything else (`proxy` gets its start)."""
    import asyncio
    import signal

    # the agent starts meanwhile: the SDK's connection loads now (its schema once `initialize` is answered)
    from agentbox.acp_endpoint.sdk import framing, load_after

    framing()
    from agentbox.acp_endpoint.hold import CannotHold, Hold, NoHold
    from agentbox.acp_endpoint.policy import SurfacePolicy
    from agentbox.acp_endpoint.relay import Relay
    from agentbox.acp_endpoint.sandboxed import STDIO_LIMIT, SandboxedRun
    from agentbox.acp_endpoint.stdio import stdio_streams
    from agentbox.acp_endpoint.terminals import Terminals

    if not isinstance(policy, SurfacePolicy):
        policy = policy()
    # what the client may write for the agent is what the run itself can: its view is the started run's argv,
    # which holds the workspace's host-executed paths too (bound at the start, after the plan's own mounts)
    from dataclasses import replace

    from agentbox.sandbox.view import SandboxView, mounts_of

    policy = replace(policy, view=SandboxView(mounts_of(sbx.started.argv)))
    proc = await SandboxedRun.adopt(agent)
    # the run's processes are the endpoint's descendants only where each sandbox has a PID namespace of its own
    still = (Hold() if "--unshare-pid" in entry["argv"] else CannotHold()) if hold else NoHold()
    relay: Relay | None = None

    def serve_proxy() -> None:
        """The egress proxy starts serving the sockets the agent was given (bound before it started: a connection
        made before waits for the policy), in a thread, once the agent has answered `initialize`: the proxy's
        start (its policy model, pydantic) would otherwise compete with the agent's own for the CPU while the
        editor waits. Before the schema's load (never two threads importing one package), once."""
        if proxy:
            return
        proxy.append(_in_thread(sbx.serve_proxy, "agentbox-acp-egress"))
        load_after(proxy[0])

        def started(done: asyncio.Future) -> None:
            if done.cancelled() or done.exception() is None:
                return
            assert relay is not None  # serve_proxy is the relay's on_ready, so the relay is made by now
            relay._end("proxy", f"the egress proxy did not start: {done.exception()}", 4)

        asyncio.wrap_future(proxy[0]).add_done_callback(started)

    relay = Relay(
        policy_hook(policy) if policy_hook is not None else policy,
        Terminals(lambda command: sbx.spawn(command, pipes=False)),
        on_session=lambda sid: store.add_session(run_id, sid),
        hold=still,
        on_ready=serve_proxy,
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, relay._end, "stopped", f"agent-box acp got {signal.Signals(sig).name}", 128 + sig)
    reader, writer = await stdio_streams(limit=STDIO_LIMIT)
    ending = await relay.run(reader, writer, proc)  # a run that ends before `initialize` never starts the proxy:
    return ending, await SandboxedRun.stop(proc)  # its bound sockets are closed at the end, refusing their waiters
