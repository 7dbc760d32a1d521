"""Synthetic catalogue, declarations and records: the claims logic is tested without any harness."""

from __future__ import annotations

import itertools

import yaml

from agentbox.core.capability import Declarations
from agentbox.prove.evidence import EvidenceRecord, Privilege, RunInfo
from agentbox.prove.vectors import Catalogue, load_catalogue

RO = {"workspace": {"access": "read_only"}}
RW = {"workspace": {"access": "read_write"}}

# Two vectors of one capability, on two surfaces, so one declaration can predict one escape.
VECTORS = [
    {
        "id": "ro-shell",
        "capability": "workspace.read_only",
        "surface": "shell",
        "description": "shell write",
        "intent": RO,
        "control": {"intent": RW},
        "steps": [{"shell": {"command": "touch {ws}/x"}}],
        "oracle": {"kind": "file_absent", "path": "{ws}/x"},
    },
    {
        "id": "ro-file-tool",
        "capability": "workspace.read_only",
        "surface": "file_tool",
        "description": "Write tool",
        "intent": RO,
        "control": {"intent": RW},
        "steps": [{"write": {"path": "{ws}/y", "content": "z"}}],
        "layers": ["harness", "composed"],
        "oracle": {"kind": "file_absent", "path": "{ws}/y"},
    },
]


def declarations(harness_support="partial", sandbox_support="exact", bypass=("shell",)):
    """A declaration source for `reconcile`: layer name -> Declarations, like load_declarations."""
    decls = {
        "toy": {
            "layer": "toy",
            "capabilities": {"workspace.read_only": [{"support": harness_support, "bypass_surfaces": list(bypass)}]},
        },
        "box": {"layer": "box", "capabilities": {"workspace.read_only": [{"support": sandbox_support}]}},
    }

    def source(layer: str) -> Declarations:
        if layer not in decls:
            raise FileNotFoundError(layer)
        return Declarations.model_validate(decls[layer])

    return source


def write_catalogue(directory) -> Catalogue:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "workspace.yaml").write_text(yaml.safe_dump(VECTORS))
    return load_catalogue(directory)


_clock = itertools.count()


def make_record(
    catalogue: Catalogue,
    vector_id,
    layer,
    outcome,
    control="passed",
    harness="toy",
    version="1.0",
    sha="sha-a",
    backend="box",
    digest=None,
    mode="headless",
    kernel_lacks=(),
    adapter=None,
) -> EvidenceRecord:
    """A record later than every earlier one. A sandbox-layer record has no harness, as the suite writes it."""
    sandbox_alone = layer == "sandbox"
    info = RunInfo(
        harness=None if sandbox_alone else harness,
        version=None if sandbox_alone else version,
        binary_sha256=None if sandbox_alone else sha,
        dialect=None,
        sandbox_backend=None if layer == "harness" else backend,
        sandbox_version="0.8.0",
        kernel="6.1",
        agentbox_version="0.1.0",
        suite_revision="test",
        catalogue_digest=digest or catalogue.digest,
        privilege=Privilege(uid=0),
        mode=mode,
        kernel_lacks=kernel_lacks,
        adapter=adapter,
    )
    tick = next(_clock)
    stamp = f"2025-01-01T{tick // 3600 % 24:02d}:{tick // 60 % 60:02d}:{tick % 60:02d}.000+00:00"
    return EvidenceRecord(
        run_info=info,
        vector_id=vector_id,
        capability="workspace.read_only",
        layer=layer,
        outcome=outcome,
        observation="synthetic",
        control_outcome=control,
        timestamp=stamp,
    )


def observed(record: EvidenceRecord) -> EvidenceRecord:
    """The record as a suite run would have written it: only observed records reach the gate."""
    return record.model_copy(update={"run_info": record.run_info.model_copy(update={"provenance": "observed"})})
