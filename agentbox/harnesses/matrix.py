"""Harness version matrices (`matrices/*.yaml`): which versions CI, tox and the conformance run cover.

The package ships them (agentbox/data/matrices; a checkout's `matrices` links there), so a bare name
(`--matrix default`) or `matrices/default.yaml` also works outside a checkout.

The pydantic model is the single source of truth; `agentbox/schemas/matrix.schema.json` is exported
from it (a test pins the two together); after changing the model, regenerate it with
`python -m agentbox.harnesses.matrix --schema > agentbox/schemas/matrix.schema.json`.

A matrix expands into cells, one per harness version, each with the id the pytest plugin gives the
version (`codex-0.171.0`), which is also its tox environment, and the installs it needs (the
harness and the ACP adapter that drives it). `agent-box matrix list --json` prints the cells as a
list that a GitHub Actions job matrix takes as it is (`fromJSON`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from agentbox.errors import InputError
from agentbox.core.profile import HarnessName
from agentbox.core.registry import harness_names
from agentbox.core.versions import Version
from agentbox.harnesses.acp_entries import acp_adapter

__all__ = [
    "Matrix",
    "Cell",
    "load_matrix",
    "resolve_matrix",
    "packaged_matrices",
    "cells",
    "default_matrices",
    "json_schema",
]

VersionText = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)*$")]


class Matrix(BaseModel):
    """A version matrix file (matrices/*.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="Agent-Box harness version matrix")
    schema_version: Literal[1] = 1
    harnesses: dict[HarnessName, Annotated[tuple[VersionText, ...], Field(min_length=1)]] = Field(
        default_factory=dict, description="harness -> the versions to install and test"
    )
    acp_adapters: dict[str, VersionText] = Field(
        default_factory=dict, description="ACP adapter package (agentbox/data/packages.yaml) -> its pinned version"
    )
    # One pytest session drives every mode named here, so a single run records the claims of `agent-box launch`
    # (tui) and `agent-box acp` (acp) beside the headless ones; `--agentbox-mode` given on the command line wins.
    modes: Annotated[tuple[Literal["headless", "tui", "acp"], ...], Field(min_length=1)] = Field(
        default=("headless",),
        description="the modes the escape suite drives each harness in when no --agentbox-mode is given",
    )

    @model_validator(mode="after")
    def _distinct_versions(self) -> "Matrix":
        for name, versions in self.harnesses.items():
            parsed = [Version.parse(v) for v in versions]
            if len(set(parsed)) != len(parsed):
                raise ValueError(f"harnesses.{name}: a version is listed twice")
        if len(set(self.modes)) != len(self.modes):
            raise ValueError("modes: a mode is listed twice")
        return self


class Cell(BaseModel):
    """One harness version of a matrix: a GitHub Actions job, a tox environment, a pytest harness id."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    harness: str
    version: str
    id: str
    tox_env: str
    install: tuple[str, ...]  # NAME@VERSION specs for `agent-box harness install`


# The package ships its matrices, so `agent-box matrix list` and `--matrix default` work outside a checkout;
# a checkout's `matrices` is a link to this folder, so `matrices/default.yaml` names the same file in both.
PACKAGED = Path(__file__).parents[1] / "data" / "matrices"


def packaged_matrices() -> list[Path]:
    return sorted(PACKAGED.glob("*.yaml"))


def resolve_matrix(path: str | Path) -> Path:
    """PATH when it exists; else the packaged matrix it names: a bare `default` or a `matrices/default.yaml`
    given outside a checkout."""
    given = Path(path)
    if given.exists():
        return given
    bare = given.parent == Path(".") and not given.suffix
    under_matrices = not given.is_absolute() and given.parent == Path("matrices")
    packaged = PACKAGED / (f"{given.name}.yaml" if bare else given.name)
    if (bare or under_matrices) and packaged.is_file():
        return packaged
    names = ", ".join(p.stem for p in packaged_matrices())
    raise InputError(f"no such file (the packaged matrices are {names})", file=str(path))


def load_matrix(path: str | Path) -> Matrix:
    from agentbox.harnesses.packages import PACKAGES
    from agentbox.core.yaml_input import parse

    try:
        text = resolve_matrix(path).read_text()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=str(path)) from None
    path = str(path)
    matrix = parse(text, path).validate(Matrix)
    adapters = set(PACKAGES()) - set(harness_names())
    unknown = sorted(set(matrix.acp_adapters) - adapters)
    if unknown:
        raise InputError(
            f"unknown ACP adapter(s): {', '.join(unknown)}; known: {', '.join(sorted(adapters))}", file=path
        )
    return matrix


def cells(matrices: Iterable[Matrix]) -> list[Cell]:
    """Every harness version of the matrices, once, in harness order then version order."""
    found: dict[tuple[str, Version], Cell] = {}
    for matrix in matrices:
        for name, versions in matrix.harnesses.items():
            adapter = acp_adapter(name)
            extra = (f"{adapter}@{matrix.acp_adapters[adapter]}",) if adapter in matrix.acp_adapters else ()
            for version in versions:
                key = (name, Version.parse(version))
                if key not in found:  # the first matrix that names a version decides its adapter pin
                    ident = f"{name}-{version}"
                    found[key] = Cell(
                        harness=name, version=version, id=ident, tox_env=ident, install=(f"{name}@{version}", *extra)
                    )
    order = harness_names()
    return [found[k] for k in sorted(found, key=lambda k: (order.index(k[0]), k[1]))]


def default_matrices(root: str | Path = ".") -> list[Path]:
    """`matrices/*.yaml` under ROOT, sorted."""
    return sorted((Path(root) / "matrices").glob("*.yaml"))


def json_schema() -> dict:
    """The JSON Schema of a matrix file; `python -m agentbox.harnesses.matrix --schema` prints it."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **Matrix.model_json_schema()}


if __name__ == "__main__":
    from agentbox.core.schema_export import main

    # Regenerate the pinned schema file with:
    #   python -m agentbox.harnesses.matrix --schema > agentbox/schemas/matrix.schema.json
    sys.exit(main("agentbox.harnesses.matrix", json_schema, sys.argv[1:]))
