"""Host-side egress proxy: the only way out of a `bwrap --unshare-net` sandbox, by policy.

Pieces (one job each): `hostnames` (one spelling per host), `policy` (EgressPolicy.decide, no I/O),
`http1` / `sniff` / `bodies` (what is parsed on the wire), `dial` (resolution and upstream connect,
done here: the sandbox has no resolver), `tunnel` and `handler` (one client connection, or one
connection of a fixed route), `decisions` (the JSON Lines decision log), `proxy` (EgressProxy in a
thread; ProxyServer), `process` and `__main__` (`python -m agentbox.egress serve` as a separate
process), `inside` (the sandbox side: socket names, the proxy port and variables).

How a run uses it (`sandbox.session.start_egress`; the plan's `SandboxPlan.egress` is the policy):
1. `policy_for(req.network, req.model_endpoint, req.allow_domains)`; None (unrestricted) means no
   proxy and a shared network namespace. `none` and `restricted` unshare the network; a plan whose
   sandbox must reach nothing (none, no model) has no proxy either.
2. Before bwrap starts, an EgressProxy listens on `<run>/relay/egress.sock` and serves
   `<run>/relay/model.sock` as a fixed route to a loopback model endpoint; every connection of both is
   one line of `<run>/egress.jsonl`. A ProxyStartError (a SandboxError, exit 4) refuses the run.
3. The sandbox's first process is `sandbox/inner_relay.py`, which maps 127.0.0.1:<model port> and
   127.0.0.1:<proxy port> inside the namespace to those sockets and applies the unix-socket filter to
   the command; the environment gets `inside.proxy_env(port)`.
4. Fail closed: the namespace has no route, so a dead proxy or relay means refused connections, never
   a direct path; the relay is the namespace's first process, so its death ends the run, and a proxy
   that dies mid-run ends it too (`watch`).

Submodules are imported on first use, so the sandbox's hot paths can read `inside` cheaply.
"""

__all__ = [
    "EgressPolicy",
    "Endpoint",
    "Decision",
    "policy_for",
    "EgressProxy",
    "ProxyProcess",
    "ProxyStartError",
    "Limits",
    "DecisionLog",
]

_WHERE = {
    "DecisionLog": "decisions",
    "Limits": "handler",
    "Decision": "policy",
    "EgressPolicy": "policy",
    "Endpoint": "policy",
    "policy_for": "policy",
    "ProxyProcess": "process",
    "EgressProxy": "proxy",
    "ProxyStartError": "proxy",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib  # only when a submodule is asked for: `inside` is read on the measured hot paths

    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
