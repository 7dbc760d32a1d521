"""The upgrade canary's expected failures (`--agentbox-baseline FILE`): what an entry names, and the file.

An entry says what it expects to keep happening, field for field, and matches a failure of the run
only when every field is equal. So an entry that expects a vector's control to fail on one harness
version can never also excuse that vector escaping there, in another layer, or on the next version:
that is a new failure, and the entry, no longer happening, fails the run as stale. The first format
keyed entries by failure id, and `test:NODEID` matched any failure of that test, a real escape
included; the loader refuses it and prints the entry to write instead.

    schema_version: 2
    expected_failures:
      - {harness: hermes, version: "0.13.0", vector: env-parent-environ, layer: harness, outcome: error,
         reason: "Hermes 0.13.0 masks the control's api_key lines"}

Four kinds of entry, told apart by their fields:

- a vector run (`vector`, `layer`, `outcome`, and `harness` or, for a sandbox-alone run, `backend`):
  drift (observed `blocked` or `escaped` against the declarations), a run that ended in `error`, or a
  layer that went from blocked to `escaped` since the previous version;
- a claim (`capability`, `backend`, `outcome`: the state it fell to) that got worse than in the
  previous version while no vector's observation weakened (a declaration changed, a vector errored or
  stopped running);
- `untested_range: true`: a version outside the adapter's tested range whose claims are not verified;
- `test`: a test that failed without recording any vector run (a golden or a smoke).

The pydantic model is the single source of truth; `agentbox/schemas/canary-baseline.schema.json` is
exported from it (a test pins the two together); after changing the model, regenerate it with
`python -m agentbox.prove.canary_baseline --schema > agentbox/schemas/canary-baseline.schema.json`.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

from agentbox.prove.claims_diff import State
from agentbox.errors import InputError
from agentbox.prove.evidence import Layer
from agentbox.core.registry import harness_names

__all__ = [
    "FailureKey",
    "ExpectedVector",
    "ExpectedClaim",
    "ExpectedUntestedRange",
    "ExpectedTestFailure",
    "Expected",
    "Baseline",
    "load_baseline",
    "json_schema",
]

SCHEMA_VERSION: Final = 2


class FailureKey(BaseModel):
    """What identifies a canary failure. A baseline entry matches a failure when their keys are equal."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    harness: str | None = None
    backend: str | None = None
    version: str | None = None
    vector: str | None = None
    layer: Layer | None = None
    capability: str | None = None
    outcome: str | None = None
    untested_range: bool = False
    test: str | None = None

    def text(self) -> str:
        """One line, as the summary prints an entry or a failure."""
        if self.test is not None:
            return f"test {self.test}"
        build = f"{self.harness or self.backend}@{self.version}"
        if self.untested_range:
            return f"{build} untested_range"
        if self.capability is not None:
            return f"{build} {self.backend}/{self.capability} {self.outcome}"
        return f"{build} {self.vector}/{self.layer} {self.outcome}"


def _quoted(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f'quote the version ("{value}"): YAML reads an unquoted 2.10 as the number 2.1')
    return value


Version = Annotated[str, BeforeValidator(_quoted)]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    reason: str = Field(min_length=1, description="why the failure is expected; printed with it")

    def key(self) -> FailureKey:
        return FailureKey(**self.model_dump(exclude={"reason"}))


class ExpectedVector(_Entry):
    """A vector run that keeps failing with this outcome on this build, in this layer."""

    harness: str | None = Field(None, description="the harness whose run it is")
    backend: str | None = Field(None, description="instead of harness: a sandbox-alone run of this backend")
    version: Version = Field(description="the harness version (the backend version for a sandbox-alone run)")
    vector: str
    layer: Layer
    outcome: Literal["blocked", "escaped", "error"] = Field(
        description="what the run observes: blocked or escaped (for drift, the side observed against the "
        "declarations; escaped also for a layer that weakened since the previous version), "
        "or error (the run or its positive control failed)"
    )

    @model_validator(mode="after")
    def _one_subject(self) -> "ExpectedVector":
        if (self.harness is None) == (self.backend is None):
            raise ValueError("name either harness (a harness's run) or backend (a sandbox-alone run)")
        if self.backend is not None and self.layer != "sandbox":
            raise ValueError("a sandbox-alone run (backend) is in the sandbox layer")
        return self


class ExpectedClaim(_Entry):
    """A claim that fell below the previous version's while no vector's observation weakened."""

    harness: str
    version: Version
    backend: str
    capability: str
    outcome: State = Field(description="the state the claim fell to")


class ExpectedUntestedRange(_Entry):
    """A version outside its adapter's tested range whose claims are not all verified."""

    harness: str
    version: Version
    untested_range: Literal[True]


class ExpectedTestFailure(_Entry):
    """A test that fails without recording a vector run (a golden or a smoke). A test that records one is
    a vector run, and only an `ExpectedVector` entry matches it."""

    test: str = Field(description="the pytest node id")

    @model_validator(mode="after")
    def _no_vector_run(self) -> "ExpectedTestFailure":
        run = vector_run(self.test)
        if run is not None:
            raise ValueError(
                f"this test runs vector {run['vector']}: name what it observes instead, "
                f'{{harness: {run["harness"]}, version: "{run["version"]}", vector: {run["vector"]}, '
                f"layer: {run['layer']}, outcome: OUTCOME}}"
            )
        return self


def _kind(value: Any) -> str:
    if isinstance(value, BaseModel):
        return {ExpectedClaim: "claim", ExpectedUntestedRange: "untested_range", ExpectedTestFailure: "test"}.get(
            type(value), "vector"
        )
    keys = value.keys() if isinstance(value, dict) else ()
    for field, kind in (("test", "test"), ("untested_range", "untested_range"), ("capability", "claim")):
        if field in keys:
            return kind
    return "vector"


Expected = Annotated[
    Union[
        Annotated[ExpectedVector, Tag("vector")],
        Annotated[ExpectedClaim, Tag("claim")],
        Annotated[ExpectedUntestedRange, Tag("untested_range")],
        Annotated[ExpectedTestFailure, Tag("test")],
    ],
    Discriminator(_kind),
]


class Baseline(BaseModel):
    """A canary baseline file: the failures a run may have without failing."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Agent-Box upgrade canary baseline")
    schema_version: Literal[2] = SCHEMA_VERSION
    expected_failures: tuple[Expected, ...] = ()
    source: SkipJsonSchema[str] = Field("", exclude=True)  # the file it was read from

    @model_validator(mode="after")
    def _each_once(self) -> "Baseline":
        seen: set[FailureKey] = set()
        for i, entry in enumerate(self.expected_failures):
            if entry.key() in seen:
                raise ValueError(f"expected_failures.{i} ({entry.key().text()}) is listed twice")
            seen.add(entry.key())
        return self

    def reasons(self) -> dict[FailureKey, str]:
        return {e.key(): e.reason for e in self.expected_failures}


def load_baseline(path: str | Path) -> Baseline:
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise InputError(f"cannot read the baseline: {exc.strerror}", file=str(p)) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", file=str(p)) from None
    if not isinstance(data, dict):
        raise InputError("a baseline is a mapping with `expected_failures:`, a list of entries", file=str(p))
    old = _first_format(data.get("expected_failures"))
    if old:
        field, fid, reason = old[0]
        more = f" ({len(old) - 1} more entr(ies) of that format follow)" if len(old) > 1 else ""
        raise InputError(
            f"the `failure id: reason` format is refused: an id such as `test:NODEID` matched any "
            f"later failure of its test, escapes included. Entries are a list now, each naming the "
            f"outcome it expects; instead of this one write\n  {migration(fid, reason)}\n"
            f"with the OUTCOME (blocked, escaped or error) or STATE the canary report's failure shows"
            f"{more}",
            file=str(p),
            field=field,
        )
    try:
        return Baseline.model_validate({**data, "source": str(p)})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"] if not isinstance(x, str) or x not in _TAGS)
        raise InputError(err["msg"].removeprefix("Value error, "), file=str(p), field=loc or None) from None


def _first_format(entries: Any) -> list[tuple[str, str, str]]:
    """(field, failure id, reason) of each entry written in the first format: a `failure id: reason`
    mapping, or bare failure ids in a list."""
    if isinstance(entries, dict):
        return [(f"expected_failures.{fid}", str(fid), str(why)) for fid, why in entries.items()]
    if isinstance(entries, list):
        return [(f"expected_failures.{i}", item, "WHY") for i, item in enumerate(entries) if isinstance(item, str)]
    return []


_TAGS = {"vector", "claim", "untested_range", "test"}
_TARGET = re.compile(r"^(?P<harness>[a-z][a-z0-9-]*)@(?P<version>[^:]+):(?P<rest>.*)$")


@lru_cache(maxsize=None)
def _vector_run_pattern(harnesses: tuple[str, ...]) -> re.Pattern[str]:
    """A harness vector test's parametrize id, [VECTOR-HARNESS-VERSION-LAYER], for the harnesses registered now;
    versions start with a digit."""
    return re.compile(
        r"^(?P<vector>.+?)-(?P<harness>"
        + "|".join(map(re.escape, harnesses))
        + r")-(?P<version>[0-9][0-9A-Za-z.+-]*)-(?P<layer>harness|composed)$"
    )


def migration(fid: str, reason: str) -> str:
    """The entry to write for a failure id of the first format (OUTCOME or STATE left for the author)."""

    def entry(**fields: str) -> str:
        return "- {" + ", ".join(f"{k}: {v}" for k, v in {**fields, "reason": _yaml_str(reason)}.items()) + "}"

    if fid.startswith("test:"):
        run = vector_run(fid[5:])
        if run is None:
            return entry(test=_yaml_str(fid[5:]))
        return entry(**{**run, "version": _yaml_str(run["version"])}, outcome="OUTCOME")
    m = _TARGET.match(fid)
    if m is None:
        return "an entry naming harness, version, vector, layer and outcome (see docs/canary.md)"
    h, v, rest = m["harness"], _yaml_str(m["version"]), m["rest"]
    if rest == "untested_range":
        return entry(harness=h, version=v, untested_range="true")
    kind, _, what = rest.partition(":")
    where, _, name = what.partition("/")
    if kind == "drift":
        return entry(harness=h, version=v, vector=where, layer=name, outcome="OUTCOME")
    if kind == "regressed":
        return entry(harness=h, version=v, backend=where, capability=name, outcome="STATE")
    return "an entry naming harness, version, vector, layer and outcome (see docs/canary.md)"


def vector_run(nodeid: str) -> dict[str, str] | None:
    """harness, version, vector and layer of a harness vector test's node id; None for any other test."""
    m = re.search(r"\[(?P<params>[^\[\]]+)\]$", nodeid)
    run = _vector_run_pattern(harness_names()).match(m["params"]) if m else None
    if run is None:
        return None
    return {"harness": run["harness"], "version": run["version"], "vector": run["vector"], "layer": run["layer"]}


def _yaml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def json_schema() -> dict:
    """The JSON Schema of a baseline file; `python -m agentbox.prove.canary_baseline --schema` prints it."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **Baseline.model_json_schema()}


if __name__ == "__main__":
    from agentbox.core.schema_export import main

    # Regenerate the pinned schema file with:
    #   python -m agentbox.prove.canary_baseline --schema > agentbox/schemas/canary-baseline.schema.json
    sys.exit(main("agentbox.prove.canary_baseline", json_schema, sys.argv[1:]))
