"""Harness version matrices (`matrices/*.yaml`): which versions CI, tox and the conformance run cover.

The pydantic model is the single source of truth; `agentbox/schemas/matrix.schema.json` is exported
from it (a test pins the two together); after changing the model, regenerate it with
`python -m agentbox.matrix --schema > agentbox/schemas/matrix.schema.json`.

A matrix expands into cells, one per harness version, each with the id the pytest plugin gives the
version (`codex-0.171.0`), which is also its tox environment, and the installs it needs (the
harness and the ACP adapter that drives it). `agent-box matrix list --json` prints the cells as a
list that a GitHub Actions job matrix takes as it is (`fromJSON`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from .errors import InputError
from .profile import HARNESSES, validation_message
from .versions import Version

__all__ = ["Matrix", "Cell", "load_matrix", "cells", "default_matrices", "json_schema", "cmd_list"]

VersionText = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)*$")]
HarnessName = Literal[HARNESSES]


class Matrix(BaseModel):
    """A version matrix file (matrices/*.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Agent-Box harness version matrix")
    schema_version: Literal[1] = 1
    harnesses: dict[HarnessName, Annotated[tuple[VersionText, ...], Field(min_length=1)]] = Field(
        default_factory=dict, description="harness -> the versions to install and test")
    acp_adapters: dict[str, VersionText] = Field(
        default_factory=dict, description="ACP adapter package (agentbox/data/packages.yaml) -> its pinned version")

    @model_validator(mode="after")
    def _distinct_versions(self) -> "Matrix":
        for name, versions in self.harnesses.items():
            parsed = [Version.parse(v) for v in versions]
            if len(set(parsed)) != len(parsed):
                raise ValueError(f"harnesses.{name}: a version is listed twice")
        return self


class Cell(BaseModel):
    """One harness version of a matrix: a GitHub Actions job, a tox environment, a pytest harness id."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    harness: str
    version: str
    id: str
    tox_env: str
    install: tuple[str, ...]  # NAME@VERSION specs for `agent-box harness install`


def load_matrix(path: str | Path) -> Matrix:
    import yaml

    from .installs import PACKAGES

    path = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", file=path) from None
    try:
        matrix = Matrix.model_validate(data)
    except ValidationError as exc:
        raise InputError(validation_message(exc), file=path) from None
    adapters = set(PACKAGES()) - set(HARNESSES)
    unknown = sorted(set(matrix.acp_adapters) - adapters)
    if unknown:
        raise InputError(f"unknown ACP adapter(s): {', '.join(unknown)}; known: {', '.join(sorted(adapters))}",
                         file=path)
    return matrix


def cells(matrices: Iterable[Matrix]) -> list[Cell]:
    """Every harness version of the matrices, once, in harness order then version order."""
    from .acp import acp_adapter

    found: dict[tuple[str, Version], Cell] = {}
    for matrix in matrices:
        for name, versions in matrix.harnesses.items():
            adapter = acp_adapter(name)
            extra = (f"{adapter}@{matrix.acp_adapters[adapter]}",) if adapter in matrix.acp_adapters else ()
            for version in versions:
                key = (name, Version.parse(version))
                if key not in found:  # the first matrix that names a version decides its adapter pin
                    ident = f"{name}-{version}"
                    found[key] = Cell(harness=name, version=version, id=ident, tox_env=ident,
                                      install=(f"{name}@{version}", *extra))
    return [found[k] for k in sorted(found, key=lambda k: (HARNESSES.index(k[0]), k[1]))]


def default_matrices(root: str | Path = ".") -> list[Path]:
    """`matrices/*.yaml` under ROOT, sorted."""
    return sorted((Path(root) / "matrices").glob("*.yaml"))


def json_schema() -> dict:
    """The JSON Schema of a matrix file; `python -m agentbox.matrix --schema` prints it."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **Matrix.model_json_schema()}


def cmd_list(paths: list[str], as_json: bool) -> int:
    """`agent-box matrix list`: one line (or JSON object) per harness version of the matrices."""
    files = [Path(p) for p in paths] or default_matrices()
    if not files:
        raise InputError("no matrix: give --matrix FILE or run from a checkout with matrices/*.yaml")
    rows = cells(load_matrix(f) for f in files)
    if as_json:
        print(json.dumps([row.model_dump(mode="json") for row in rows], indent=2))
        return 0
    from .table import table

    print("\n".join(table(("harness", "version", "tox_env", "install"),
                          [(r.harness, r.version, r.tox_env, " ".join(r.install)) for r in rows])))
    return 0


if __name__ == "__main__":
    from .schema_export import main

    # Regenerate the pinned schema file with:
    #   python -m agentbox.matrix --schema > agentbox/schemas/matrix.schema.json
    sys.exit(main("agentbox.matrix", json_schema, sys.argv[1:]))
