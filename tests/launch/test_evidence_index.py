"""The evidence index answers what a full scan of the store would, without reading the store again."""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from agentbox.harnesses.agent_build import AgentBuild
from agentbox.prove.claims import default_catalogue_dir, reconcile
from agentbox.prove.evidence import EvidenceError, EvidenceRecord, Privilege, RunInfo, append, read_records
from agentbox.prove.evidence_index import index_path, lookup, sync, unproven
from agentbox.prove.vectors import load_catalogue

CATALOGUE = load_catalogue(default_catalogue_dir())
AS_ROOT = {"privilege": "root", "backend_version": "0.8.0"}
KERNEL = "6.1"  # the host the lookups ask for; records of "5.10" were recorded elsewhere
BUILDS = [
    ("codex", "0.171.0", "a" * 64),
    ("codex", "0.171.0", "b" * 64),
    ("codex", "0.170.0", "c" * 64),
    ("claude-code", "2.1.332", "d" * 64),
]


def record(rng: random.Random, stamp: str) -> EvidenceRecord:
    harness, version, sha = rng.choice(BUILDS)
    layer = rng.choice(["composed", "composed", "harness", "sandbox"])
    sandbox_alone = layer == "sandbox"
    info = RunInfo(
        harness=None if sandbox_alone else harness,
        version=None if sandbox_alone else version,
        binary_sha256=None if sandbox_alone else sha,
        dialect=None,
        sandbox_backend=None if layer == "harness" else rng.choice(["bwrap", "bwrap", None, "other"]),
        sandbox_version=rng.choice(["0.8.0", "0.8.0", "0.9.0"]),
        kernel=rng.choice(["6.1", "6.1", "5.10"]),
        agentbox_version="0.1.0",
        suite_revision="t",
        catalogue_digest=CATALOGUE.digest,
        privilege=rng.choice([Privilege(uid=0), Privilege(uid=0), Privilege(uid=1000), None]),
        provenance=rng.choice(["observed", "observed", "synthetic", None]),
        mode=rng.choice(["headless", "headless", "tui"]),
    )
    vector = rng.choice(CATALOGUE.vectors[:12])
    return EvidenceRecord(
        run_info=info,
        vector_id=vector.id,
        capability=vector.capability,
        layer=layer,
        outcome=rng.choice(["blocked", "blocked", "escaped", "error"]),
        observation="t",
        control_outcome=rng.choice(["passed", "passed", "failed"]),
        timestamp=stamp,
    )


def mixed_store(tmp_path, seed: int, n: int = 400):
    """Records of several builds, layers and backends, many sharing a timestamp (ties go to the later line)."""
    rng = random.Random(seed)
    store = tmp_path / "ev"
    records = [record(rng, f"2025-01-01T00:00:{rng.randrange(20):02d}.000+00:00") for _ in range(n)]
    append(store, records[: n // 2])
    append(store / "ci", records[n // 2 :])  # a second file, as a copied CI store would add
    return store


def claims_by_full_scan(store, harness, version, sha, backend="bwrap"):
    def feeds(r):
        ri = r.run_info
        if ri.kernel != KERNEL or ri.level != "root" or ri.provenance != "observed":
            return False
        if r.layer != "harness" and ri.sandbox_version != "0.8.0":
            return False
        if ri.harness is None:
            return (ri.sandbox_backend or "bwrap") == backend
        return (ri.harness, ri.version, ri.binary_sha256) == (harness, version, sha) and (
            r.layer == "harness" or (ri.sandbox_backend or "bwrap") == backend
        )

    table = reconcile([r for r in read_records(store) if feeds(r)], CATALOGUE)
    return [c.model_dump() for c in table.claims if c.harness == harness and c.backend == backend]


def claims_by_index(store, harness, version, sha, backend="bwrap"):
    rows = lookup(store, harness, version, sha, backend, kernel=KERNEL, privilege="root", backend_version="0.8.0")
    table = reconcile([EvidenceRecord.model_validate(r) for r in rows], CATALOGUE)
    return [c.model_dump() for c in table.claims if c.harness == harness and c.backend == backend]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_index_gives_every_build_the_claims_a_full_scan_gives(tmp_path, seed):
    store = mixed_store(tmp_path, seed)
    for harness, version, sha in BUILDS:
        assert claims_by_index(store, harness, version, sha) == claims_by_full_scan(store, harness, version, sha)


def test_an_unchanged_store_is_not_read_again(tmp_path):
    store = mixed_store(tmp_path, 4)
    assert sync(store) == 400
    assert sync(store) == 0


def test_appended_records_are_indexed_from_where_the_index_stopped(tmp_path):
    store = mixed_store(tmp_path, 5)
    sync(store)
    rng = random.Random(9)
    append(store, [record(rng, "2025-01-02T00:00:00.000+00:00") for _ in range(7)])
    assert sync(store) == 7
    for harness, version, sha in BUILDS:
        assert claims_by_index(store, harness, version, sha) == claims_by_full_scan(store, harness, version, sha)


def test_a_rewritten_store_is_indexed_afresh(tmp_path):
    store = mixed_store(tmp_path, 6)
    sync(store)
    path = store / "evidence.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:10]))  # truncated: the records it lost must leave the index
    assert sync(store) == 10 + 200
    for harness, version, sha in BUILDS:
        assert claims_by_index(store, harness, version, sha) == claims_by_full_scan(store, harness, version, sha)


def test_a_line_still_being_written_waits_for_its_end(tmp_path):
    store = mixed_store(tmp_path, 7, n=20)
    line = record(random.Random(1), "2025-01-03T00:00:00.000+00:00").model_dump_json()
    with open(store / "evidence.jsonl", "a") as f:
        f.write(line[:40])
    assert sync(store) == 20
    with open(store / "evidence.jsonl", "a") as f:
        f.write(line[40:] + "\n")
    assert sync(store) == 1


def test_a_store_of_another_schema_is_a_clear_error(tmp_path):
    store = tmp_path / "ev"
    store.mkdir()
    (store / "evidence.jsonl").write_text('{"schema_version": 99}\n')
    with pytest.raises(EvidenceError, match="evidence.jsonl:1"):
        lookup(store, "codex", "0.171.0", "a" * 64, **AS_ROOT)


def test_an_absent_or_empty_store_writes_nothing(tmp_path):
    assert lookup(tmp_path / "nowhere", "codex", "0.171.0", "a", **AS_ROOT) == []
    (tmp_path / "empty").mkdir()
    assert lookup(tmp_path / "empty", "codex", "0.171.0", "a", **AS_ROOT) == []
    assert list((tmp_path / "empty").iterdir()) == []
    assert not (tmp_path / "nowhere").exists()


def test_the_index_lives_under_agentbox_home_never_in_the_store(tmp_path, abhome):
    store = mixed_store(tmp_path, 8, n=10)
    sync(store)
    assert index_path(store).exists() and index_path(store).is_relative_to(abhome / "index")
    assert sorted(p.name for p in store.rglob("*")) == ["ci", "evidence.jsonl", "evidence.jsonl"]
    assert len(list(read_records(store))) == 10


def test_records_of_another_kernel_never_decide_this_hosts_claims(tmp_path):
    store = mixed_store(tmp_path, 6)
    rows = lookup(store, "codex", "0.171.0", "a" * 64, kernel="5.10", **AS_ROOT)
    assert rows and all(r["run_info"]["kernel"] == "5.10" for r in rows)
    assert lookup(store, "codex", "0.171.0", "a" * 64, kernel="4.19", **AS_ROOT) == []


def test_records_taken_as_another_user_or_on_another_bubblewrap_never_decide_a_launch(tmp_path):
    store = mixed_store(tmp_path, 6)
    as_user = lookup(store, "codex", "0.171.0", "a" * 64, kernel=KERNEL, privilege="user", backend_version="0.8.0")
    assert as_user and all(r["run_info"]["privilege"]["uid"] != 0 for r in as_user)
    newer = lookup(store, "codex", "0.171.0", "a" * 64, kernel=KERNEL, privilege="root", backend_version="0.9.0")
    assert all(r["run_info"]["sandbox_version"] == "0.9.0" for r in newer if r["layer"] != "harness")
    assert lookup(store, "codex", "0.171.0", "a" * 64, kernel=KERNEL, privilege="root", backend_version="9") == [
        r for r in newer if r["layer"] == "harness"
    ]


def one_run(provenance, outcome: str, stamp: str, harness="codex", version="0.171.0", sha="a" * 64) -> EvidenceRecord:
    """One composed record of the first vector on this host's terms (root, kernel 6.1, bubblewrap 0.8.0)."""
    vector = CATALOGUE.vectors[0]
    info = RunInfo(
        harness=harness,
        version=version,
        binary_sha256=sha,
        dialect=None,
        sandbox_backend="bwrap",
        sandbox_version="0.8.0",
        kernel=KERNEL,
        agentbox_version="0.1.0",
        suite_revision="t",
        catalogue_digest=CATALOGUE.digest,
        privilege=Privilege(uid=0),
        provenance=provenance,
    )
    return EvidenceRecord(
        run_info=info,
        vector_id=vector.id,
        capability=vector.capability,
        layer="composed",
        outcome=outcome,
        observation="t",
        control_outcome="passed",
        timestamp=stamp,
    )


def test_a_synthetic_record_never_reaches_a_lookup(tmp_path):
    append(tmp_path / "ev", [one_run("synthetic", "blocked", "2025-01-01T00:00:00.000+00:00")])
    assert lookup(tmp_path / "ev", "codex", "0.171.0", "a" * 64, kernel=KERNEL, **AS_ROOT) == []


def test_a_record_that_does_not_say_where_it_came_from_never_reaches_a_lookup(tmp_path):
    # a store written before records said: provenance absent from the line, read back as None
    line = one_run(None, "blocked", "2025-01-01T00:00:00.000+00:00").model_dump(mode="json")
    del line["run_info"]["provenance"]
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "evidence.jsonl").write_text(json.dumps(line) + "\n")
    assert [r.run_info.provenance for r in read_records(tmp_path / "ev")] == [None]
    assert lookup(tmp_path / "ev", "codex", "0.171.0", "a" * 64, kernel=KERNEL, **AS_ROOT) == []


def test_a_newer_synthetic_record_never_shadows_the_observed_one_of_its_run(tmp_path):
    observed = one_run("observed", "escaped", "2025-01-01T00:00:00.000+00:00")
    append(tmp_path / "ev", [observed, one_run("synthetic", "blocked", "2025-01-02T00:00:00.000+00:00")])
    rows = lookup(tmp_path / "ev", "codex", "0.171.0", "a" * 64, kernel=KERNEL, **AS_ROOT)
    assert [r["id"] for r in rows] == [observed.id]


def test_the_runs_left_out_of_a_build_are_counted_per_provenance(tmp_path):
    append(
        tmp_path / "ev",
        [
            one_run("synthetic", "blocked", "2025-01-01T00:00:00.000+00:00"),
            one_run(None, "blocked", "2025-01-01T00:00:01.000+00:00"),
            one_run("observed", "blocked", "2025-01-01T00:00:02.000+00:00"),
            one_run("synthetic", "blocked", "2025-01-01T00:00:03.000+00:00", sha="b" * 64),
        ],
    )
    assert unproven(tmp_path / "ev", "codex", "0.171.0", "a" * 64, kernel=KERNEL, **AS_ROOT) == {"synthetic": 1, "": 1}


# -- an `agent-box acp` start through an ACP adapter: only records of the adapter build it starts ----------------

CODEX_ACP = AgentBuild(name="codex-acp", version="0.16.0", sha256="e" * 64)
OLDER_CODEX_ACP = AgentBuild(name="codex-acp", version="0.15.0", sha256="f" * 64)


def acp_run(adapter: AgentBuild | None, stamp: str) -> EvidenceRecord:
    r = one_run("observed", "blocked", stamp)
    return r.model_copy(update={"run_info": r.run_info.model_copy(update={"mode": "acp", "adapter": adapter})})


def test_an_acp_record_of_another_adapter_build_does_not_speak_for_agent_box_acp(tmp_path):
    mine = acp_run(CODEX_ACP, "2025-01-01T00:00:00.000+00:00")
    # recorded later, of the same vector and harness build: without the adapter in the key it would shadow mine
    append(tmp_path / "ev", [mine, acp_run(OLDER_CODEX_ACP, "2025-01-02T00:00:00.000+00:00")])
    rows = lookup(tmp_path / "ev", "codex", "0.171.0", "a" * 64, kernel=KERNEL, adapter=CODEX_ACP.key, **AS_ROOT)
    assert [r["id"] for r in rows] == [mine.id]
    newer = lookup(tmp_path / "ev", "codex", "0.171.0", "a" * 64, kernel=KERNEL, adapter="codex-acp 9 x", **AS_ROOT)
    assert newer == []


def test_a_record_from_before_the_adapter_was_recorded_proves_nothing_for_acp_and_is_counted(tmp_path):
    append(
        tmp_path / "ev",
        [
            acp_run(None, "2025-01-01T00:00:00.000+00:00"),
            acp_run(OLDER_CODEX_ACP, "2025-01-01T00:00:01.000+00:00"),
            one_run("observed", "blocked", "2025-01-01T00:00:02.000+00:00"),  # headless: another mode's, not left out
        ],
    )
    args = ("codex", "0.171.0", "a" * 64)
    rows = lookup(tmp_path / "ev", *args, kernel=KERNEL, adapter=CODEX_ACP.key, **AS_ROOT)
    assert [r["run_info"]["mode"] for r in rows] == ["headless"]
    left = unproven(tmp_path / "ev", *args, kernel=KERNEL, adapter=CODEX_ACP.key, **AS_ROOT)
    assert left == {"adapter unrecorded": 1, "another adapter": 1}
    # a start that drives no adapter (another mode, or a native ACP agent) counts none of them as left out
    assert unproven(tmp_path / "ev", *args, kernel=KERNEL, **AS_ROOT) == {}


def test_the_index_rebuilt_from_an_older_schema_reads_the_adapter(tmp_path):
    store = tmp_path / "ev"
    mine = acp_run(CODEX_ACP, "2025-01-01T00:00:00.000+00:00")
    append(store, [mine])
    sync(store)
    # the index as an agent-box before the adapter was recorded left it: format 5, no adapter column, and the
    # store's file marked as read to its end, so only the format tells that it must be read again
    con = sqlite3.connect(index_path(store))
    con.execute("DROP TABLE latest")
    con.execute(
        "CREATE TABLE latest (harness TEXT NOT NULL, version TEXT NOT NULL, sha TEXT NOT NULL, "
        "backend TEXT NOT NULL, kernel TEXT NOT NULL, privilege TEXT NOT NULL, sversion TEXT NOT NULL, "
        "provenance TEXT NOT NULL, mode TEXT NOT NULL, vector TEXT NOT NULL, layer TEXT NOT NULL, t INTEGER NOT NULL, "
        "ord TEXT NOT NULL, line TEXT NOT NULL, "
        "PRIMARY KEY (harness, version, sha, backend, kernel, privilege, sversion, provenance, mode, vector, layer)) "
        "WITHOUT ROWID"
    )
    con.execute("UPDATE meta SET value='5' WHERE key='format'")
    con.commit()
    con.close()
    rows = lookup(store, "codex", "0.171.0", "a" * 64, kernel=KERNEL, adapter=CODEX_ACP.key, **AS_ROOT)
    assert [r["id"] for r in rows] == [mine.id]
    assert [r["run_info"]["adapter"] for r in rows] == [CODEX_ACP.model_dump()]
