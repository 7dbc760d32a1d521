"""Host-side egress proxy: the only way out of a `bwrap --unshare-net` sandbox, by policy.

Pieces (one job each): `hostnames` (one spelling per host), `policy` (EgressPolicy.decide, no I/O),
`http1` / `sniff` / `bodies` (what is parsed on the wire), `dial` (resolution and upstream connect,
done here: the sandbox has no resolver), `tunnel` and `handler` (one client connection),
`decisions` (the JSON Lines decision log), `proxy` (EgressProxy in a thread; ProxyServer),
`process` and `__main__` (`python -m agentbox.egress serve` as a separate process), `inside` (the
sandbox side: relay argv and proxy variables).

How a run uses it (phase 2):
1. `policy_for(req.network, req.model_endpoint, req.allow_domains)`; None (unrestricted) means no
   proxy and a shared network namespace, as today. Otherwise the plan unshares the network for
   `restricted` too, and for `none` with a non-loopback model endpoint.
2. Before bwrap starts, `ProxyProcess(policy, <run>/egress-policy.json, <run>/egress.jsonl,
   socket_path=<run>/relay/egress.sock).start()`; a ProxyStartError refuses the run. `watch()` kills
   the run if the proxy dies later.
3. The command's argv is prefixed with `sandbox.relay.inner_relay_argv(...)` (model relay, which also
   copies inner_relay.py into the relay folder) when the model is on loopback, then with
   `inside.relay_argv(PORT, python)` (PORT differs from the model's), and the environment gets
   `inside.proxy_env(PORT)`: HTTP(S)_PROXY / ALL_PROXY at 127.0.0.1:PORT, NO_PROXY only loopback.
4. Fail closed: the netns has no route, so a dead proxy or relay means refused connections, never
   a direct path. The relay is the sandbox's first process under `--unshare-pid`: if it dies, bwrap's
   init exits and the kernel kills the whole namespace, so the run ends.
"""

from .decisions import DecisionLog
from .handler import Limits
from .policy import Decision, EgressPolicy, Endpoint, policy_for
from .process import ProxyProcess
from .proxy import EgressProxy, ProxyStartError

__all__ = ["EgressPolicy", "Endpoint", "Decision", "policy_for", "EgressProxy", "ProxyProcess", "ProxyStartError",
           "Limits", "DecisionLog"]
