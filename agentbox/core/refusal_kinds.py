"""The refusal a blocked attempt must have met, by kind (agentbox/data/refusal_kinds.yaml).

A `blocked` counts only with positive proof that the attempt happened and met the mechanism under test: the
vector declares the kinds of refusal that are that mechanism (`Vector.refusal`, or a default by oracle and
capability), and after a blocked attack the runner calls `recognise` on what the attempt printed. Nothing
expected seen: the outcome is an error, never a block (an argument error, a missing tool, a broken sandbox
and a crash all look blocked to an oracle that reads the host alone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from agentbox.prove.vectors import Vector

__all__ = ["Kind", "Table", "table", "expected_kinds", "recognise", "Evidence"]

_DATA = Path(__file__).parents[1] / "data" / "refusal_kinds.yaml"


class Kind(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    reason: str
    patterns: tuple[str, ...] = ()
    source: Literal["text", "vocabulary", "egress", "clean", "oracle"] = Field("text", alias="from")
    examples: tuple[str, ...] = ()


class Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    met: tuple[str, ...]
    oracle: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    capability: dict[str, tuple[str, ...]] = Field(default_factory=dict)


class Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kinds: dict[str, Kind]
    failures: tuple[str, ...] = ()
    defaults: Defaults

    def undefined(self, names: Iterable[str]) -> list[str]:
        return sorted(set(names) - set(self.kinds))


@lru_cache(maxsize=1)
def table() -> Table:
    return Table.model_validate(yaml.safe_load(_DATA.read_text()))


def expected_kinds(vector: Vector) -> tuple[str, ...]:
    """The refusal kinds that count as meeting `vector`'s mechanism: its own, else the default for its oracle's
    `met`, its oracle kind, then its capability (empty: none declared, which the catalogue test refuses)."""
    if vector.refusal is not None:
        return tuple(vector.refusal)
    d = table().defaults
    if vector.oracle.met:
        return d.met
    return d.oracle.get(vector.oracle.kind) or d.capability.get(vector.capability, ())


def _search(patterns: Iterable[str], text: str, flags: int = 0) -> re.Match[str] | None:
    for p in patterns:
        m = re.search(p, text, re.M | flags)
        if m:
            return m
    return None


@dataclass
class Evidence:
    """What an attempt left to recognise a refusal in."""

    text: str  # what the attempt printed (the command's output; the tool results the model received)
    harness_output: str = ""  # the harness's own output (a policy message it never sent the model)
    policy: tuple[str, ...] = ()  # the harness's policy messages (its vocabulary's `refusals`); none: no harness
    egress: list[dict[str, Any]] | None = None  # the egress proxy's decisions, when the run had a proxy
    # the ports of the run's own targets (its listeners): only a denial towards one of them is the attempt's; a
    # harness's own background requests (Hermes' update check) are denied in every run under a proxy
    ports: frozenset[int] = frozenset()


def _denied(seen: Evidence) -> list[dict[str, Any]]:
    return [
        d
        for d in seen.egress or ()
        if not d.get("allowed")
        and d.get("method") != "ROUTE"
        and d.get("route") != "model"
        and d.get("port") in seen.ports
    ]


def recognise(kinds: Iterable[str], seen: Evidence) -> tuple[str, str] | None:
    """The first of `kinds` met in `seen`, with what showed it (a line of the text, a decision), or None."""
    t = table()
    for name in kinds:
        kind = t.kinds[name]
        if kind.source == "oracle":
            return name, "the oracle's own reading"
        if kind.source == "vocabulary":
            m = _search(seen.policy, f"{seen.text}\n{seen.harness_output}") if seen.policy else None
            if m:
                return name, m.group(0)
            continue
        if kind.source == "egress":
            denied = _denied(seen)
            if denied:
                d = denied[0]
                return (
                    name,
                    f"the egress proxy denied {d.get('method') or '?'} {d.get('host')}:{d.get('port')} "
                    f"({d.get('reason')})",
                )
        if kind.source == "clean":
            if _clean(seen):
                return name, "the attempt ran and printed no error"
            continue
        m = _search(kind.patterns, seen.text, re.I)  # shells differ: zsh says "read-only file system"
        if m:
            return name, m.group(0)
    return None


def _clean(seen: Evidence) -> bool:
    t = table()
    errors = [p for k in t.kinds.values() if k.source in ("text", "egress") for p in k.patterns]
    return (
        _search((*errors, *t.failures), seen.text, re.I) is None
        and _search(seen.policy, seen.text) is None
        and not _denied(seen)
        and not (seen.policy and _search(seen.policy, seen.harness_output))
    )


def describe(kinds: Iterable[str]) -> str:
    return "|".join(kinds) or "nothing declared"
