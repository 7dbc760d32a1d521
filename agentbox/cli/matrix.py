"""`agent-box matrix list`: the harness versions of the matrices, and whether each is installed here."""

from __future__ import annotations

import json
from pathlib import Path

from agentbox.core.table import table
from agentbox.harnesses.installs import find_binary
from agentbox.harnesses.matrix import Cell, cells, default_matrices, load_matrix, packaged_matrices

__all__ = ["cmd_list"]


def cmd_list(paths: list[str], as_json: bool) -> int:
    """`agent-box matrix list`: one line (or JSON object) per harness version of the matrices.

    The JSON stays the plan alone (a job matrix, the same on every machine); the table adds whether each
    version is installed here, the question a person asks before running it."""
    files = [Path(p) for p in paths] or default_matrices() or packaged_matrices()
    rows = cells(load_matrix(f) for f in files)
    if as_json:
        print(json.dumps([row.model_dump(mode="json") for row in rows], indent=2))
        return 0
    print(
        "\n".join(
            table(
                ("harness", "version", "tox_env", "installed", "install"),
                [(r.harness, r.version, r.tox_env, installed_state(r), " ".join(r.install)) for r in rows],
            )
        )
    )
    return 0


def installed_state(cell: Cell) -> str:
    """`yes` when every install of CELL is pinned under $AGENTBOX_HOME, `no` when none is, else `partly`."""
    have = [find_binary(*spec.split("@", 1)) is not None for spec in cell.install]
    return "yes" if all(have) else "partly" if any(have) else "no"
