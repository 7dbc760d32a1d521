"""The claims decision table: declarations against synthetic evidence, no harness involved."""

from __future__ import annotations

import json
import re

import pytest

from agentbox.prove.claims import KEY, UNTESTED, ClaimsTable, key_entries, reconcile

from synthetic import declarations


def only_claim(table, harness="toy"):
    rows = [c for c in table.claims if c.harness == harness]
    assert len(rows) == 1, rows
    return rows[0]


def as_declared(record):
    """Every layer of every vector observed as the default declarations predict."""
    return [
        record("ro-shell", "sandbox", "blocked"),
        record("ro-shell", "harness", "escaped"),
        record("ro-shell", "composed", "blocked"),
        record("ro-file-tool", "harness", "blocked"),
        record("ro-file-tool", "composed", "blocked"),
    ]


def test_every_composed_vector_blocked_with_a_passing_control_makes_an_exact_claim(catalogue, record):
    claim = only_claim(reconcile(as_declared(record), catalogue, declarations()))
    assert (claim.declared, claim.claim, claim.label) == ("exact", "exact", "exact")
    assert (claim.blocked, claim.total, claim.drift) == (2, 2, ())
    assert (claim.harness, claim.version, claim.backend) == ("toy", "1.0", "box")


def test_an_unpredicted_composed_escape_refutes_the_claim_and_names_the_vector(catalogue, record):
    records = [*as_declared(record), record("ro-file-tool", "composed", "escaped")]
    claim = only_claim(reconcile(records, catalogue, declarations()))
    assert claim.claim == "refuted" and claim.escaped == ("ro-file-tool",)
    assert [(d.vector_id, d.layer) for d in claim.drift] == [("ro-file-tool", "composed")]
    # The refuting escape is named once; "+drift" is kept for disagreements beyond it.
    assert claim.label == "refuted" and claim.note_text() == "escaped: ro-file-tool"


def test_a_refuted_claim_shows_drift_in_other_layers_too(catalogue, record):
    records = [
        *as_declared(record),
        record("ro-file-tool", "composed", "escaped"),
        record("ro-shell", "harness", "blocked"),
    ]
    claim = only_claim(reconcile(records, catalogue, declarations()))
    assert claim.label == "refuted+drift"
    assert claim.note_text() == "escaped: ro-file-tool; drift: ro-shell[harness] expected escaped saw blocked"


def test_a_predicted_escape_under_a_partial_closure_makes_a_partial_claim(catalogue, record):
    decl = declarations(sandbox_support="unsupported")
    records = [
        record("ro-shell", "sandbox", "escaped"),
        record("ro-shell", "harness", "escaped"),
        record("ro-shell", "composed", "escaped"),
        record("ro-file-tool", "harness", "blocked"),
        record("ro-file-tool", "composed", "blocked"),
    ]
    claim = only_claim(reconcile(records, catalogue, decl))
    assert (claim.declared, claim.claim, claim.label) == ("partial", "partial", "partial")
    assert (claim.blocked, claim.total) == (1, 2)


def test_a_missing_an_errored_or_an_uncontrolled_vector_leaves_the_claim_unverified(catalogue, record):
    records = [record("ro-shell", "composed", "error")]
    claim = only_claim(reconcile(records, catalogue, declarations()))
    assert claim.claim == "unverified"
    assert claim.unverified == {"ro-shell": "error", "ro-file-tool": "missing"}

    records = [
        record("ro-shell", "composed", "skipped"),
        record("ro-file-tool", "composed", "blocked", control="failed"),
    ]
    claim = only_claim(reconcile(records, catalogue, declarations()))
    assert claim.unverified == {"ro-shell": "skipped", "ro-file-tool": "control failed"}
    assert "control failed: ro-file-tool" in claim.note_text()


def test_a_refutation_outranks_missing_vectors(catalogue, record):
    claim = only_claim(reconcile([record("ro-shell", "composed", "escaped")], catalogue, declarations()))
    assert claim.claim == "refuted" and claim.unverified == {"ro-file-tool": "missing"}


def test_a_layer_observed_otherwise_than_declared_is_drift_even_when_the_claim_holds(catalogue, record):
    # The harness declares the shell a bypass, yet blocked it alone: the declaration is too weak.
    records = [*as_declared(record), record("ro-shell", "harness", "blocked")]
    claim = only_claim(reconcile(records, catalogue, declarations()))
    assert claim.claim == "exact" and claim.label == "exact+drift"
    assert [(d.vector_id, d.layer, d.expected, d.observed) for d in claim.drift] == [
        ("ro-shell", "harness", "escaped", "blocked")
    ]


def test_sandbox_alone_records_make_a_backend_row_and_feed_harness_drift(catalogue, record):
    records = [*as_declared(record), record("ro-shell", "sandbox", "escaped")]
    table = reconcile(records, catalogue, declarations())
    backend = only_claim(table, harness="-")
    assert (backend.backend, backend.version, backend.capability) == ("box", "0.8.0", "workspace.read_only")
    assert backend.claim == "refuted" and backend.escaped == ("ro-shell",) and backend.total == 1
    assert [d.layer for d in only_claim(table).drift] == ["sandbox"]


def test_the_latest_record_of_a_vector_and_layer_decides(catalogue, record):
    records = [record("ro-file-tool", "composed", "escaped"), *as_declared(record)]
    assert only_claim(reconcile(records, catalogue, declarations())).claim == "exact"
    records = [*as_declared(record), record("ro-file-tool", "composed", "escaped")]
    assert only_claim(reconcile(records, catalogue, declarations())).claim == "refuted"


def test_records_of_an_older_binary_build_of_the_same_version_are_set_aside(catalogue, record):
    records = [record("ro-file-tool", "composed", "escaped", sha="old"), *as_declared(record)]
    table = reconcile(records, catalogue, declarations())
    assert only_claim(table).claim == "exact" and only_claim(table).binary_sha256 == "sha-a"
    assert any("another binary build" in n for n in table.notes)


def test_each_harness_version_gets_its_own_row(catalogue, record):
    records = [*as_declared(record), record("ro-shell", "composed", "blocked", version="2.0")]
    rows = {(c.version, c.claim) for c in reconcile(records, catalogue, declarations()).claims if c.harness == "toy"}
    assert rows == {("1.0", "exact"), ("2.0", "unverified")}


def test_a_harness_without_declarations_is_judged_by_the_sandbox_alone(catalogue, record):
    records = [
        record(r.vector_id, r.layer, r.outcome, harness="stranger") for r in as_declared(record) if r.layer != "sandbox"
    ]
    claim = only_claim(reconcile(records, catalogue, declarations()), harness="stranger")
    # Undeclared, the harness layer is predicted to let everything through: its blocks are drift.
    assert claim.declared == "exact" and claim.label == "exact+drift"


def test_a_record_from_another_catalogue_revision_is_stale_and_never_counts(catalogue, record):
    records = [*as_declared(record), record("ro-shell", "composed", "blocked", digest="older")]
    claim = only_claim(reconcile(records, catalogue, declarations()))
    assert claim.claim == "unverified" and claim.unverified == {"ro-shell": "stale (another catalogue)"}
    assert (claim.run, claim.total) == (1, 2)


def test_a_record_of_another_suite_revision_is_stale_when_the_running_suite_is_known(catalogue, record):
    records = as_declared(record)
    assert only_claim(reconcile(records, catalogue, declarations())).claim == "exact"
    claim = only_claim(reconcile(records, catalogue, declarations(), suite_revision="newer"))
    assert claim.claim == "unverified" and set(claim.unverified.values()) == {"stale (another suite revision)"}


def test_records_of_vectors_outside_the_catalogue_are_ignored_and_counted(catalogue, record):
    table = reconcile([*as_declared(record), record("gone-vector", "composed", "escaped")], catalogue, declarations())
    assert only_claim(table).claim == "exact"
    assert table.notes == ["1 record(s) name vectors that are not in this catalogue; ignored"]


def test_the_table_has_one_aligned_line_per_claim_under_a_header(catalogue, record):
    records = [*as_declared(record), record("ro-shell", "harness", "blocked")]
    lines = reconcile(records, catalogue, declarations()).lines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "tested",
        "sandbox",
        "ran as",
        "mode",
        "capability",
        "declared",
        "claim",
        "run",
        "as declared",
        "notes",
    ]
    assert lines[2].split()[:12] == [
        "toy",
        "1.0",
        "box",
        "root",
        "headless",
        "workspace.read_only",
        "exact",
        "exact+drift",
        "2",
        "of",
        "2",
        "2/2",
    ]
    assert "drift: ro-shell[harness] expected escaped saw blocked" in lines[2]
    rows = lines[:3]
    assert len({line.index("capability") if i == 0 else line.index("workspace") for i, line in enumerate(rows)}) == 1


def test_the_sandbox_alone_row_is_named_by_its_backend_and_version(catalogue, record):
    [line] = [line for line in reconcile(as_declared(record), catalogue, declarations()).lines()[1:] if "alone" in line]
    assert line.split()[:6] == ["box", "0.8.0", "alone", "root", "-", "workspace.read_only"]


def test_the_table_ends_with_a_key_to_its_counts_and_claims(catalogue, record):
    lines = reconcile(as_declared(record), catalogue, declarations()).lines()
    assert lines[-len(KEY) :] == list(KEY)
    assert any(line.startswith("run n of m:") for line in KEY)
    assert any(line.startswith("as declared n/m:") for line in KEY)
    assert all(state in " ".join(KEY) for state in ("exact", "partial", "unverified", "refuted", "+drift"))


def test_the_markdown_table_names_the_backend_row_alone_escapes_pipes_and_lists_the_key(catalogue, record):
    table = reconcile([*as_declared(record), record("gone-vector", "composed", "escaped")], catalogue, declarations())
    table = table.model_copy(update={"notes": [*table.notes, "a | b"]})
    lines = table.markdown()
    rows = [[cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))] for line in lines[2:4]]
    assert [r[:3] for r in rows] == [["-", "0.8.0", "box (alone)"], ["toy", "1.0", "box"]]
    assert rows[1][6:9] == ["exact", "exact", "2 / 2 of 2"]
    below = lines[lines.index("") + 1 :]
    assert below[:2] == ["- note: 1 record(s) name vectors that are not in this catalogue; ignored", "- note: a \\| b"]
    assert below[2:] == [f"- {entry}" for entry in key_entries()]
    # the key's continuation lines joined to their entry: run, as declared, claim, inapplicable
    assert [entry.split(":")[0] for entry in key_entries()] == [
        "run n of m",
        "as declared n/m",
        "claim",
        "inapplicable",
    ]


def test_as_declared_counts_a_declared_bypass_that_escaped_where_blocked_does_not(catalogue, record):
    decl = declarations(sandbox_support="unsupported")
    records = [record("ro-shell", "composed", "escaped"), record("ro-file-tool", "composed", "blocked")]
    claim = only_claim(reconcile(records, catalogue, decl))
    assert claim.claim == "partial" and (claim.blocked, claim.as_declared, claim.total) == (1, 2, 2)
    assert "2 of 2  2/2" in reconcile(records, catalogue, decl).lines()[1]


def test_an_escape_the_declarations_do_not_predict_is_not_as_declared(catalogue, record):
    records = [*as_declared(record), record("ro-file-tool", "composed", "escaped")]
    claim = only_claim(reconcile(records, catalogue, declarations()))
    assert claim.claim == "refuted" and (claim.run, claim.as_declared) == (2, 1)


def test_the_table_round_trips_through_json_with_its_printed_label(catalogue, record):
    table = reconcile([*as_declared(record), record("ro-shell", "harness", "blocked")], catalogue, declarations())
    data = json.loads(table.model_dump_json())
    assert data["claims"][1]["label"] == "exact+drift"
    data["claims"] = [{k: v for k, v in c.items() if k != "label"} for c in data["claims"]]
    assert ClaimsTable.model_validate(data) == table


def test_a_run_sees_only_the_rows_of_the_versions_it_recorded(catalogue, record):
    records = [*as_declared(record), record("ro-shell", "composed", "blocked", version="2.0")]
    table = reconcile(records, catalogue, declarations())
    mine = table.only([record("ro-shell", "composed", "blocked", version="2.0")])
    assert [(c.harness, c.version) for c in mine.claims] == [("toy", "2.0")]
    mine = table.only([record("ro-shell", "sandbox", "blocked")])
    assert [(c.harness, c.backend) for c in mine.claims] == [("-", "box")]


def test_a_vector_the_catalogue_cannot_run_on_a_harness_leaves_the_claim_unverified_not_smaller(tmp_path, record):
    from agentbox.prove.vectors import Catalogue

    from synthetic import VECTORS, write_catalogue

    skipping = [
        {**VECTORS[0], "id": "ro-skipped", "skip_harnesses": {"toy": "no control can succeed on toy"}},
        *VECTORS,
    ]
    catalogue = write_catalogue(tmp_path / "vectors")
    catalogue = Catalogue([*load(skipping[:1]), *catalogue.vectors], catalogue.digest)
    claim = only_claim(reconcile(as_declared(record), catalogue, declarations()))
    assert claim.claim == "unverified" and claim.unverified == {"ro-skipped": "skipped"}
    assert (claim.run, claim.total) == (2, 3)


@pytest.mark.parametrize(("last_skipped", "why"), [("1.0", "skipped"), ("0.9", "missing")])
def test_a_vector_skipped_on_some_versions_is_skipped_only_on_those(tmp_path, record, last_skipped, why):
    from agentbox.prove.vectors import Catalogue

    from synthetic import VECTORS, write_catalogue

    skip = {"toy": {"reason": "its 1.0 lacks the tool", "max_version": last_skipped}}
    catalogue = write_catalogue(tmp_path / "vectors")
    old = load([{**VECTORS[0], "id": "ro-old", "skip_harnesses": skip}])
    catalogue = Catalogue([*old, *catalogue.vectors], catalogue.digest)
    claim = only_claim(reconcile(as_declared(record), catalogue, declarations()))  # the records are toy 1.0's
    assert claim.claim == "unverified" and claim.unverified == {"ro-old": why}


def test_a_capability_whose_every_vector_is_skipped_still_has_a_row(tmp_path, record):
    from agentbox.prove.vectors import Catalogue

    from synthetic import VECTORS, write_catalogue

    catalogue = write_catalogue(tmp_path / "vectors")
    only_skipped = {
        **VECTORS[0],
        "id": "rw-skipped",
        "capability": "workspace.read_write",
        "skip_harnesses": {"toy": "no control can succeed on toy"},
    }
    catalogue = Catalogue([*catalogue.vectors, *load([only_skipped])], catalogue.digest)
    rows = {
        c.capability: c for c in reconcile(as_declared(record), catalogue, declarations()).claims if c.harness == "toy"
    }
    assert rows["workspace.read_write"].claim == "unverified"
    assert (rows["workspace.read_write"].run, rows["workspace.read_write"].total) == (0, 1)


def load(entries):
    from agentbox.prove.vectors import Vector

    return [Vector.model_validate(e) for e in entries]


def test_a_harness_driven_in_its_tui_gets_rows_of_its_own_beside_its_headless_ones(catalogue, record):
    records = [*as_declared(record), record("ro-shell", "composed", "escaped", mode="tui")]
    rows = {
        (c.mode, c.capability): c for c in reconcile(records, catalogue, declarations()).claims if c.harness == "toy"
    }
    assert rows[("headless", "workspace.read_only")].claim == "exact"
    assert rows[("tui", "workspace.read_only")].claim != "exact"  # its escape never touches the headless row


# -- a tui or acp row's vectors the sandbox alone blocks: carried from the build's headless run --------------------


def tui_row(records, catalogue):
    [row] = [
        c
        for c in reconcile(records, catalogue, declarations()).claims
        if (c.harness, c.mode, c.capability) == ("toy", "tui", "workspace.read_only")
    ]
    return row


def tui_file_tool(record):
    """The tui run's own record of the vector the sandbox alone cannot block (a file tool's write)."""
    return [
        record("ro-file-tool", "harness", "blocked", mode="tui"),
        record("ro-file-tool", "composed", "blocked", mode="tui"),
    ]


def test_a_vector_the_sandbox_alone_blocks_is_carried_into_a_tui_row_by_the_headless_composed_run(catalogue, record):
    row = tui_row([*as_declared(record), *tui_file_tool(record)], catalogue)
    assert (row.claim, row.carried, row.run) == ("exact", ("ro-shell",), 2)
    assert "1 carried from headless runs" in row.note_text()


@pytest.mark.parametrize(
    "spoiler",
    [
        ("ro-shell", "sandbox", "escaped", "passed"),  # the sandbox alone did not block it
        ("ro-shell", "sandbox", "blocked", "failed"),  # ... or its control never saw the effect
        ("ro-shell", "composed", "blocked", "failed"),  # the headless composed block proves nothing
        ("ro-shell", "composed", "error", "passed"),
    ],
)
def test_a_vector_is_carried_only_on_two_current_blocks_with_passing_controls(catalogue, record, spoiler):
    vid, layer, outcome, control = spoiler
    records = [*as_declared(record), record(vid, layer, outcome, control=control), *tui_file_tool(record)]
    row = tui_row(records, catalogue)
    assert row.carried == () and row.claim != "exact"


def test_a_headless_record_of_another_build_carries_nothing(catalogue, record):
    records = [
        record("ro-shell", "sandbox", "blocked"),
        record("ro-shell", "composed", "blocked", sha="sha-rebuilt"),  # the same version, another binary
        *tui_file_tool(record),
    ]
    row = tui_row(records, catalogue)
    assert row.carried == () and row.unverified == {"ro-shell": "missing, not carried"}


def test_a_stale_headless_record_carries_nothing(catalogue, record):
    records = [
        *as_declared(record),
        record("ro-shell", "composed", "blocked", digest="another"),
        *tui_file_tool(record),
    ]
    row = tui_row(records, catalogue)
    assert row.carried == () and row.claim == "unverified"


def test_the_modes_own_record_decides_even_where_the_headless_one_would_carry(catalogue, record):
    records = [*as_declared(record), *tui_file_tool(record), record("ro-shell", "composed", "escaped", mode="tui")]
    row = tui_row(records, catalogue)
    assert row.carried == () and row.claim == "refuted" and row.escaped == ("ro-shell",)


def test_an_acp_row_carries_only_where_the_acp_agent_is_the_harness_binary_itself():
    from agentbox.prove.claims import carries_into

    # codex-acp embeds a codex core of its own, and its install is bound into its sandbox: another program
    assert not carries_into("codex", "acp") and not carries_into("claude-code", "acp")
    assert carries_into("opencode", "acp") and carries_into("hermes", "acp")  # `opencode acp`, `hermes acp`
    assert carries_into("codex", "tui") and not carries_into("codex", "headless")


def test_a_headless_row_carries_nothing(catalogue, record):
    [row] = [c for c in reconcile(as_declared(record), catalogue, declarations()).claims if c.harness == "toy"]
    assert row.carried == ()


def test_a_capability_no_vector_tests_in_a_layer_is_shown_unverified_never_left_out(tmp_path, record):
    from agentbox.prove.vectors import Catalogue

    from synthetic import VECTORS, write_catalogue

    catalogue = write_catalogue(tmp_path / "vectors")
    harness_only = {**VECTORS[1], "id": "rw-file-tool", "capability": "workspace.read_write"}
    catalogue = Catalogue([*catalogue.vectors, *load([harness_only])], catalogue.digest)
    table = reconcile(as_declared(record), catalogue, declarations())
    [alone] = [c for c in table.claims if c.harness == "-" and c.capability == "workspace.read_write"]
    assert (alone.claim, alone.run, alone.total, alone.notes) == ("unverified", 0, 0, (UNTESTED,))
    assert any(
        line.startswith("box 0.8.0") and "workspace.read_write" in line and "0 of 0" in line for line in table.lines()
    )


# -- a vector the recording kernel cannot be attacked by (`inapplicable`) -----------------------------------------


@pytest.fixture
def kernel_catalogue(tmp_path):
    """The synthetic catalogue, each vector needing a module loader (as priv-load-module does)."""
    import yaml

    from agentbox.prove.vectors import load_catalogue
    from synthetic import VECTORS

    (tmp_path / "kernel").mkdir()
    needing = [{**v, "kernel_needs": ["modules"], "enosys": "{ws}/enosys.txt"} for v in VECTORS]
    (tmp_path / "kernel" / "workspace.yaml").write_text(yaml.safe_dump(needing))
    return load_catalogue(tmp_path / "kernel")


@pytest.fixture
def kernel_record(kernel_catalogue):
    import functools

    from synthetic import make_record

    return functools.partial(make_record, kernel_catalogue)


def inapplicable(record, vector, layer):
    return record(vector, layer, "inapplicable", control="failed", kernel_lacks=("modules",))


def test_a_vector_inapplicable_on_the_recording_kernel_neither_counts_as_blocked_nor_leaves_the_claim_unverified(
    kernel_catalogue, kernel_record
):
    records = [*as_declared(kernel_record)[:-1], inapplicable(kernel_record, "ro-file-tool", "composed")]
    claim = only_claim(reconcile(records, kernel_catalogue, declarations()))
    assert claim.claim == "exact" and claim.unverified == {}
    assert (claim.blocked, claim.run, claim.total) == (1, 2, 2)  # run, and not blocked
    assert claim.inapplicable == {"ro-file-tool": ("modules",)} and claim.kernel_lacks == ("modules",)


def test_a_claim_resting_on_an_inapplicable_vector_says_it_is_exact_only_where_the_kernel_lacks_the_feature(
    kernel_catalogue, kernel_record
):
    records = [*as_declared(kernel_record)[:-1], inapplicable(kernel_record, "ro-file-tool", "composed")]
    table = reconcile(records, kernel_catalogue, declarations())
    claim = only_claim(table)
    assert claim.note_text() == "exact only where the kernel has no module loader (inapplicable: ro-file-tool)"
    row = next(line for line in table.lines() if line.startswith("toy 1.0"))
    assert row.endswith("exact only where the kernel has no module loader (inapplicable: ro-file-tool)")
    assert any(line.startswith("inapplicable:") for line in table.lines())  # the key explains the word


def test_the_condition_travels_in_the_claims_json(kernel_catalogue, kernel_record):
    records = [*as_declared(kernel_record)[:-1], inapplicable(kernel_record, "ro-file-tool", "composed")]
    data = json.loads(reconcile(records, kernel_catalogue, declarations()).model_dump_json())
    [row] = [c for c in data["claims"] if c["harness"] == "toy"]
    assert row["inapplicable"] == {"ro-file-tool": ["modules"]}


def test_a_claim_whose_every_vector_was_inapplicable_observed_nothing_and_stays_unverified(
    kernel_catalogue, kernel_record
):
    records = [
        inapplicable(kernel_record, "ro-shell", "composed"),
        inapplicable(kernel_record, "ro-file-tool", "composed"),
    ]
    claim = only_claim(reconcile(records, kernel_catalogue, declarations()))
    assert claim.claim == "unverified" and claim.blocked == 0
    assert claim.note_text() == "inapplicable where the kernel has no module loader: ro-file-tool, ro-shell"


def test_an_escape_still_refutes_a_claim_with_an_inapplicable_vector(kernel_catalogue, kernel_record):
    records = [
        inapplicable(kernel_record, "ro-file-tool", "composed"),
        kernel_record("ro-shell", "composed", "escaped"),
    ]
    claim = only_claim(reconcile(records, kernel_catalogue, declarations()))
    assert claim.claim == "refuted" and claim.escaped == ("ro-shell",)


def test_an_inapplicable_vector_is_no_drift(kernel_catalogue, kernel_record):
    records = [
        *as_declared(kernel_record)[:-1],
        inapplicable(kernel_record, "ro-file-tool", "composed"),
        inapplicable(kernel_record, "ro-file-tool", "harness"),
    ]
    claim = only_claim(reconcile(records, kernel_catalogue, declarations()))
    assert claim.drift == () and claim.layers["composed"]["ro-file-tool"] == "inapplicable"


def test_an_inapplicable_record_of_a_vector_that_needs_no_kernel_feature_proves_nothing(tmp_path):
    import functools

    from synthetic import make_record, write_catalogue

    plain = write_catalogue(tmp_path / "plain")
    record = functools.partial(make_record, plain)
    records = [
        record("ro-shell", "composed", "blocked"),
        record("ro-file-tool", "composed", "inapplicable", control="failed", kernel_lacks=("modules",)),
    ]
    claim = only_claim(reconcile(records, plain, declarations()))
    assert claim.claim == "unverified" and claim.inapplicable == {}
    assert claim.unverified == {"ro-file-tool": "inapplicable, but the vector needs no kernel feature the record names"}


def test_a_vector_inapplicable_alone_and_headless_is_carried_into_a_tui_row_with_its_condition(
    kernel_catalogue, kernel_record
):
    records = [
        inapplicable(kernel_record, "ro-shell", "sandbox"),
        inapplicable(kernel_record, "ro-shell", "composed"),
        kernel_record("ro-file-tool", "harness", "blocked", mode="tui"),
        kernel_record("ro-file-tool", "composed", "blocked", mode="tui"),
    ]
    row = tui_row(records, kernel_catalogue)
    assert row.carried == ("ro-shell",) and row.claim == "exact" and row.kernel_lacks == ("modules",)
