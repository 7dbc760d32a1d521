"""The ACP endpoint alone: `agent-box acp`'s sandbox, relay and client-surface policy, with the protocol test
agent as its ACP agent and no gate (as `sandbox run` is the OS sandbox alone, without a harness).

The endpoint's own protections (what it lets the agent ask of the client) do not depend on which agent asks,
and no pinned adapter asks for most of them; this runs the same `acp_endpoint.endpoint.serve` the command
runs, around `acp_protocol_agent`, so each protection can be attempted on purpose. Test code only: nothing
outside the conformance suite imports it, and `agent-box` has no spelling for it.

    python -m agentbox.testing.acp_endpoint --profile P --workspace W --script STEPS.json
        [--facts HARNESS] [--ro-bind DIR]... [--weaken acp_meta|acp_hold]

`--weaken acp_meta` is a control's (`Control.weaken`): the endpoint passes the client's session `_meta` on
untouched, so the control sees what the options do when nothing refuses them. `--weaken acp_hold`: the endpoint
hands a file request to the client without holding the run's processes still, so the control sees a symlink
swapped in meanwhile lead the client's write out of the workspace.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["main", "AGENT"]

AGENT = str(Path(__file__).with_name("acp_protocol_agent.py"))


def _python_binds(hidden: tuple[str, ...]) -> tuple[str, ...]:
    """The interpreter's installation (and so the `acp` SDK in its site-packages), bound back where the sandbox
    hides it (a pyenv under the home)."""
    from agentbox.compile.mcp_binds import server_binds
    from agentbox.core.profile import McpServer

    return server_binds("protocol-test-agent", McpServer(command=sys.executable), hidden)


def _meta_untouched(policy):
    """The policy, passing every `_meta` key of a client request on as it came."""
    from dataclasses import fields

    from agentbox.acp_endpoint.policy import SurfacePolicy

    class MetaUntouched(SurfacePolicy):
        def meta(self, method, meta):
            return (dict(meta) if isinstance(meta, dict) else {}), []

    return MetaUntouched(**{f.name: getattr(policy, f.name) for f in fields(policy)})


def main(argv: list[str] | None = None) -> int:
    from agentbox.acp_endpoint.sdk import framing

    framing()  # as the command does: the SDK's schema loads in the background
    from agentbox.harnesses.acp import acp_entry
    from agentbox.acp_endpoint.endpoint import sandbox_entry, serve, surface_policy
    from agentbox.compile.compiler import compile_plan
    from agentbox.errors import AgentBoxError
    from agentbox.core.home import db_path
    from agentbox.core.profile import load_profile
    from agentbox.run.runs import RunStore
    from agentbox.sandbox.backend import get_backend

    p = argparse.ArgumentParser(prog="python -m agentbox.testing.acp_endpoint")
    p.add_argument("--profile", required=True)
    p.add_argument("--workspace", required=True)
    p.add_argument("--script", required=True, help="the protocol test agent's steps (JSON)")
    p.add_argument("--facts", help="hold the agent to this harness's ACP facts (its _meta keys and modes)")
    p.add_argument("--ro-bind", action="append", default=[])
    p.add_argument("--weaken", action="append", default=[], choices=["acp_meta", "acp_hold"])
    args = p.parse_args(argv)
    try:
        loaded = load_profile(args.profile)
        req_home = os.environ.get("HOME") or "/root"
        plan = compile_plan(loaded, args.workspace)
        hidden = get_backend(plan.sandbox.backend).hidden_roots(plan.native.requirements, req_home)
        binds = (
            *_python_binds(hidden),
            str(Path(AGENT).parent),
            str(Path(args.script).resolve().parent),
            *args.ro_bind,
        )
        plan = compile_plan(loaded, args.workspace, ro_binds=tuple(dict.fromkeys(binds)))
        agent = [sys.executable, "-I", AGENT, str(Path(args.script).resolve())]
        fields = {
            "profile": loaded.profile.name,
            "profile_digest": loaded.digest,
            "profile_source": os.path.abspath(loaded.source),
            "project_root": plan.cwd,
            "harness": plan.harness,
            "backend": plan.sandbox.backend,
            "plan_hash": plan.hash,
        }
        store = RunStore(db_path())
        try:
            entry = sandbox_entry(plan)
            policy = surface_policy(plan, entry, loaded.profile, acp_entry(args.facts) if args.facts else None)
            return serve(
                entry,
                plan.cwd,
                policy,
                agent,
                {},
                fields,
                store,
                label="the protocol test agent",
                policy_hook=_meta_untouched if "acp_meta" in args.weaken else None,
                hold="acp_hold" not in args.weaken,
            )
        finally:
            store.close()
    except AgentBoxError as exc:
        print(f"agent-box: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
