"""EgressPolicy: which host:port the sandbox may reach through the proxy, decided without any I/O.

The model endpoint the profile names is always allowed, and only that exact host:port. Under
`command_network: restricted` the `allow_domains` entries are allowed too: `host` (ports 80 and
443), `host:port`, `*.suffix` (any name strictly below the suffix, never the suffix itself).
IP literals are refused unless an entry names that address; the numeric IPv4 spellings that only
some parsers read as addresses are refused always. `unrestricted` needs no proxy (`policy_for`
returns None).
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Literal, NamedTuple
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentbox.egress import hostnames

__all__ = ["Endpoint", "AllowEntry", "Decision", "EgressPolicy", "parse_entry", "policy_for", "DEFAULT_PORTS"]

DEFAULT_PORTS = (80, 443)


class Decision(NamedTuple):
    allowed: bool
    reason: str
    host: str | None = None  # the normalized host the decision is about (None when it did not parse)


class Endpoint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str
    port: int = Field(ge=1, le=65535)

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        return hostnames.normalize(value)

    @classmethod
    def parse(cls, text: str) -> "Endpoint":
        """`host:port` or `[v6]:port`, as RuntimeRequirements.model_endpoint spells it."""
        host, sep, port = text.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"{text!r} is not host:port")
        return cls(host=host, port=int(port))

    @classmethod
    def from_base_url(cls, base_url: str) -> "Endpoint":
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{base_url!r} is not an http(s) URL with a host")
        return cls(host=parts.hostname, port=parts.port or (443 if parts.scheme == "https" else 80))

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


class AllowEntry(NamedTuple):
    source: str  # the allow_domains string, as the profile wrote it
    host: str  # normalized; for a wildcard, the suffix without "*."
    wildcard: bool
    ports: tuple[int, ...]

    def matches(self, host: str, host_kind: str) -> bool:
        if self.wildcard:
            return host_kind == "name" and host.endswith("." + self.host)
        return host == self.host


def parse_entry(text: str) -> AllowEntry:
    """One allow_domains string: `host`, `host:port`, `*.suffix[:port]`, `ip[:port]`, `[v6][:port]`."""
    rest = text.strip()
    ports: tuple[int, ...] = DEFAULT_PORTS
    if rest.startswith("["):
        inner, _, tail = rest[1:].partition("]")
        if tail and not tail.startswith(":"):
            raise ValueError(f"allow_domains entry {text!r} is not [address] or [address]:port")
        if tail:
            ports = (_port(tail[1:], text),)
        rest = f"[{inner}]"
    elif rest.count(":") == 1:
        rest, port = rest.split(":")
        ports = (_port(port, text),)
    wildcard = rest.startswith("*.")
    try:
        host = hostnames.normalize(rest[2:] if wildcard else rest)
    except ValueError as exc:
        raise ValueError(f"allow_domains entry {text!r}: {exc}") from None
    host_kind = hostnames.kind(host)
    if host_kind == "numeric":
        raise ValueError(f"allow_domains entry {text!r}: write an IP address as a dotted quad or in IPv6 form")
    if wildcard and host_kind != "name":
        raise ValueError(f"allow_domains entry {text!r}: a wildcard needs a domain name after '*.'")
    return AllowEntry(text, host, wildcard, ports)


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"allow_domains entry {entry!r}: port {text!r} is not in 1-65535")
    return int(text)


class EgressPolicy(BaseModel):
    """The proxy's whole policy; serialized as the JSON file `python -m agentbox.egress serve` reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_endpoint: Endpoint | None = None
    model_tls: bool = False  # the model endpoint speaks https: the model route forwards over verified TLS
    allow_domains: tuple[str, ...] = ()
    # name -> address, consulted before the system resolver (tests point names at loopback listeners)
    resolver_overrides: dict[str, str] = Field(default_factory=dict)
    # a name from allow_domains may not resolve to loopback / private / link-local addresses unless this is set
    allow_internal_addresses: bool = False
    # every host is allowed: a shared network's proxy (unrestricted), which exists only to swap bound secrets in
    allow_all: bool = False
    # the sandbox shares this host's loopback (a shared network): a loopback port nothing listened on may be the
    # run's own listener, so every loopback upstream is checked to be the host's before anything is sent to it
    shared_loopback: bool = False

    @field_validator("allow_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            parse_entry(entry)
        return value

    @field_validator("resolver_overrides")
    @classmethod
    def _overrides(cls, value: dict[str, str]) -> dict[str, str]:
        out = {}
        for name, address in value.items():
            try:
                out[hostnames.normalize(name)] = str(ipaddress.ip_address(address))
            except ValueError as exc:
                raise ValueError(f"resolver_overrides {name!r} -> {address!r}: {exc}") from None
        return out

    def loopback_routes(self) -> tuple[Endpoint, ...]:
        """Entries that name this host's own loopback with a port (a database, a dev server): the profile's own
        choice, so they are dialled although loopback is internal, and the sandbox reaches each on the same
        loopback port through a fixed route. One per port, in port order."""
        out: dict[int, Endpoint] = {}
        for entry in _entries(self.allow_domains):
            if not entry.wildcard and hostnames.is_loopback_name(entry.host):
                for port in entry.ports:
                    out.setdefault(port, Endpoint(host=entry.host, port=port))
        return tuple(out[p] for p in sorted(out))

    def is_loopback_route(self, host: str, port: int) -> bool:
        return any(e.host == host and e.port == port for e in self.loopback_routes())

    def is_model_endpoint(self, host: str, port: int) -> bool:
        me = self.model_endpoint
        return me is not None and me.host == host and me.port == port

    def decide(self, host: str, port: int) -> Decision:
        """Allowed or not, and why; `host` in any spelling a client may send."""
        try:
            name = hostnames.normalize(host)
        except ValueError:
            return Decision(False, "invalid_host")
        if not 0 < port < 65536:
            return Decision(False, "invalid_port", name)
        if self.is_model_endpoint(name, port):
            return Decision(True, "model_endpoint", name)
        host_kind = hostnames.kind(name)
        if host_kind == "numeric":
            return Decision(False, "ip_literal_nonstandard", name)
        if self.allow_all:
            return Decision(True, "unrestricted", name)
        other_port = self.model_endpoint is not None and self.model_endpoint.host == name
        for entry in _entries(self.allow_domains):
            if entry.matches(name, host_kind):
                if port in entry.ports:
                    return Decision(True, f"allow_domains:{entry.source}", name)
                other_port = True
        if other_port:
            return Decision(False, "port_not_allowed", name)
        return Decision(False, "ip_literal" if host_kind == "ip" else "not_allowed", name)


@functools.lru_cache(maxsize=64)
def _entries(allow_domains: tuple[str, ...]) -> tuple[AllowEntry, ...]:
    # keyed by the field's value, not stored on the model: a model_copy(update=...) cannot go stale
    return tuple(parse_entry(e) for e in allow_domains)


def policy_for(
    network: Literal["none", "restricted", "unrestricted"],
    model: str | None,
    allow_domains: tuple[str, ...] = (),
    resolver_overrides: dict[str, str] | None = None,
    model_tls: bool = False,
) -> EgressPolicy | None:
    """The policy a compiled plan implies; `model` is a base URL or the plan's `host:port` model endpoint
    (`model_tls`: that endpoint speaks https, as a base URL's scheme says itself).

    None for `unrestricted`: that run shares the host's network and needs no proxy.
    """
    if network == "unrestricted":
        return None
    if network == "none" and allow_domains:
        raise ValueError("allow_domains only applies to command_network: restricted")
    endpoint = None
    if model:
        endpoint = Endpoint.from_base_url(model) if "://" in model else Endpoint.parse(model)
    return EgressPolicy(
        model_endpoint=endpoint,
        model_tls=model_tls or bool(model and model.startswith("https://")),
        allow_domains=tuple(allow_domains) if network == "restricted" else (),
        resolver_overrides=resolver_overrides or {},
    )
