"""An acp row of a harness an ACP adapter drives is one adapter build's: the adapter is the program that ran."""

from __future__ import annotations

import pytest

from agentbox.harnesses import acp_entries
from agentbox.harnesses.agent_build import AgentBuild
from agentbox.prove.claims import ClaimsTable, reconcile
from synthetic import declarations

OLD = AgentBuild(name="toy-acp", version="0.15.0", sha256="1" * 64)
NEW = AgentBuild(name="toy-acp", version="0.16.0", sha256="2" * 64)


@pytest.fixture(autouse=True)
def toy_has_an_adapter(monkeypatch):
    """The synthetic harness `toy` driven as an ACP agent through an adapter package, as codex is by codex-acp."""
    monkeypatch.setattr(acp_entries, "acp_adapter", lambda harness: "toy-acp" if harness == "toy" else None)


def acp_records(record, adapter, outcome="blocked"):
    return [
        record("ro-shell", "sandbox", "blocked"),
        record("ro-shell", "composed", outcome, mode="acp", adapter=adapter),
        record("ro-file-tool", "harness", outcome, mode="acp", adapter=adapter),
        record("ro-file-tool", "composed", outcome, mode="acp", adapter=adapter),
    ]


def acp_row(table: ClaimsTable):
    [row] = [c for c in table.claims if (c.harness, c.mode, c.capability) == ("toy", "acp", "workspace.read_only")]
    return row


def test_an_acp_row_of_an_adapter_harness_names_the_adapter_build_it_ran(catalogue, record):
    table = reconcile(acp_records(record, NEW), catalogue, declarations("exact"))
    row = acp_row(table)
    assert row.claim == "exact" and row.adapter == NEW
    assert row.tested() == "toy 1.0 via toy-acp 0.16.0"
    assert any(line.startswith("toy 1.0 via toy-acp 0.16.0") for line in table.lines())
    assert any("| 1.0 via toy-acp 0.16.0 |" in line for line in table.markdown())
    # `--json` carries it as a field of the row
    assert table.model_dump(mode="json")["claims"][table.claims.index(row)]["adapter"]["sha256"] == "2" * 64


def test_two_adapter_builds_never_merge_into_one_row_the_newest_build_wins(catalogue, record):
    # the old adapter build escaped; the newer one, recorded after it, blocked every vector
    records = [*acp_records(record, OLD, "escaped"), *acp_records(record, NEW)]
    table = reconcile(records, catalogue, declarations("exact"))
    row = acp_row(table)
    assert (row.adapter, row.claim, row.escaped) == (NEW, "exact", ())
    assert "toy 1.0 (acp): 3 record(s) of another adapter build ignored" in table.notes


def test_the_newer_adapter_builds_gaps_are_not_filled_by_the_older_builds_blocks(catalogue, record):
    records = [*acp_records(record, OLD), record("ro-shell", "composed", "blocked", mode="acp", adapter=NEW)]
    row = acp_row(reconcile(records, catalogue, declarations("exact")))
    assert row.adapter == NEW and row.claim == "unverified" and "ro-file-tool" in row.unverified


def test_a_record_from_before_the_adapter_was_recorded_proves_nothing_for_acp(catalogue, record):
    row = acp_row(reconcile(acp_records(record, None), catalogue, declarations("exact")))
    assert row.adapter is None and row.claim == "unverified"
    assert set(row.unverified.values()) == {"recorded before the adapter was recorded"}
    assert "recorded before the adapter was recorded: ro-shell, ro-file-tool" in row.note_text()


def test_the_rows_of_other_modes_and_of_a_native_acp_agent_name_no_adapter(catalogue, record, monkeypatch):
    headless = [record("ro-shell", "sandbox", "blocked"), record("ro-shell", "composed", "blocked")]
    headless += [record("ro-file-tool", layer, "blocked") for layer in ("harness", "composed")]
    (row,) = [c for c in reconcile(headless, catalogue, declarations("exact")).claims if c.harness == "toy"]
    assert (row.adapter, row.claim, row.tested()) == (None, "exact", "toy 1.0")
    monkeypatch.setattr(acp_entries, "acp_adapter", lambda harness: None)  # `opencode acp`: the harness itself
    native = acp_row(reconcile(acp_records(record, None), catalogue, declarations("exact")))
    assert (native.adapter, native.claim) == (None, "exact")
