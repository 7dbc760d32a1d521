"""A run's credentials at its start: a fresh placeholder for each, the real value read from the host.

The placeholders go into the sandbox's environment; the real values go only to the egress proxy, which
lives in this (the launcher's) process and swaps them in on the way out (`egress/swap.py`). Nothing here
writes a value anywhere. Standard library only: the hot paths (`launch`, `sandbox run`) call it.
"""

from __future__ import annotations

import os

# `typing` itself is not imported: it costs ~3 ms of the measured hot paths (benchmarks/sandbox_run.py)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Issued", "issue", "placeholder"]

_ALPHABETS = {
    "alphanumeric": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "hex": "0123456789abcdef",
}


def placeholder(spec: Mapping) -> str:
    """A new random placeholder shaped as the credential's `Placeholder` says."""
    return spec.get("prefix", "") + _random_text(
        _ALPHABETS[spec.get("alphabet", "alphanumeric")], int(spec.get("length", 48))
    )


def _random_text(alphabet: str, length: int) -> str:
    """`length` letters of `alphabet`, each uniform, from the kernel's random source. Not `secrets`: it loads hmac
    and OpenSSL (~5 ms) on the measured hot path (benchmarks/sandbox_run.py)."""
    n = len(alphabet)
    limit = 256 - 256 % n  # a byte at or past the last whole multiple of n would favour the first letters
    out: list[str] = []
    while len(out) < length:
        out.extend(alphabet[b % n] for b in os.urandom(length) if b < limit)
    return "".join(out[:length])


def _apart(cred: Mapping, value: str) -> str:
    """A placeholder that neither holds nor is held by the value (the swap must tell them apart)."""
    for _ in range(64):
        fake = placeholder(cred.get("placeholder") or {})
        if fake not in value and value not in fake:
            return fake
    from agentbox.errors import SandboxError

    raise SandboxError(
        f"{cred['source']}: the value of {cred['variable']} is too short to be told apart from its "
        "placeholder (sandbox layer); refusing to start the run"
    )


class Issued:
    """What a run's start made of its credentials: the sandbox's variables, the proxy's swaps, and the optional
    credentials the host did not have (the harness starts without them)."""

    def __init__(self) -> None:
        self.env: dict[str, str] = {}
        self.swaps: list[dict] = []
        self.missing: list[str] = []


def issue(credentials: list[dict], source: Mapping[str, str]) -> Issued:
    """Placeholders and swaps for `credentials` (an entry's plain-data Credential list), the real values from
    `source`. A required credential the host does not have refuses the run (SandboxError, exit 4)."""
    out = Issued()
    for cred in credentials:
        name = cred["variable"]
        value = source.get(name)
        if not value:
            if cred.get("required", True):
                from agentbox.errors import SandboxError

                raise SandboxError(
                    f"{cred['source']}: {name} is not set in the host environment, so the egress proxy has no value to "
                    f"swap in for its placeholder (sandbox layer); set {name} or remove the binding"
                )
            out.missing.append(name)
            continue
        fake = _apart(cred, value)
        out.env[name] = fake
        out.swaps.append(
            {
                "variable": name,
                "placeholder": fake,
                "value": value,
                "headers": list(cred["headers"]),
                "hosts": list(cred.get("hosts", ())),
                "model": bool(cred.get("model")),
            }
        )
    return out
