"""Dotted version numbers, compared numerically (1.18.9 < 1.18.16)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

__all__ = ["Bound", "Version", "in_range", "in_range_text"]


@dataclass(frozen=True, order=True)
class Version:
    parts: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> "Version":
        if not re.fullmatch(r"[0-9]+(\.[0-9]+)*", text):
            raise ValueError(f"{text!r} is not a dotted version number")
        parts = tuple(int(p) for p in text.split("."))
        while len(parts) > 1 and parts[-1] == 0:
            parts = parts[:-1]
        return cls(parts)

    def __str__(self) -> str:
        return ".".join(map(str, self.parts))


def in_range(v: Version, low: str | None, high: str | None) -> bool:
    """Inclusive on both ends. A bound written with fewer than three parts is a prefix: `0.160`
    includes every 0.160.x; `0.18.0` is exact and excludes 0.18.1."""
    if low is not None and v < Version.parse(low):
        return False
    if high is not None:
        hi = Version.parse(high)
        if v > hi:
            written = high.split(".")
            if len(written) >= 3:
                return False
            prefix = tuple(int(p) for p in written)
            if v.parts[: len(prefix)] != prefix:
                return False
    return True


def _bound(value: str | None) -> str | None:
    if value is not None:
        Version.parse(value)  # a ValueError naming the value
    return value


Bound = Annotated[str | None, AfterValidator(_bound)]  # a range's end in data files: a dotted version, inclusive


def in_range_text(version: str | None, low: str | None, high: str | None) -> bool:
    """`in_range` for a version as a probe reports it: one that is unknown or not dotted is in no bounded range."""
    if low is None and high is None:
        return True
    try:
        return version is not None and in_range(Version.parse(version), low, high)
    except ValueError:
        return False
