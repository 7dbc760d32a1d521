"""The Run store: migrations, concurrent writers, and runs whose launcher died."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentbox.run import runs
from agentbox.errors import InputError
from agentbox.run.runs import MIGRATIONS, RunStore, process_identity

FIELDS = {
    "profile": "p",
    "profile_digest": "d" * 64,
    "project_root": "/w",
    "harness": "codex",
    "version": "0.171.0",
    "claims": {"workspace": {"claim": "exact"}},
    "evidence_ids": ["e1"],
    "accept_unverified": True,
}


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path / "abhome"))
    return tmp_path / "abhome" / "agentbox.db"


def test_a_new_store_has_every_migration_applied_and_recorded(db):
    RunStore(db).list()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert [v for (v,) in con.execute("SELECT version FROM schema_migrations")] == list(range(1, len(MIGRATIONS) + 1))
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_an_older_store_is_migrated_in_place_keeping_its_runs(db, monkeypatch):
    store = RunStore(db)
    run_id = store.start(FIELDS)
    store.close()
    monkeypatch.setattr(runs, "MIGRATIONS", (*MIGRATIONS, ("ALTER TABLE runs ADD COLUMN note TEXT",)))
    store = RunStore(db)
    assert store.get(run_id)["note"] is None
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 1


def test_a_store_from_a_newer_agent_box_is_refused_not_misread(db):
    RunStore(db).list()
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version=99")
    con.close()
    with pytest.raises(InputError, match="schema 99, newer"):
        RunStore(db).list()


def test_a_run_round_trips_with_its_claims_evidence_and_outcome(db):
    store = RunStore(db)
    run_id = store.start(FIELDS)
    assert store.get(run_id)["status"] == "running"
    store.finish(run_id, 7, "clean")
    got = store.get(run_id[:6])
    assert (got["status"], got["exit_status"], got["cleanup"]) == ("finished", 7, "clean")
    assert got["claims"] == FIELDS["claims"] and got["evidence_ids"] == ["e1"] and got["accept_unverified"] is True
    assert got["ended_at"] >= got["started_at"]


def test_a_refused_launch_is_recorded_with_its_message(db):
    store = RunStore(db)
    got = store.get(store.refuse(FIELDS, "refusing: workspace unverified"))
    assert (got["status"], got["exit_status"], got["refusal"]) == ("refused", 3, "refusing: workspace unverified")


WRITER = """
import sys
from agentbox.run.runs import RunStore
store = RunStore(sys.argv[1])
for n in range(int(sys.argv[2])):
    run_id = store.start({"profile": "p", "profile_digest": "d", "project_root": "/w", "harness": "codex",
                          "harness_args": [sys.argv[3], str(n)]})
    store.list(limit=3)  # readers interleave with the writers
    store.finish(run_id, n % 3, "clean")
"""


def test_concurrent_launches_from_several_processes_leave_every_run_whole(db):
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), "25", f"w{i}"]) for i in range(4)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0, 0]
    rows = RunStore(db).list()
    assert len(rows) == 100 and {r["status"] for r in rows} == {"finished"}
    assert len({r["id"] for r in rows}) == 100
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_running_run_whose_launcher_lives_stays_running(db):
    store = RunStore(db)
    run_id = store.start(FIELDS)
    assert store.reap() == [] and store.get(run_id)["status"] == "running"


def test_a_reused_pid_does_not_keep_a_dead_launchers_run_running(db):
    store = RunStore(db)
    run_id = store.start(FIELDS)
    # the same pid, started at another time: the launcher that owned the run is gone
    store.con.execute("UPDATE runs SET launcher_start=? WHERE id=?", ("other-boot:1", run_id))
    assert store.reap() == [run_id]
    assert store.get(run_id)["status"] == "interrupted"


def test_a_process_identity_is_its_boot_and_start_time_and_none_once_gone():
    start_tick = open(f"/proc/{os.getpid()}/stat").read().rsplit(")", 1)[1].split()[19]
    assert process_identity(os.getpid()).endswith(f":{start_tick}")
    done = subprocess.Popen(["true"])
    done.wait()
    assert process_identity(done.pid) is None


_PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(_PLAIN)
def test_a_runs_columns_are_written_as_json_dumps_would_write_them(value):
    assert runs.json_text(value) == json.dumps(value, sort_keys=True)


def test_arguments_that_are_not_text_are_kept_as_json_escapes_them():
    undecodable = os.fsdecode(b"--name=\xff")  # a surrogate, as Python reads an argv byte that is not UTF-8
    assert runs.json_text([undecodable, 'é\n"x"']) == json.dumps([undecodable, 'é\n"x"'])


def test_what_is_not_plain_data_is_refused_not_written():
    with pytest.raises(TypeError, match="plain data"):
        runs.json_text({"when": object()})
