"""A synthetic compatibility matrix: catalogue, declarations and evidence for many harness versions.

The report's tests, its browser test and its benchmark need evidence across several harnesses and
versions, with every state represented, without running a harness. The declarations cycle through
four shapes, one per capability, so the honest outcome of each capability is known:

    capability i % 4 == 0: harness partial (shell bypass), sandbox exact   -> exact, by the sandbox
    capability i % 4 == 1: harness exact, sandbox unsupported              -> exact, by the harness
    capability i % 4 == 2: harness partial (shell bypass), sandbox unsupported -> partial
    capability i % 4 == 3: nothing enforces it                             -> unsupported

Records say what the declarations predict (`vectors.expected_outcome`) unless a `twist` says
otherwise, which is how a test makes a claim refuted, unverified or drifting on chosen versions.
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterable

import yaml

from agentbox.core.capability import Declarations
from agentbox.prove.evidence import EvidenceRecord, Privilege, RunInfo
from agentbox.prove.vectors import Catalogue, Vector, expected_outcome, load_catalogue

__all__ = ["BACKEND", "SANDBOX_VERSION", "write_catalogue", "declarations", "records", "Twist"]

BACKEND = "box"
SANDBOX_VERSION = "1.0"
_SHAPES = (  # (harness support, harness bypass, sandbox support)
    ("partial", ["shell"], "exact"),
    ("exact", [], "unsupported"),
    ("partial", ["shell"], "unsupported"),
    ("unsupported", [], "unsupported"),
)
# (harness, version, vector, layer, predicted (outcome, control)) -> what to record, or None for no record
Twist = Callable[[str, str, Vector, str, "tuple[str, str]"], "tuple[str, str] | None"]


def capability_name(i: int) -> str:
    return f"cap{i:02d}.synthetic"


def write_catalogue(directory: str | os.PathLike, vectors: int = 40, capabilities: int = 8) -> Catalogue:
    """`vectors` vectors spread over `capabilities` capabilities, each run in all three layers."""
    os.makedirs(directory, exist_ok=True)
    # Surfaces alternate within each capability, so a shell bypass splits its vectors.
    surface = ["shell" if n // capabilities % 2 == 0 else "file_tool" for n in range(vectors)]
    entries = [
        {
            "id": f"vec-{n:03d}",
            "capability": capability_name(n % capabilities),
            "surface": surface[n],
            "description": f"synthetic attempt {n} through the {surface[n]}",
            "intent": {},
            "control": {"intent": {}},
            "steps": [{"shell": {"command": f"touch {{ws}}/v{n}"}}],
            "oracle": {"kind": "file_absent", "path": f"{{ws}}/v{n}"},
        }
        for n in range(vectors)
    ]
    with open(os.path.join(directory, "synthetic.yaml"), "w", encoding="utf-8") as f:
        yaml.safe_dump(entries, f)
    return load_catalogue(directory)


def declarations(harnesses: Iterable[str], capabilities: int = 8) -> Callable[[str], Declarations]:
    """A declaration source for `claims.reconcile`, shaped as the module docstring says."""
    harness_caps, sandbox_caps = {}, {}
    for i in range(capabilities):
        support, bypass, sandbox = _SHAPES[i % len(_SHAPES)]
        harness_caps[capability_name(i)] = [{"support": support, "bypass_surfaces": bypass}]
        sandbox_caps[capability_name(i)] = [{"support": sandbox}]
    decls = {h: Declarations(layer=h, capabilities=harness_caps) for h in harnesses}
    decls[BACKEND] = Declarations(layer=BACKEND, capabilities=sandbox_caps)

    def source(layer: str) -> Declarations:
        if layer not in decls:
            raise FileNotFoundError(layer)
        return decls[layer]

    return source


def _info(catalogue: Catalogue, harness: str | None, version: str | None, layer: str) -> RunInfo:
    sha = hashlib.sha256(f"{harness}@{version}".encode()).hexdigest() if harness else None
    return RunInfo(
        harness=harness,
        version=version,
        binary_sha256=sha,
        dialect=None,
        sandbox_backend=None if layer == "harness" else BACKEND,
        sandbox_version=None if layer == "harness" else SANDBOX_VERSION,
        kernel="6.1.0-synthetic",
        agentbox_version="0.1.0",
        suite_revision="synthetic",
        catalogue_digest=catalogue.digest,
        provenance="synthetic",
        privilege=Privilege(uid=0),
    )


def records(
    catalogue: Catalogue,
    source: Callable[[str], Declarations],
    harnesses: Iterable[str],
    versions: Iterable[str],
    twist: Twist | None = None,
    start: datetime = datetime(2025, 1, 1, tzinfo=timezone.utc),
) -> list[EvidenceRecord]:
    """One run per harness version, each trying every vector in every layer, oldest first.

    As in a real run, the sandbox-alone records of each run name no harness.
    """
    out: list[EvidenceRecord] = []
    versions = list(versions)
    sandbox = source(BACKEND)
    for harness in harnesses:
        for version in versions:
            infos = {
                layer: _info(
                    catalogue, None if layer == "sandbox" else harness, None if layer == "sandbox" else version, layer
                )
                for layer in ("sandbox", "harness", "composed")
            }
            for v in catalogue.vectors:
                hr, sr = source(harness).report(v.capability, None), sandbox.report(v.capability, None)
                for layer in v.run_layers():
                    result = (expected_outcome(v, layer, hr, sr), "passed")
                    if twist is not None:
                        result = twist(harness, version, v, layer, result)
                        if result is None:
                            continue
                    outcome, control = result
                    what = "the file was created" if outcome == "escaped" else "the file was never created"
                    stamp = (start + timedelta(seconds=len(out))).isoformat(timespec="milliseconds")
                    # Deterministic, and distinct across calls: stores made separately can be merged.
                    rid = hashlib.sha256(f"{harness}@{version}/{v.id}/{layer}/{stamp}".encode()).hexdigest()[:32]
                    out.append(
                        EvidenceRecord(
                            id=rid,
                            run_info=infos[layer],
                            vector_id=v.id,
                            capability=v.capability,
                            layer=layer,
                            outcome=outcome,
                            observation=what,
                            control_outcome=control,
                            duration=0.5 + (len(out) % 7) / 10,
                            nodeid=(
                                "negative/test_vectors.py::test_each_layer_of_each_harness_enforces_what_it_declares"
                                f"[{harness}-{version}-{v.id}-{layer}]"
                            ),
                            timestamp=stamp,
                        )
                    )
    return out
