"""The credential swap: the sandbox holds per-run placeholders, the proxy alone holds the real values.

A run's swap table maps each placeholder to its real value, the headers it may be swapped into (a
template such as `Authorization: Bearer {value}`), and where it is bound: the model route, or a list of
hosts (allow_domains syntax). Every request head the proxy can read (the model route's, a plain HTTP
request's, a plaintext or TLS-terminated tunnel's) goes through `rewrite`:

- a placeholder in one of its own headers, shaped as its template, on a request to where it is bound,
  is replaced by the real value;
- a placeholder anywhere else in the head of a request to where it is NOT bound (a header, the target) is
  a credential replay: the request is refused, so the value never leaves for such a host, and the attempt
  is logged;
- a placeholder in another header of a bound request stays as it is (the upstream sees a random string).

Bodies are not scanned: a placeholder there reaches the upstream as the placeholder, never as the value.

A request to where a secret is bound (whether or not this one carries its placeholder) asks for an
identity-encoded response: its Accept-Encoding becomes `identity` and its TE goes. What comes back is
searched for the real values (scrub.py), and a search cannot see into a gzip or br body. Only asking
would leave a host that compresses anyway; only refusing coded bodies would break every client that
asked for gzip (the host would honour it). So both: the request asks for identity, which an honest
host honours and its client reads as well, and a coded body from there is refused (scrub.Unreadable).

Pure: no I/O, no asyncio.
"""

from __future__ import annotations

from typing import NamedTuple

from agentbox.egress import hostnames
from agentbox.egress.http1 import RequestHead
from agentbox.egress.policy import AllowEntry, parse_entry

__all__ = ["Swap", "SwapTable", "Rewritten", "Replay", "parse_header", "identity_encoded"]


class Replay(Exception):
    """A placeholder went where its credential is not bound: the request must be refused."""

    def __init__(self, variables: tuple[str, ...], where: str):
        super().__init__(f"the placeholder of {', '.join(variables)} was sent to {where}, where it is not bound")
        self.variables = variables


def parse_header(text: str) -> tuple[str, str, str]:
    """`Name: prefix{value}suffix` -> (lower-case name, prefix, suffix); ValueError when it is not that."""
    name, sep, template = text.partition(":")
    name, template = name.strip(), template.strip()
    if not sep or not name or not name.replace("-", "").isalnum():
        raise ValueError(f"{text!r} is not `Header-Name: template`")
    if template.count("{value}") != 1:
        raise ValueError(f"{text!r}: the template must hold {{value}} exactly once")
    prefix, _, suffix = template.partition("{value}")
    return name.lower(), prefix, suffix


class Swap(NamedTuple):
    """One credential of a run, as the proxy holds it."""

    variable: str  # its name in the sandbox (logged; the value never is)
    placeholder: str
    value: str
    headers: tuple[tuple[str, str, str], ...]  # parse_header() of each allowed header
    hosts: tuple[AllowEntry, ...] = ()
    model: bool = False  # bound to the model route

    @classmethod
    def make(cls, variable: str, placeholder: str, value: str, headers, hosts=(), model: bool = False) -> "Swap":
        if not placeholder or placeholder in value or value in placeholder:
            raise ValueError(f"{variable}: the placeholder must be distinct from the value")
        if not value.isprintable() or not value.isascii():
            # it goes into a header as it is (CR or LF would start another header), and the scrub of what comes
            # back relies on it holding no line break
            raise ValueError(f"{variable}: the value holds a character other than printable ASCII")
        return cls(
            variable,
            placeholder,
            value,
            tuple(parse_header(h) for h in headers),
            tuple(parse_entry(h) for h in hosts),
            model,
        )

    def bound_to(self, host: str | None, port: int | None, model_route: bool) -> bool:
        if model_route:
            return self.model
        if host is None or port is None:
            return False
        try:
            name = hostnames.normalize(host)
        except ValueError:
            return False
        kind = hostnames.kind(name)
        return any(e.matches(name, kind) and port in e.ports for e in self.hosts)

    def swapped(self, name: str, value: str) -> str | None:
        """The header value with the real credential, when `name: value` is one of this swap's templates
        holding exactly its placeholder; else None."""
        for header, prefix, suffix in self.headers:
            # the scheme word is case-insensitive (`bearer`), the placeholder and the rest are exact
            head, rest = value[: len(prefix)], value[len(prefix) :]
            if name == header and head.lower() == prefix.lower() and rest == self.placeholder + suffix:
                return head + self.value + suffix
        return None


class Rewritten(NamedTuple):
    headers: list[tuple[str, str]]
    swapped: tuple[str, ...]  # variables swapped in
    replayed: tuple[str, ...]  # variables whose placeholder went where it is not bound (refuse the request)


class SwapTable:
    """A run's swaps; empty when the run has no credential (then `rewrite` changes nothing)."""

    def __init__(self, swaps: tuple[Swap, ...] | list[Swap] = ()):
        self.swaps = tuple(swaps)

    def __bool__(self) -> bool:
        return bool(self.swaps)

    def bound_hosts(self) -> tuple[AllowEntry, ...]:
        return tuple(e for s in self.swaps for e in s.hosts)

    def binds(self, host: str | None, port: int | None, model_route: bool = False) -> bool:
        """Is any credential bound to this destination (then its responses are asked for in identity)?"""
        return any(s.bound_to(host, port, model_route) for s in self.swaps)

    def secrets(self) -> list[tuple[str, str]]:
        """(variable, real value) of each credential: what must never come back (scrub.py)."""
        return [(s.variable, s.value) for s in self.swaps]

    def is_bound(self, host: str, port: int) -> bool:
        """Does any credential bind host:port (the proxy then terminates TLS to it, to swap inside)?"""
        return any(s.bound_to(host, port, False) for s in self.swaps)

    def rewrite(
        self, target: str, headers: list[tuple[str, str]], host: str | None, port: int | None, model_route: bool = False
    ) -> Rewritten:
        """The head's headers with every bound placeholder swapped in (see the module docstring)."""
        if not self.swaps:
            return Rewritten(headers, (), ())
        out, swapped, replayed = [], [], []
        for swap in self.swaps:
            if not swap.bound_to(host, port, model_route) and (
                swap.placeholder in target or any(swap.placeholder in v for _, v in headers)
            ):
                replayed.append(swap.variable)
        for name, value in headers:
            new = None
            for swap in self.swaps:
                if swap.placeholder in value and swap.bound_to(host, port, model_route):
                    new = swap.swapped(name.lower(), value)
                    if new is not None:
                        swapped.append(swap.variable)
                        break
            out.append((name, value if new is None else new))
        return Rewritten(out, tuple(dict.fromkeys(swapped)), tuple(replayed))

    def apply(
        self, head: RequestHead, host: str | None, port: int | None, model_route: bool = False
    ) -> tuple[RequestHead, tuple[str, ...]]:
        """`head` with its bound placeholders swapped in (and, towards where a secret is bound, asking for an
        identity-encoded response), and the variables swapped; raises Replay. `head` itself when unchanged."""
        done = self.rewrite(head.target, head.headers, host, port, model_route)
        if done.replayed:
            raise Replay(done.replayed, "the model route" if model_route else f"{host}:{port}")
        if not self.binds(host, port, model_route):
            return head, done.swapped
        return head._replace(headers=identity_encoded(done.headers)), done.swapped


def identity_encoded(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`headers` asking for a response body as it is: no content coding (Accept-Encoding), no transfer coding
    but chunked (TE)."""
    kept = [(k, v) for k, v in headers if k.lower() not in ("accept-encoding", "te")]
    return kept + [("Accept-Encoding", "identity")]
