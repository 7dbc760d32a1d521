"""The compatibility report's content: what `--json` writes and what the HTML page embeds, once.

These models are the single source of truth; `agentbox/schemas/report.schema.json` is exported from
them (a test pins the two together). After changing a model, regenerate it with
`python -m agentbox.report.model --schema > agentbox/schemas/report.schema.json`.

The report is normalised so that it stays small however many versions it covers: vectors and
evidence records are stated once (`vectors`, `observations` keyed by record id) and cells refer to
them, and the drill-downs are built from these references by the page's script when opened.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter

from agentbox.core.capability import Support
from agentbox.harnesses.agent_build import AgentBuild
from agentbox.prove.claims import Drift
from agentbox.prove.claims_diff import STATE_RANK, ClaimChange, State
from agentbox.prove.evidence import Layer, Outcome

__all__ = [
    "SCHEMA_VERSION",
    "StateInfo",
    "Column",
    "VectorInfo",
    "Observation",
    "VectorRow",
    "Cell",
    "VersionDiff",
    "Recorded",
    "HostFacts",
    "Report",
    "load_states",
    "json_schema",
]

SCHEMA_VERSION: Final = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StateInfo(_Strict):
    """One legend entry; `rank` orders the states for diffs (higher is better; drift has none)."""

    state: Literal["exact", "partial", "unsupported", "unverified", "refuted", "drift"]
    symbol: str
    colour: str
    background: str
    meaning: str
    rank: int | None = None


class Column(_Strict):
    key: str  # "harness version backend privilege mode", what cells refer to
    harness: str  # "-" for the sandbox backend alone (and for the ACP endpoint alone, mode `acp`)
    version: str  # the harness version, or the backend version in a sandbox-alone column
    backend: str
    binary_sha256: str | None = None
    # who ran the suite and how the harness was driven: each pair is a claim of its own (root's evidence proves
    # nothing for a user's launch, a TUI's permission handling is not its headless run's)
    privilege: str = "?"
    mode: str = "headless"
    # an acp column of a harness an ACP adapter drives: the adapter build its records ran (`Claim.adapter`)
    adapter: AgentBuild | None = None


class VectorInfo(_Strict):
    capability: str
    surface: str
    description: str


class Observation(_Strict):
    """One evidence record, as the drill-down shows it. The harness, its version and binary are the
    cell's column: a column only ever draws on records of its own build."""

    layer: Layer
    outcome: Outcome
    control_outcome: Literal["passed", "failed", "not_run"]
    observation: str  # verbatim; it may carry a tool's log excerpt
    duration: float
    nodeid: str
    timestamp: str
    sandbox_version: str | None


class VectorRow(_Strict):
    vector_id: str
    # What the claim made of this vector: blocked, escaped (refutes the claim), escaped as declared,
    # missing, error, skipped, control failed/not_run, inapplicable (the recording kernel lacked what the attack
    # needs), or "not judged" (a layer the verdict ignores).
    verdict: str
    records: dict[Layer, str]  # layer -> observation id (the latest record; absent: never observed)
    drift: tuple[Drift, ...] = ()


class Cell(_Strict):
    column: str
    capability: str
    state: State
    drift: bool
    label: str  # as `agent-box evidence claims` prints it
    declared: Support
    layers: dict[str, Support]  # what each layer declares
    enforced_by: tuple[str, ...]  # the layers whose declaration makes `declared`; empty: none enforces
    decisive_layer: Layer  # whose observations decide the state: composed, or sandbox in a backend column
    blocked: int
    total: int  # the vectors that bear on it, skipped and missing ones included
    run: int = 0  # of those, observed by current records
    as_declared: int = 0  # of `total`, observed as the declarations predict (the legend's "n/m")
    note: str
    vectors: tuple[VectorRow, ...]


class VersionDiff(_Strict):
    """How one harness (or backend, harness "-") changed between two of its versions."""

    harness: str
    old_version: str
    new_version: str
    changes: tuple[ClaimChange, ...]


class Recorded(_Strict):
    records: int
    first: str | None  # the oldest record's timestamp
    last: str | None


class HostFacts(_Strict):
    """Every distinct value the records carry: one each when the evidence came from one run."""

    kernels: tuple[str, ...]
    agentbox_versions: tuple[str, ...]
    suite_revisions: tuple[str, ...]
    catalogue_digests: tuple[str, ...]


class Report(_Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    generator: str  # the agentbox version that built the report
    catalogue_digest: str
    recorded: Recorded
    host: HostFacts
    states: tuple[StateInfo, ...]
    capabilities: tuple[str, ...]
    columns: tuple[Column, ...]
    cells: tuple[Cell, ...]
    vectors: dict[str, VectorInfo]
    observations: dict[str, Observation]  # record id -> the record
    diffs: tuple[VersionDiff, ...]  # every pair of adjacent versions of each harness
    notes: tuple[str, ...] = ()


@lru_cache(maxsize=1)
def load_states() -> tuple[StateInfo, ...]:
    """The legend (agentbox/report/states.yaml), ranked by claims_diff.STATE_RANK."""
    import yaml

    raw = yaml.safe_load((Path(__file__).parent / "states.yaml").read_text(encoding="utf-8"))
    states = TypeAdapter(tuple[StateInfo, ...]).validate_python(raw)
    return tuple(s.model_copy(update={"rank": STATE_RANK.get(s.state)}) for s in states)


def json_schema() -> dict:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **Report.model_json_schema()}


if __name__ == "__main__":
    from agentbox.core.schema_export import main

    sys.exit(main("agentbox.report.model", json_schema, sys.argv[1:]))
