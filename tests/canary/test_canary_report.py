"""The canary's verdict: claim diffs against the previous version, failures, and the baseline."""

from __future__ import annotations

import pytest

from agentbox.canary import Baseline, Build, build_report, load_baseline
from agentbox.claims import Claim, ClaimsTable, Drift
from agentbox.errors import InputError
from agentbox.freshness import Freshness


def claim(version, capability="shell.deny", state="exact", declared="exact", drift=()):
    return Claim(harness="codex", version=version, backend="bwrap", capability=capability, declared=declared,
                 claim=state, blocked=1, total=1, drift=drift)


def build(version, in_range=True, action="reverified"):
    return Build(harness="codex", version=version, binary_sha256="s", in_tested_range=in_range, action=action,
                 freshness=Freshness(subject=f"codex {version}", state="missing", reason="no evidence recorded"))


def report(claims, builds, **kw):
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
        ("shell.deny", "improved"), ("mcp.allowlist", "removed"), ("host_home.hidden", "new")}
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


def test_a_failing_test_fails_the_canary_unless_the_baseline_lists_it():
    assert not report([], [], failed_tests=["t::a"]).passed
    listed = Baseline(expected_failures={"test:t::a": "upstream bug"})
    r = report([], [], failed_tests=["t::a"], baseline=listed)
    assert r.passed and r.failures[0].expected == "upstream bug"


def test_a_baselined_drift_may_be_listed_by_its_test_id():
    d = Drift(vector_id="v", layer="harness", expected="blocked", observed="escaped", nodeid="n::t")
    listed = Baseline(expected_failures={"test:n::t": "known"})
    assert report([claim("2.0", drift=(d,))], [build("2.0")], failed_tests=["n::t"], baseline=listed).passed


def test_a_baseline_entry_that_no_longer_fails_is_stale_and_fails_the_canary():
    listed = Baseline(expected_failures={"codex@2.0:regressed:bwrap/shell.deny": "was broken",
                                         "codex@3.0:untested_range": "not run here",
                                         "test:t::gone": "not collected"})
    r = report([claim("1.0"), claim("2.0")], [build("2.0")], ran_tests=[], baseline=listed)
    assert r.stale_baseline == {"codex@2.0:regressed:bwrap/shell.deny": "was broken"}
    assert set(r.unevaluated_baseline) == {"codex@3.0:untested_range", "test:t::gone"}
    assert not r.passed
    assert any("stale baseline entry" in line for line in r.summary_lines())


def test_a_baseline_file_names_the_file_and_field_it_cannot_accept(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("expected_failures:\n  nonsense: why\n")
    with pytest.raises(InputError, match=r"b\.yaml.*expected_failures\.nonsense"):
        load_baseline(path)
    path.write_text("expected_failure: {}\n")
    with pytest.raises(InputError, match="expected_failure"):
        load_baseline(path)
    path.write_text("expected_failures: {'test:a::b': why}\n")
    assert load_baseline(path).expected_failures == {"test:a::b": "why"}
