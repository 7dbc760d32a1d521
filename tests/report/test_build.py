"""The report builder: synthetic evidence in, matrix cells with their drill-down records out."""

from __future__ import annotations

from agentbox.prove.claims import reconcile
from agentbox.report.build import build_report
from synthetic_matrix import BACKEND, SANDBOX_VERSION

from report_matrix import HARNESSES, VERSIONS


def cells_of(report, column):
    return {c.capability: c for c in report.cells if c.column == column}


def test_honest_evidence_shows_each_declaration_shape_with_its_enforcing_layer(matrix):
    report = build_report(matrix.records(), matrix.catalogue, matrix.declarations)
    cells = cells_of(report, f"alpha 1.0.0 {BACKEND} root headless")
    seen = {cap: (c.state, c.drift, c.enforced_by, f"{c.blocked}/{c.total}") for cap, c in cells.items()}
    assert seen == {
        "cap00.synthetic": ("exact", False, ("sandbox",), "2/2"),
        "cap01.synthetic": ("exact", False, ("harness",), "2/2"),
        "cap02.synthetic": ("partial", False, ("harness",), "1/2"),
        "cap03.synthetic": ("unsupported", False, (), "0/2"),
    }
    assert cells["cap00.synthetic"].layers == {"harness": "partial", "sandbox": "exact"}


def test_the_matrix_has_a_column_per_harness_version_and_one_for_the_sandbox_alone(matrix):
    report = build_report(matrix.records(), matrix.catalogue, matrix.declarations)
    assert [c.key for c in report.columns] == [f"- {SANDBOX_VERSION} {BACKEND} root -"] + [
        f"{h} {v} {BACKEND} root headless" for h in HARNESSES for v in VERSIONS
    ]
    assert report.capabilities == ("cap00.synthetic", "cap01.synthetic", "cap02.synthetic", "cap03.synthetic")
    sandbox = cells_of(report, f"- {SANDBOX_VERSION} {BACKEND} root -")
    assert {cap: c.state for cap, c in sandbox.items()} == {
        "cap00.synthetic": "exact",
        "cap01.synthetic": "unsupported",
        "cap02.synthetic": "unsupported",
        "cap03.synthetic": "unsupported",
    }
    assert all(
        c.decisive_layer == "sandbox" and all(set(r.records) == {"sandbox"} for r in c.vectors)
        for c in sandbox.values()
    )


def test_every_cell_says_what_reconcile_says(matrix):
    def twist(harness, version, vector, layer, predicted):
        if version == "1.1.0" and vector.id == "vec-000" and layer == "composed":
            return "escaped", "passed"
        return predicted

    records = matrix.records(twist)
    report = build_report(records, matrix.catalogue, matrix.declarations)
    claims = reconcile(records, matrix.catalogue, matrix.declarations).claims
    assert [(c.capability, c.label, c.declared, c.blocked, c.total) for c in report.cells] == [
        (c.capability, c.label, c.declared, c.blocked, c.total) for c in claims
    ]


def test_every_drill_down_accounts_for_its_claim(matrix):
    def twist(harness, version, vector, layer, predicted):
        n = int(vector.id[-3:])
        if layer == "composed" and (n + len(version)) % 5 == 0:
            return None if harness == "alpha" else ("blocked", "failed")
        if layer == "composed" and n == 3 and version == "1.2.0":
            return "escaped", "passed"
        return predicted

    report = build_report(matrix.records(twist), matrix.catalogue, matrix.declarations)
    assert {c.state for c in report.cells} >= {"exact", "partial", "unsupported", "unverified"}
    for cell in report.cells:
        decisive = {
            row.vector_id: report.observations.get(row.records.get(cell.decisive_layer))
            for row in cell.vectors
            if row.verdict != "not judged"
        }
        assert len(decisive) == cell.total
        verdicts = {row.vector_id: row.verdict for row in cell.vectors}
        assert sum(v == "blocked" for v in verdicts.values()) == cell.blocked
        for vid, obs in decisive.items():
            expected = (
                {None: "missing"}
                if obs is None
                else {
                    ("blocked", "passed"): "blocked",
                    ("blocked", "failed"): "control failed",
                    ("escaped", "passed"): "escaped" if vid in cell.note else "escaped as declared",
                }
            )
            key = None if obs is None else (obs.outcome, obs.control_outcome)
            assert verdicts[vid] == expected[key], (cell.column, cell.capability, vid)


def test_a_composed_escape_refutes_the_cell_and_its_row_points_at_the_escaping_record(matrix):
    def twist(harness, version, vector, layer, predicted):
        if (harness, version, vector.id, layer) == ("alpha", "1.1.0", "vec-004", "composed"):
            return "escaped", "passed"
        return predicted

    report = build_report(matrix.records(twist), matrix.catalogue, matrix.declarations)
    cell = cells_of(report, f"alpha 1.1.0 {BACKEND} root headless")["cap00.synthetic"]
    assert (cell.state, cell.label) == ("refuted", "refuted")
    row = next(r for r in cell.vectors if r.vector_id == "vec-004")
    assert row.verdict == "escaped"
    decisive = report.observations[row.records["composed"]]
    assert (decisive.outcome, decisive.control_outcome) == ("escaped", "passed")
    assert decisive.nodeid.endswith("[alpha-1.1.0-vec-004-composed]")


def test_missing_or_uncontrolled_vectors_leave_the_cell_unverified_and_say_why(matrix):
    def twist(harness, version, vector, layer, predicted):
        if harness == "bravo" and version == "1.2.0" and layer == "composed":
            if vector.id == "vec-001":
                return None
            if vector.id == "vec-005":
                return "blocked", "failed"
        return predicted

    report = build_report(matrix.records(twist), matrix.catalogue, matrix.declarations)
    cell = cells_of(report, f"bravo 1.2.0 {BACKEND} root headless")["cap01.synthetic"]
    assert cell.state == "unverified"
    rows = {r.vector_id: r for r in cell.vectors}
    assert rows["vec-001"].verdict == "missing" and "composed" not in rows["vec-001"].records
    assert rows["vec-005"].verdict == "control failed"
    assert "missing: vec-001" in cell.note and "control failed: vec-005" in cell.note


def test_a_layer_that_behaves_otherwise_than_declared_marks_the_cell_and_the_row_with_drift(matrix):
    def twist(harness, version, vector, layer, predicted):
        # alpha declares the shell a bypass for cap00, yet blocks it alone: a declaration too weak.
        if (harness, vector.id, layer) == ("alpha", "vec-000", "harness"):
            return "blocked", "passed"
        return predicted

    report = build_report(matrix.records(twist), matrix.catalogue, matrix.declarations)
    cell = cells_of(report, f"alpha 1.0.0 {BACKEND} root headless")["cap00.synthetic"]
    assert (cell.state, cell.drift, cell.label) == ("exact", True, "exact+drift")
    row = next(r for r in cell.vectors if r.vector_id == "vec-000")
    assert [(d.layer, d.expected, d.observed) for d in row.drift] == [("harness", "escaped", "blocked")]


def test_a_drill_down_shows_the_records_that_decided_not_older_ones(matrix):
    first = matrix.records(harnesses=("alpha",), versions=("1.0.0",))
    rerun = matrix.records(harnesses=("alpha",), versions=("1.0.0",), start=first[-1].when.replace(year=2026))
    rerun = [r.model_copy(update={"id": "b" + r.id[1:]}) for r in rerun]
    report = build_report([*first, *rerun], matrix.catalogue, matrix.declarations)
    referenced = {rid for c in report.cells for row in c.vectors for rid in row.records.values()}
    assert referenced == set(report.observations) and all(rid.startswith("b") for rid in referenced)


def test_records_of_another_build_of_the_same_version_are_left_out_of_the_drill_down(matrix):
    records = matrix.records(harnesses=("alpha",), versions=("1.0.0",))
    old_build = [
        r.model_copy(
            update={
                "id": "0ld" + r.id[3:],
                "timestamp": "2024-01-01T00:00:00.000+00:00",
                "run_info": r.run_info.model_copy(update={"binary_sha256": "f" * 64}),
            }
        )
        for r in records
        if r.layer != "sandbox"
    ]
    report = build_report([*old_build, *records], matrix.catalogue, matrix.declarations)
    assert not any(rid.startswith("0ld") for rid in report.observations)
    assert report.columns[1].binary_sha256 == records[-1].run_info.binary_sha256
    assert any("another binary build" in n for n in report.notes)


def test_adjacent_versions_of_each_harness_are_diffed(matrix):
    def twist(harness, version, vector, layer, predicted):
        if harness == "alpha" and version == "1.1.0" and vector.id == "vec-005" and layer == "composed":
            return "escaped", "passed"
        return predicted

    report = build_report(matrix.records(twist), matrix.catalogue, matrix.declarations)
    pairs = [(d.harness, d.old_version, d.new_version) for d in report.diffs]
    assert pairs == [
        ("alpha", "1.0.0", "1.1.0"),
        ("alpha", "1.1.0", "1.2.0"),
        ("bravo", "1.0.0", "1.1.0"),
        ("bravo", "1.1.0", "1.2.0"),
    ]
    changed = {
        (d.old_version, c.capability, c.old, c.new, c.change)
        for d in report.diffs
        if d.harness == "alpha"
        for c in d.changes
        if c.change != "unchanged"
    }
    assert changed == {
        ("1.0.0", "cap01.synthetic", "exact", "refuted", "regressed"),
        ("1.1.0", "cap01.synthetic", "refuted", "exact", "improved"),
    }


def test_the_header_facts_come_from_the_records(matrix):
    records = matrix.records()
    report = build_report(records, matrix.catalogue, matrix.declarations)
    assert report.recorded.records == len(records)
    assert (report.recorded.first, report.recorded.last) == (records[0].timestamp, records[-1].timestamp)
    assert report.host.kernels == ("6.1.0-synthetic",) and report.host.suite_revisions == ("synthetic",)
    assert report.catalogue_digest == matrix.catalogue.digest
    assert [s.state for s in report.states] == ["exact", "partial", "unsupported", "unverified", "refuted", "drift"]


def test_an_observation_is_kept_verbatim(matrix):
    excerpt = 'proxy: CONNECT evil.example:443 -> denied\n<script>alert("x")</script> & more'
    records = [
        r.model_copy(update={"observation": excerpt}) if r.vector_id == "vec-000" else r
        for r in matrix.records(harnesses=("alpha",), versions=("1.0.0",))
    ]
    report = build_report(records, matrix.catalogue, matrix.declarations)
    assert {o.observation for o in report.observations.values()} >= {excerpt}


def test_a_backend_declared_for_a_tested_range_is_read_at_the_version_the_claim_was_judged_at(matrix):
    def ranged(layer):
        decl = matrix.declarations(layer)
        if layer != BACKEND:
            return decl
        return decl.model_copy(update={"tested_range": {"min": SANDBOX_VERSION, "max": SANDBOX_VERSION}})

    report = build_report(matrix.records(), matrix.catalogue, ranged)
    for column in (f"alpha 1.0.0 {BACKEND} root headless", f"- {SANDBOX_VERSION} {BACKEND} root -"):
        cell = cells_of(report, column)["cap00.synthetic"]
        assert (cell.state, cell.enforced_by, cell.layers["sandbox"]) == ("exact", ("sandbox",), "exact"), column


def _as(records, **run_info):
    return [
        r.model_copy(
            update={
                "id": f"{r.id}-{'-'.join(map(str, run_info.values()))}",
                "run_info": r.run_info.model_copy(update=run_info),
            }
        )
        for r in records
    ]


def test_each_mode_and_privilege_is_a_column_of_its_own_with_its_own_records(matrix):
    from agentbox.prove.evidence import Privilege

    records = matrix.records(harnesses=("alpha",), versions=("1.0.0",))
    harnessed = [r for r in records if r.run_info.harness is not None]
    alone = [r for r in records if r.run_info.harness is None]
    twice = [*records, *_as(harnessed, mode="tui"), *_as(alone, privilege=Privilege(uid=1000))]
    report = build_report(twice, matrix.catalogue, matrix.declarations)
    assert {c.key for c in report.columns} == {
        f"- {SANDBOX_VERSION} {BACKEND} root -",
        f"- {SANDBOX_VERSION} {BACKEND} user -",
        f"alpha 1.0.0 {BACKEND} root headless",
        f"alpha 1.0.0 {BACKEND} root tui",
    }
    tui, headless = (cells_of(report, f"alpha 1.0.0 {BACKEND} root {m}") for m in ("tui", "headless"))
    assert {k: c.state for k, c in tui.items()} == {k: c.state for k, c in headless.items()}
    by_id = {r.id: r for r in twice}
    for cell in tui.values():  # a TUI cell's drill-down shows the TUI's records, never the headless run's
        assert all(
            by_id[rid].run_info.mode == "tui"
            for row in cell.vectors
            for layer, rid in row.records.items()
            if layer != "sandbox"
        )


def test_a_tui_cell_shows_the_vectors_its_headless_run_carries_blocked_with_their_headless_records(matrix):
    headless = matrix.records(harnesses=("alpha",), versions=("1.0.0",))
    # the TUI run left out the capability the sandbox alone blocks (cap00), as --agentbox-carry does
    tui = [
        r.model_copy(update={"id": f"tui-{r.id}", "run_info": r.run_info.model_copy(update={"mode": "tui"})})
        for r in headless
        if r.run_info.harness is not None and r.capability != "cap00.synthetic"
    ]
    report = build_report([*headless, *tui], matrix.catalogue, matrix.declarations)
    cell = cells_of(report, f"alpha 1.0.0 {BACKEND} root tui")["cap00.synthetic"]
    by_id = {r.id: r for r in headless}
    assert cell.state == "exact" and "2 carried from headless runs" in cell.note
    for row in cell.vectors:
        assert row.verdict.startswith("blocked (its headless run, carried")
        assert by_id[row.records["composed"]].run_info.mode == "headless"
