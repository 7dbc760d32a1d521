"""Name resolution and the upstream connection, both done by the proxy (the sandbox has no resolver).

The connection goes to an address this module resolved, never to a name the client spelled, so what
the policy allowed is what gets dialled.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import cast

from agentbox.egress import hostnames
from agentbox.egress.policy import EgressPolicy

__all__ = ["Refused", "resolve", "connect"]


class Refused(Exception):
    """The exchange ends with the given status and reason (403 refused, 502 unreachable)."""

    def __init__(self, status: int, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.status, self.reason, self.detail = status, reason, detail


async def resolve(policy: EgressPolicy, host: str, port: int) -> list[str]:
    """Addresses to dial for an allowed, normalized host: an override, the literal, or getaddrinfo's."""
    override = policy.resolver_overrides.get(host)
    if override is not None:
        return [override]
    if hostnames.kind(host) == "ip":
        return [host]
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused(502, "resolve_failed", f"{host}: {exc}") from None
    # SOCK_STREAM getaddrinfo yields AF_INET/AF_INET6 sockaddrs only, whose first item is the address string
    addresses = list(dict.fromkeys(cast(str, info[4][0]) for info in infos))
    # The model endpoint and a loopback entry of allow_domains (`localhost:5432`) are named by the profile
    # itself; any other name is the sandbox's choice and must not lead back into the host's loopback or the
    # local networks around it.
    if policy.is_loopback_route(host, port) and not policy.allow_internal_addresses:
        loopback = [a for a in addresses if hostnames.is_loopback_name(a)]
        if not loopback:
            raise Refused(403, "loopback_entry_not_loopback", f"{host} -> {', '.join(addresses)}")
        return loopback
    if not policy.allow_internal_addresses and not policy.is_model_endpoint(host, port):
        public = [a for a in addresses if not hostnames.is_internal(a)]
        if not public:
            raise Refused(403, "resolves_to_internal_address", f"{host} -> {', '.join(addresses)}")
        addresses = public
    return addresses


async def connect(
    addresses: list[str], port: int, timeout: float, limit: int, tls=None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str]:
    """(reader, writer, address) of the first address that accepts within `timeout` seconds overall;
    `tls`: (SSLContext, server name) to speak TLS to it, the certificate verified for that name."""
    errors = []
    ssl_args = {"ssl": tls[0], "server_hostname": tls[1]} if tls else {}
    try:
        async with asyncio.timeout(timeout):
            for address in addresses:
                try:
                    reader, writer = await asyncio.open_connection(address, port, limit=limit, **ssl_args)
                    return reader, writer, address
                except ssl.SSLError as exc:  # a certificate that does not verify is no address to try the next of
                    raise Refused(502, "upstream_tls_failed", f"{tls[1]} ({address}): {exc.reason or exc}") from None
                except OSError as exc:
                    errors.append(f"{address}: {exc.strerror or exc}")
    except TimeoutError:
        raise Refused(502, "connect_timeout", f"no answer within {timeout:g} s") from None
    raise Refused(502, "connect_failed", "; ".join(errors))
