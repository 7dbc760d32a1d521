"""Drive a harness as an ACP agent, the mode `agent-box acp` starts, for the negative suite (`--agentbox-mode acp`).

The harness's ACP agent (its adapter, or its native `acp` subcommand: agentbox/data/acp.yaml) runs in the
layer's plan (composed: inside the sandbox; harness: alone), driven by the SDK's client: initialize, a session
in the workspace, one prompt. Like the TUI driver declines every dialog, the client rejects every permission
request and offers no file system or terminal of its own: what the agent does then is its own enforcement in
this mode. A control's client approves them instead: with the protection removed, the person says yes. (The
endpoint's own client-surface protections are the `acp` layer's vectors, not this driver's.)
"""

from __future__ import annotations

import re
import time

__all__ = ["drive", "DECLINED"]

DECLINED_NOTE = "agentbox-acp: the client rejected {n} permission request(s)"
DECLINED = re.escape(DECLINED_NOTE.split("{n}")[0])  # a refusal pattern: a rejected request may end the turn


def _session_mcp(req) -> list:
    """The profile's allowed MCP servers, for an agent that takes them only from the session (as the endpoint
    hands them over)."""
    from acp.schema import EnvVariable, McpServerStdio

    from agentbox.harnesses.acp import acp_entry

    profile = req.loaded.profile
    entry = acp_entry(profile.harness)
    assert entry is not None  # only a harness with an ACP entry is driven (`unsupported`)
    if not entry.mcp_from_session:
        return []
    return [
        McpServerStdio(
            name=name,
            command=spec.command,
            args=list(spec.args),
            env=[EnvVariable(name=k, value=v) for k, v in spec.env.items()],
        )
        for name, spec in profile.mcp_servers.items()
        if name in profile.permission_intent.mcp.servers
    ]


def drive(req, harness_name: str, binary: str, approve: bool = False, adapter_binary: str | None = None):
    """Run `req` with the harness as an ACP agent; a RunOutcome whose stdout is what the agent said (its messages
    and tool calls) and whose exit code is None when the prompt never ended.

    `approve`: the client approves each permission request (a control: the protection removed includes the person
    who says yes; `hermes acp` asks the client before every edit, whatever its config says). `adapter_binary`: the
    adapter install to start (the one the record names); by default the newest installed."""
    from agentbox.harnesses.acp import acp_command, acp_entry
    from agentbox.run.harness_run import NAMESPACE_GRACE, HarnessCommand, RunOutcome, kill_marked, prepared
    from agentbox.harnesses.installs import find_binary
    from agentbox.testing.acp_client import RecordingClient, run_acp

    entry = acp_entry(harness_name)
    assert entry is not None  # only a harness with an ACP entry is driven (`unsupported`)
    adapter: str | None = adapter_binary
    if entry.adapter and adapter is None:
        found = find_binary(entry.adapter)
        assert found is not None  # only a harness whose ACP adapter is installed is driven (`unsupported`)
        adapter = found.binary

    def command(result):
        argv, env, binds = acp_command(harness_name, result, binary, adapter)
        return HarnessCommand(argv, env, binds)

    with prepared(req, command=command) as run:
        client = RecordingClient("approve" if approve else "deny")
        start = time.monotonic()
        out = run_acp(
            run.argv,
            run.env,
            run.cwd,
            req.prompt,
            client=client,
            timeout=req.timeout,
            pass_fds=run.pass_fds,
            mcp_servers=_session_mcp(req),
        )
        elapsed = time.monotonic() - start
        leftovers = kill_marked(run.run_id, grace=NAMESPACE_GRACE)
        ended = out.stop_reason is not None and out.error is None and not out.timed_out
        calls = [f"{getattr(c, 'title', '') or ''} {getattr(c, 'raw_input', '') or ''}" for c in client.tool_calls()]
        said = "\n".join([client.agent_text(), *calls])
        note = DECLINED_NOTE.format(n=len(client.permission_requests)) if client.permission_requests else ""
        failure = "; ".join(run.started.notes) if run.started is not None and run.started.notes else None
        return RunOutcome(
            exit_code=0 if ended else None,
            stdout=f"{said}\n{note}".strip(),
            stderr="" if ended else f"{out.error or 'no answer'}; {out.stderr[-2000:]}",
            elapsed=elapsed,
            timed_out=out.timed_out,
            plan=run.plan,
            argv=run.argv,
            artifacts=run.artifacts,
            run_dir=run.run_dir,
            leftovers=leftovers,
            egress=run.end_egress(),
            failure=failure,
        )
