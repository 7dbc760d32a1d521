"""One spelling per host, so that the policy, the resolver and the SNI / Host checks compare like with like.

Clients and servers accept many spellings of one host: `Example.COM.`, `[::1]`, `0:0::1`, fullwidth
or other Unicode forms, and the numeric IPv4 forms that inet_aton takes (`2130706433`, `0x7f.1`,
`0177.0.0.1`, `127.1`). A check that compares raw strings is bypassed by any of them, so every host
goes through `normalize` first, and `kind` says whether the result is a name, a standard IP literal
or a numeric form that only some parsers read as an address (refused outright).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

__all__ = ["normalize", "kind", "is_internal", "is_loopback_name", "HostKind"]

HostKind = Literal["name", "ip", "numeric"]

_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")
# WHATWG URL parsing treats a host whose last label is a number (decimal, or 0x hex) as IPv4, and so do
# inet_aton-based resolvers: such a host is never a name, whatever else it looks like.
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


def normalize(raw: str) -> str:
    """The canonical spelling of a host: lower case, one trailing dot dropped, IDNA A-labels, IPv6
    compressed without brackets, a standard IPv4 literal as dotted quad. Raises ValueError."""
    # a blank or control character is refused, never cut: an SNI of "example.com\x1f" passed as example.com here,
    # while the server gets it as it came and routes it to its default host (red team, 2026-12-06)
    if any(c.isspace() or not c.isprintable() for c in raw):
        raise ValueError(f"{raw!r} is not a host name (a blank or control character in it)")
    host = raw
    if host.startswith("[") and host.endswith("]"):
        return _ipv6(host[1:-1], raw)
    if ":" in host:
        return _ipv6(host, raw)
    if host.endswith("."):
        host = host[:-1]
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")  # nameprep folds case, width and dots
        except UnicodeError as exc:
            raise ValueError(f"{raw!r} is not a valid international host name ({exc})") from None
    host = host.lower()
    if not host or len(host) > 253:
        raise ValueError(f"{raw!r} is not a host name (empty or longer than 253 characters)")
    for label in host.split("."):
        if not _LABEL.match(label):
            raise ValueError(f"{raw!r} is not a host name (bad label {label!r})")
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        return host


def _ipv6(text: str, raw: str) -> str:
    if "%" in text:  # a zone id names a local interface: never a destination for a sandbox
        raise ValueError(f"{raw!r} has an IPv6 zone id")
    try:
        return ipaddress.IPv6Address(text).compressed
    except ValueError:
        raise ValueError(f"{raw!r} is not a valid IPv6 address") from None


def kind(host: str) -> HostKind:
    """What a normalized host is: a name, a standard IP literal, or a numeric form to refuse."""
    try:
        ipaddress.ip_address(host)
        return "ip"
    except ValueError:
        pass
    return "numeric" if _NUMERIC_LABEL.match(host.rsplit(".", 1)[-1]) else "name"


def is_internal(address: str) -> bool:
    """Loopback, private, link-local (cloud metadata), multicast and reserved addresses: what a name the
    sandbox asked for must not resolve to, since the proxy runs on the host and would reach them."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def is_loopback_name(host: str) -> bool:
    """`localhost` or a loopback address (normalized host)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
