"""The canary's verdict: claim and layer diffs against the previous version, failures, and the baseline."""

from __future__ import annotations

from agentbox.prove.canary import Build, build_report
from agentbox.prove.canary_baseline import (
    Baseline,
    ExpectedClaim,
    ExpectedTestFailure,
    ExpectedUntestedRange,
    ExpectedVector,
)
from agentbox.prove.claims import Claim, ClaimsTable, Drift, reconcile
from agentbox.prove.evidence import EvidenceRecord, RunInfo
from agentbox.prove.freshness import Freshness
from synthetic import declarations, make_record


def claim(version, capability="shell.deny", state="exact", declared="exact", drift=()):
    return Claim(
        harness="codex",
        version=version,
        backend="bwrap",
        capability=capability,
        declared=declared,
        claim=state,
        blocked=1,
        total=1,
        drift=drift,
    )


def build(version, in_range=True, action="reverified", harness="codex"):
    return Build(
        harness=harness,
        version=version,
        binary_sha256="s",
        in_tested_range=in_range,
        action=action,
        freshness=Freshness(subject=f"{harness} {version}", state="missing", reason="no evidence recorded"),
    )


def ran(b):
    """A vector run of `b` this canary recorded (the verdict asks only whose run it was)."""
    return EvidenceRecord.model_construct(
        run_info=RunInfo.model_construct(harness=b.harness, version=b.version), nodeid=None
    )


def report(claims, builds, **kw):
    kw["recorded"] = [*kw.get("recorded", ()), *(ran(b) for b in builds)]
    return build_report(ClaimsTable(catalogue_digest="d", claims=claims), builds, suite_revision="r", **kw)


def test_a_claim_that_got_worse_than_in_the_previous_version_fails_the_canary():
    r = report([claim("1.0"), claim("2.0", state="unverified")], [build("2.0")])
    assert r.targets[0].previous_version == "1.0"
    assert [c.change for c in r.targets[0].changes] == ["regressed"]
    assert [f.id for f in r.failures] == ["codex@2.0:regressed:bwrap/shell.deny"]
    assert not r.passed


def test_improved_new_and_removed_capabilities_are_listed_and_pass():
    old = [claim("1.0", state="unverified"), claim("1.0", capability="mcp.allowlist")]
    new = [claim("2.0"), claim("2.0", capability="host_home.hidden")]
    r = report(old + new, [build("2.0")])
    assert {(c.capability, c.change) for c in r.targets[0].changes} == {
        ("shell.deny", "improved"),
        ("mcp.allowlist", "removed"),
        ("host_home.hidden", "new"),
    }
    assert r.passed


def test_the_previous_version_is_the_newest_recorded_one_below_numerically():
    claims = [claim(v) for v in ("0.9.0", "0.10.0", "0.2.0", "0.11.0")]
    r = report(claims, [build("0.11.0"), build("0.2.0")])
    assert [t.previous_version for t in r.targets] == ["0.10.0", None]


def test_drift_fails_the_canary_and_names_the_test_that_saw_it():
    d = Drift(vector_id="net-curl", layer="composed", expected="blocked", observed="escaped", nodeid="n::t[x]")
    r = report([claim("2.0", drift=(d,))], [build("2.0")], failed_tests=["n::t[x]"])
    assert [(f.id, f.nodeid) for f in r.failures] == [("codex@2.0:drift:net-curl/composed", "n::t[x]")]
    assert not r.passed


def test_a_version_outside_the_tested_range_with_unverified_claims_fails():
    r = report([claim("9.0", state="unverified")], [build("9.0", in_range=False)])
    assert [f.kind for f in r.failures] == ["untested_range"]
    assert report([claim("9.0")], [build("9.0", in_range=False)]).passed


def test_a_failing_test_that_recorded_no_vector_run_fails_the_canary_unless_the_baseline_names_it():
    assert not report([], [], failed_tests=["t::a"], allow_empty=True).passed
    listed = Baseline(expected_failures=[ExpectedTestFailure(test="t::a", reason="upstream bug")])
    r = report([], [], failed_tests=["t::a"], baseline=listed, allow_empty=True)
    assert r.passed and r.failures[0].expected == "upstream bug"


def test_a_baseline_entry_that_no_longer_happens_is_stale_and_fails_the_canary():
    listed = Baseline(
        expected_failures=[
            ExpectedClaim(
                harness="codex",
                version="2.0",
                backend="bwrap",
                capability="shell.deny",
                outcome="unverified",
                reason="was broken",
            ),
            ExpectedUntestedRange(harness="codex", version="3.0", untested_range=True, reason="not run here"),
            ExpectedTestFailure(test="t::gone", reason="not collected"),
        ]
    )
    r = report([claim("1.0"), claim("2.0")], [build("2.0")], ran_tests=[], baseline=listed)
    assert [e.reason for e in r.stale_baseline] == ["was broken"]
    assert [e.reason for e in r.unevaluated_baseline] == ["not run here", "not collected"]
    assert not r.passed
    assert any("stale baseline entry codex@2.0 bwrap/shell.deny unverified" in line for line in r.summary_lines())


# -- a baseline entry expects one outcome of one vector run (issue 12, item 6) ---------------------------------

NODE = (
    "negative/test_vectors.py::test_each_layer_of_each_harness_enforces_what_it_declares"
    "[ws-ro-shipped-config-claude-code-2.1.197-composed]"
)
CONTROL_FAILS = ExpectedVector(
    harness="claude-code",
    version="2.1.197",
    vector="ws-ro-shipped-config",
    layer="composed",
    outcome="error",
    reason="control fails on 2.1.197 composed",
)


def shipped_config_run(catalogue, outcome, control, version="2.1.197"):
    """The ws-ro-shipped-config composed run of claude-code, as its test handed it over."""
    r = make_record(catalogue, "ro-shell", "composed", outcome, control=control, harness="claude-code", version=version)
    return r.model_copy(update={"vector_id": "ws-ro-shipped-config", "nodeid": NODE})


def test_an_entry_for_a_failed_control_expects_that_run_erroring(catalogue):
    errored = shipped_config_run(catalogue, "error", "failed")
    r = report(
        [],
        [build("2.1.197", harness="claude-code")],
        failed_tests=[NODE],
        recorded=[errored],
        baseline=Baseline(expected_failures=[CONTROL_FAILS]),
    )
    assert [(f.nodeid, f.expected) for f in r.failures] == [(NODE, "control fails on 2.1.197 composed")]
    assert r.passed


def test_an_entry_for_a_failed_control_never_expects_an_escape_of_the_same_test(catalogue):
    # Claude Code 2.1.197 escaped composed where the old `test:NODEID` entry said "expected": the canary passed.
    escaped = shipped_config_run(catalogue, "escaped", "passed")
    drift = Drift(
        vector_id="ws-ro-shipped-config", layer="composed", expected="blocked", observed="escaped", nodeid=NODE
    )
    claims = [claim("2.1.197", state="refuted", drift=(drift,)).model_copy(update={"harness": "claude-code"})]
    r = report(
        claims,
        [build("2.1.197", harness="claude-code")],
        failed_tests=[NODE],
        recorded=[escaped],
        baseline=Baseline(expected_failures=[CONTROL_FAILS]),
    )
    assert [(f.kind, f.key.outcome, f.nodeid, f.expected) for f in r.failures] == [("drift", "escaped", NODE, None)]
    assert r.stale_baseline == [CONTROL_FAILS]  # its control no longer fails, so the entry must go
    assert not r.passed


def test_an_entry_names_the_build_so_the_next_version_failing_alike_is_a_new_failure(catalogue):
    errored = shipped_config_run(catalogue, "error", "failed", version="2.1.332")
    r = report(
        [],
        [build("2.1.332", harness="claude-code")],
        failed_tests=[NODE],
        recorded=[errored],
        baseline=Baseline(expected_failures=[CONTROL_FAILS]),
    )
    assert [f.key.version for f in r.unexpected] == ["2.1.332"] and not r.passed
    assert r.unevaluated_baseline == [CONTROL_FAILS]


def test_an_entry_naming_a_test_never_expects_a_vector_run_that_test_recorded(catalogue):
    node = "negative/test_vectors.py::test_the_sandbox_alone_enforces_what_it_declares[ro-shell]"
    escaped = make_record(catalogue, "ro-shell", "sandbox", "escaped").model_copy(update={"nodeid": node})
    r = report(
        [],
        [],
        failed_tests=[node],
        recorded=[escaped],
        baseline=Baseline(expected_failures=[ExpectedTestFailure(test=node, reason="flaky")]),
    )
    assert [f.key.text() for f in r.unexpected] == ["box@0.8.0 ro-shell/sandbox escaped"]
    assert [e.test for e in r.stale_baseline] == [node] and not r.passed


def test_a_run_whose_newest_record_errored_is_a_failure_keyed_by_its_vector_layer_and_build():
    # Kept in the store, so it counts when the build's evidence is reused and no test ran.
    errored = claim("2.1.197").model_copy(
        update={"harness": "claude-code", "layers": {"composed": {"ws-ro-shipped-config": "error"}}}
    )
    r = report([errored], [build("2.1.197", harness="claude-code", action="reused")])
    assert [(f.id, f.kind) for f in r.failures] == [
        ("claude-code@2.1.197:error:ws-ro-shipped-config/composed", "error")
    ]
    assert not r.passed
    assert report(
        [errored],
        [build("2.1.197", harness="claude-code", action="reused")],
        baseline=Baseline(expected_failures=[CONTROL_FAILS]),
    ).passed


def test_a_listed_run_of_an_evaluated_build_that_now_blocks_is_stale():
    blocked = claim("2.1.197").model_copy(
        update={"harness": "claude-code", "layers": {"composed": {"ws-ro-shipped-config": "blocked"}}}
    )
    r = report(
        [blocked], [build("2.1.197", harness="claude-code")], baseline=Baseline(expected_failures=[CONTROL_FAILS])
    )
    assert r.stale_baseline == [CONTROL_FAILS] and not r.passed


# -- the canary diff reports every layer (issue 12, item 12) ----------------------------------------------------


def upgrade(catalogue, file_tool_alone, baseline=None, harness_declares="unsupported"):
    """toy 1.0 -> 2.0: the sandbox blocks both vectors; the harness alone blocks the Write tool in 1.0 and in 2.0
    does what `file_tool_alone` says. By default the harness declares nothing it enforces, so an escape there
    is what its declarations predict: no drift, and the composed claim stays exact."""
    records = [make_record(catalogue, "ro-shell", "sandbox", "blocked")]
    for version, alone in (("1.0", "blocked"), ("2.0", file_tool_alone)):
        records += [
            make_record(catalogue, "ro-shell", "harness", "escaped", version=version),
            make_record(catalogue, "ro-file-tool", "harness", alone, version=version),
            make_record(catalogue, "ro-shell", "composed", "blocked", version=version),
            make_record(catalogue, "ro-file-tool", "composed", "blocked", version=version),
        ]
    table = reconcile(records, catalogue, declarations(harness_support=harness_declares))
    toy = Build(
        harness="toy",
        version="2.0",
        binary_sha256="sha-a",
        in_tested_range=True,
        action="reverified",
        freshness=Freshness(subject="toy 2.0", state="stale", reason="binary changed"),
    )
    return build_report(table, [toy], suite_revision="test", baseline=baseline, recorded=records)


def test_a_harness_layer_that_weakened_is_a_regression_even_when_the_composed_claim_holds(catalogue):
    r = upgrade(catalogue, file_tool_alone="escaped")
    [target] = r.targets
    # (1.0's harness layer blocked the Write tool beyond its declaration: drift, on the old side only)
    assert [(c.change, c.old, c.new) for c in target.changes] == [("unchanged", "exact+drift", "exact")]
    assert [(c.layer, c.change) for c in target.layer_changes] == [("harness", "regressed"), ("composed", "unchanged")]
    [failure] = r.failures
    assert (failure.id, failure.kind) == ("toy@2.0:regressed:ro-file-tool/harness", "regressed")
    assert failure.key.model_dump(exclude_defaults=True) == {
        "harness": "toy",
        "version": "2.0",
        "vector": "ro-file-tool",
        "layer": "harness",
        "outcome": "escaped",
    }
    assert not r.passed
    lines = r.summary_lines()
    assert "  vs 1.0: 1 regressed" in lines
    assert (
        "    regressed workspace.read_only [box] harness layer: 1/2 blocked, 1 escaped -> 0/2 blocked, 2 escaped "
        "(ro-file-tool blocked -> escaped)"
    ) in lines


def test_a_harness_layer_that_held_leaves_the_upgrade_unchanged_and_passing(catalogue):
    r = upgrade(catalogue, file_tool_alone="blocked", harness_declares="partial")
    assert {c.change for c in r.targets[0].layer_changes} == {"unchanged"}
    assert r.passed and "  vs 1.0: no change" in r.summary_lines()


def test_a_weakened_layer_is_expected_only_by_an_entry_naming_its_vector_layer_version_and_escape(catalogue):
    entry = ExpectedVector(
        harness="toy",
        version="2.0",
        vector="ro-file-tool",
        layer="harness",
        outcome="escaped",
        reason="2.0 dropped its Write-tool guard",
    )
    assert upgrade(catalogue, "escaped", Baseline(expected_failures=[entry])).passed
    for other in ({"layer": "composed"}, {"vector": "ro-shell"}, {"version": "1.0"}, {"outcome": "error"}):
        assert not upgrade(catalogue, "escaped", Baseline(expected_failures=[entry.model_copy(update=other)])).passed


def test_a_build_to_be_reverified_for_which_no_vector_ran_fails_the_canary_and_no_baseline_expects_it():
    r = build_report(
        ClaimsTable(catalogue_digest="d", claims=[claim("2.0")]),
        [build("2.0")],
        suite_revision="r",
        baseline=Baseline(
            expected_failures=[ExpectedUntestedRange(harness="codex", version="2.0", untested_range=True, reason="any")]
        ),
    )
    assert r.ran_nothing_for == ["codex@2.0"]
    assert not r.passed
    assert any(
        line.startswith("FAIL codex@2.0: to be re-verified, and no vector ran for it") for line in r.summary_lines()
    )
    assert r.summary_lines()[-1].startswith("canary: FAILED (")


def test_a_reused_build_needs_no_run_of_its_own():
    r = build_report(
        ClaimsTable(catalogue_digest="d", claims=[claim("2.0")]), [build("2.0", action="reused")], suite_revision="r"
    )
    assert r.ran_nothing_for == [] and r.passed


def test_a_stale_sandbox_that_ran_no_vector_fails_only_in_a_mode_that_runs_the_sandbox_alone():
    stale = Freshness(subject="bwrap 0.11.0", state="stale", reason="another suite revision")
    headless = build_report(
        ClaimsTable(catalogue_digest="d", claims=[]),
        [build("2.0", action="reused")],
        suite_revision="r",
        sandbox=[stale],
    )
    tui = build_report(
        ClaimsTable(catalogue_digest="d", claims=[]),
        [build("2.0", action="reused")],
        suite_revision="r",
        sandbox=[stale],
        sandbox_runs=False,
    )
    assert headless.ran_nothing_for == ["bwrap 0.11.0 (sandbox alone)"] and not headless.passed
    assert tui.ran_nothing_for == [] and tui.passed


def test_a_canary_with_no_build_to_verify_fails_unless_that_is_expected():
    nothing = build_report(ClaimsTable(catalogue_digest="d", claims=[]), [], suite_revision="r")
    allowed = build_report(ClaimsTable(catalogue_digest="d", claims=[]), [], suite_revision="r", allow_empty=True)
    assert nothing.empty and not nothing.passed
    assert "FAIL: no harness build to verify" in "\n".join(nothing.summary_lines())
    assert allowed.passed and "note: no harness build to verify" in "\n".join(allowed.summary_lines())


def test_a_build_reverified_in_part_only_fails_the_canary_and_one_that_ran_nothing_is_named_once():
    partial = build_report(
        ClaimsTable(catalogue_digest="d", claims=[claim("2.0")]),
        [build("2.0")],
        suite_revision="r",
        recorded=[ran(build("2.0"))],
        still_stale=["codex@2.0: 186 of 188 vector runs missing or not observed"],
    )
    assert not partial.passed and partial.ran_nothing_for == []
    assert any(line.startswith("FAIL codex@2.0: 186 of 188 vector runs missing") for line in partial.summary_lines())
    nothing = build_report(
        ClaimsTable(catalogue_digest="d", claims=[claim("2.0")]),
        [build("2.0")],
        suite_revision="r",
        still_stale=["codex@2.0: no evidence recorded"],
    )
    assert nothing.ran_nothing_for == ["codex@2.0"] and nothing.still_stale == []
