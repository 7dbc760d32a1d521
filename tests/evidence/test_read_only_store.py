"""Reading a store writes nothing into it: the launch index lives under $AGENTBOX_HOME, keyed by the store."""

from __future__ import annotations

import os

from agentbox.cli import main
from agentbox.prove.evidence import append
from agentbox.prove.evidence_index import index_path, lookup, sync, unproven
from synthetic import observed

BUILD = dict(
    harness="toy", version="1.0", sha="sha-a", backend="box", kernel="6.1", privilege="root", backend_version="0.8.0"
)


def listing(root):
    return sorted((str(p.relative_to(root)), p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*"))


def test_claims_and_a_gate_lookup_leave_the_store_folder_as_it_was(tmp_path, catalogue, record, capsys):
    kept = observed(record("ro-shell", "composed", "blocked"))
    append(tmp_path / "ev", [kept])
    before, folder = listing(tmp_path / "ev"), (tmp_path / "ev").stat().st_mtime_ns
    claims = ["evidence", "claims", "--evidence", str(tmp_path / "ev"), "--catalogue", str(tmp_path / "vectors")]
    assert main(claims) == 0
    assert [r["id"] for r in lookup(tmp_path / "ev", **BUILD)] == [kept.id]
    assert unproven(tmp_path / "ev", **BUILD) == {}
    assert listing(tmp_path / "ev") == before and (tmp_path / "ev").stat().st_mtime_ns == folder


def test_the_index_lives_under_the_home_keyed_by_the_stores_resolved_path(tmp_path, record, abhome):
    append(tmp_path / "ev", [record("ro-shell", "composed", "blocked")])
    (tmp_path / "link").symlink_to(tmp_path / "ev")
    assert sync(tmp_path / "ev") == 1
    assert index_path(tmp_path / "ev").parent == abhome / "index" and index_path(tmp_path / "ev").exists()
    assert index_path(tmp_path / "link") == index_path(tmp_path / "ev")
    assert index_path(tmp_path / "ev" / "evidence.jsonl") != index_path(tmp_path / "ev")  # another store


def test_a_read_only_store_keeps_its_index_across_lookups(tmp_path, record):
    kept = observed(record("ro-shell", "composed", "blocked"))
    append(tmp_path / "ev", [kept])
    os.chmod(tmp_path / "ev" / "evidence.jsonl", 0o444)
    os.chmod(tmp_path / "ev", 0o555)
    try:
        assert sync(tmp_path / "ev") == 1
        assert sync(tmp_path / "ev") == 0  # kept, not rebuilt in memory each time
        assert [r["id"] for r in lookup(tmp_path / "ev", **BUILD)] == [kept.id]
    finally:
        os.chmod(tmp_path / "ev", 0o755)


def test_a_home_that_cannot_be_written_indexes_in_memory(tmp_path, record, monkeypatch):
    kept = observed(record("ro-shell", "composed", "blocked"))
    append(tmp_path / "ev", [kept])
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path / "file" / "home"))  # under a file: no folder can be made
    assert [r["id"] for r in lookup(tmp_path / "ev", **BUILD)] == [kept.id]
