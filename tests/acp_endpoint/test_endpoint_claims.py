"""The ACP endpoint's `acp` records make rows of their own (harness "-", mode acp), and no harness's row reads them."""

from __future__ import annotations

from agentbox.prove.claims import default_catalogue_dir, reconcile
from agentbox.prove.evidence import EvidenceRecord, Privilege, RunInfo
from agentbox.prove.vectors import load_catalogue

CATALOGUE = load_catalogue(default_catalogue_dir())


def record(vector: str, layer: str, outcome: str, harness: str | None = None) -> EvidenceRecord:
    v = CATALOGUE.by_id(vector)
    info = RunInfo(
        harness=harness,
        version="0.171.0" if harness else None,
        binary_sha256="ab" * 32 if harness else None,
        dialect=None,
        sandbox_backend="bwrap",
        sandbox_version="0.8.0",
        kernel="k",
        agentbox_version="0",
        suite_revision="r",
        catalogue_digest=CATALOGUE.digest,
        privilege=Privilege(uid=0),
        provenance="observed",
        mode="acp" if layer == "acp" else "headless",
        agent="acp-protocol-test-agent" if layer == "acp" else None,
    )
    return EvidenceRecord(
        run_info=info,
        vector_id=vector,
        capability=v.capability,
        layer=layer,
        outcome=outcome,
        observation="o",
        control_outcome="passed",
    )


def test_the_endpoints_blocked_client_write_makes_an_exact_acp_row_for_the_backend():
    table = reconcile([record("acp-client-write-read-only", "acp", "blocked")], CATALOGUE)
    (row,) = [c for c in table.claims if c.mode == "acp" and c.capability == "workspace.read_only"]
    assert (row.harness, row.version, row.claim, row.blocked) == ("-", "0.8.0", "exact", 1)
    assert set(row.layers) == {"acp"}


def test_an_escaped_client_write_refutes_the_endpoints_row():
    table = reconcile([record("acp-client-write-read-only", "acp", "escaped")], CATALOGUE)
    (row,) = [c for c in table.claims if c.mode == "acp" and c.capability == "workspace.read_only"]
    assert row.claim == "refuted" and row.escaped == ("acp-client-write-read-only",)


def test_no_harness_row_counts_or_drifts_on_the_endpoints_vectors():
    records = [
        record("acp-client-write-read-only", "acp", "escaped"),
        record("ws-ro-tee", "composed", "blocked", harness="codex"),
    ]
    table = reconcile(records, CATALOGUE)
    harness_rows = [c for c in table.claims if c.harness == "codex"]
    assert harness_rows and all("acp-client-write-read-only" not in (*c.unverified, *c.escaped) for c in harness_rows)
    assert all(d.layer != "acp" for c in harness_rows for d in c.drift)


def test_a_launch_lookup_of_a_build_brings_the_endpoints_rows_for_its_backend(tmp_path, monkeypatch):
    from agentbox.prove.evidence import append
    from agentbox.prove.evidence_index import lookup

    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path / "home"))
    endpoint = record("acp-client-write-read-only", "acp", "blocked")
    append(tmp_path / "ev", [endpoint, record("ws-ro-tee", "composed", "blocked", harness="codex")])
    rows = lookup(
        tmp_path / "ev", "codex", "0.171.0", "ab" * 32, "bwrap", kernel="k", privilege="root", backend_version="0.8.0"
    )
    assert {(r["vector_id"], r["layer"]) for r in rows} == {
        ("acp-client-write-read-only", "acp"),
        ("ws-ro-tee", "composed"),
    }
