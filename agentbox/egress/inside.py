"""What the sandbox side of the egress path looks like: the relayed socket, the relay argv, the proxy variables.

The proxy's unix socket lives in the run's relay folder, which bwrap already binds at
/tmp/agentbox/relay; `sandbox/inner_relay.py` (copied there by `sandbox.relay.inner_relay_argv`) maps
a loopback port inside the network namespace to it. Relays chain: each one listens, then execs the
rest of its argv, so the model relay and the egress relay both come up before the command starts.
"""

from __future__ import annotations

__all__ = ["SANDBOX_SOCKET", "SOCKET_NAME", "INNER_RELAY", "relay_argv", "proxy_env"]

SOCKET_NAME = "egress.sock"  # in the run's relay folder, next to model.sock
SANDBOX_SOCKET = f"/tmp/agentbox/relay/{SOCKET_NAME}"
INNER_RELAY = "/tmp/agentbox/relay/inner_relay.py"
# Loopback inside the namespace reaches only the in-sandbox relays (the model relay among them), so it
# is the one thing that must not be sent to the proxy.
NO_PROXY = "127.0.0.1,localhost,::1"


def relay_argv(port: int, python: str) -> list[str]:
    """argv prefix that listens on 127.0.0.1:port inside the sandbox and carries each connection to the proxy."""
    return [python, "-I", INNER_RELAY, str(port), SANDBOX_SOCKET, "--"]


def proxy_env(port: int) -> dict[str, str]:
    """The proxy variables, in both spellings: curl and others read only the lower-case http_proxy."""
    url = f"http://127.0.0.1:{port}"
    env = {"HTTP_PROXY": url, "HTTPS_PROXY": url, "ALL_PROXY": url, "NO_PROXY": NO_PROXY}
    env.update({k.lower(): v for k, v in env.items()})
    return env
