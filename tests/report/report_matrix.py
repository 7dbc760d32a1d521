"""The small synthetic matrix the report tests share (a module of its own: `conftest` is not importable)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from agentbox.core.capability import Declarations
from agentbox.prove.evidence import EvidenceRecord
import synthetic_matrix
from agentbox.prove.vectors import Catalogue

HARNESSES = ("alpha", "bravo")
VERSIONS = ("1.0.0", "1.1.0", "1.2.0")


@dataclass
class Matrix:
    """A small synthetic matrix: 8 vectors over 4 capabilities, one of each declaration shape."""

    catalogue: Catalogue
    declarations: Callable[[str], Declarations]
    catalogue_dir: str

    def records(self, twist=None, harnesses=HARNESSES, versions=VERSIONS, **kw) -> list[EvidenceRecord]:
        return synthetic_matrix.records(self.catalogue, self.declarations, harnesses, versions, twist, **kw)


def make_matrix(directory) -> Matrix:
    catalogue = synthetic_matrix.write_catalogue(directory, vectors=8, capabilities=4)
    return Matrix(catalogue, synthetic_matrix.declarations(HARNESSES, capabilities=4), str(directory))
