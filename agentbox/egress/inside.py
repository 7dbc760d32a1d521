"""What the sandbox side of the egress path looks like: socket names, the proxy's port, its variables.

Standard library only and free of imports: the hot paths read it. The run's relay folder (bound at
/tmp/agentbox/relay) holds the proxy's socket and the model route's; `sandbox/inner_relay.py` maps a
loopback port inside the network namespace to each.
"""

from __future__ import annotations

__all__ = [
    "SOCKET_NAME",
    "MODEL_SOCKET",
    "LOG_NAME",
    "PROXY_PORT",
    "proxy_port",
    "proxy_env",
    "NO_PROXY",
    "loopback_socket",
    "MODEL_ROUTE_PORT",
    "MODEL_PORT_TOKEN",
    "PROXY_PORT_TOKEN",
    "free_port",
    "CA_DIR",
    "CA_NAME",
    "BUNDLE_NAME",
    "trust_env",
]

SOCKET_NAME = "egress.sock"  # the proxy, in the run's relay folder
MODEL_SOCKET = "model.sock"  # the fixed route to a loopback model endpoint, next to it
LOG_NAME = "egress.jsonl"  # the decision log, in the run folder
PROXY_PORT = 3128
# The model route's port inside the namespace for a model that is not on the host's loopback (or is, below
# 1024): any port works there, the namespace's loopback is the run's own.
MODEL_ROUTE_PORT = 3127
# Under a shared network the model route is a loopback port of the host, known only once the proxy listens:
# compiled configs carry this token in its place, and the run's start writes the number over it.
MODEL_PORT_TOKEN = "{agentbox_model_port}"
# The same for the proxy itself under a shared network, where it serves the hosts the profile's secrets are
# bound to (the run's proxy variables name this port).
PROXY_PORT_TOKEN = "{agentbox_proxy_port}"
# Loopback inside the namespace reaches only the in-sandbox relay (the model port among it), so it is
# the one thing that must not be sent to the proxy.
NO_PROXY = "127.0.0.1,localhost,::1"


# The run's CA (its certificate only) and a bundle of the host's CAs plus it, bound read-only into the sandbox
# when a secret is bound to a host; the variables below make the usual clients trust it.
CA_DIR = "/tmp/agentbox/ca"
CA_NAME, BUNDLE_NAME = "ca.pem", "bundle.pem"


def trust_env() -> dict[str, str]:
    bundle = f"{CA_DIR}/{BUNDLE_NAME}"
    return {
        "SSL_CERT_FILE": bundle,
        "REQUESTS_CA_BUNDLE": bundle,
        "CURL_CA_BUNDLE": bundle,
        "GIT_SSL_CAINFO": bundle,
        "NODE_EXTRA_CA_CERTS": f"{CA_DIR}/{CA_NAME}",
    }


def free_port(first: int, taken: set[int] | frozenset[int] = frozenset()) -> int:
    """`first`, or the next port no route of the relay listens on."""
    port = first
    while port in taken:
        port += 1
    return port


def proxy_port(taken: set[int] | frozenset[int] = frozenset()) -> int:
    """The proxy's port inside the sandbox: 3128, or the next one no route of the relay listens on."""
    return free_port(PROXY_PORT, taken)


def loopback_socket(port: int) -> str:
    """The fixed route to an allowed loopback port of the host (`localhost:5432`), in the relay folder."""
    return f"loopback-{port}.sock"


def proxy_env(port: int | str) -> dict[str, str]:
    """The proxy variables, in both spellings: curl and others read only the lower-case http_proxy."""
    url = f"http://127.0.0.1:{port}"
    env = {"HTTP_PROXY": url, "HTTPS_PROXY": url, "ALL_PROXY": url, "NO_PROXY": NO_PROXY}
    env.update({k.lower(): v for k, v in env.items()})
    return env
