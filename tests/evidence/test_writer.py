"""The evidence writer, driven through real pytest runs with and without xdist."""

from __future__ import annotations

import json

import pytest

from synthetic import write_catalogue

pytest_plugins = ["pytester"]

# A suite whose tests hand over records the way the negative tests do (`hand_over`): in setup, call and
# teardown, from tests that pass, fail and skip, next to a property that is not evidence.
SUITE = """
import pytest
from agentbox.prove.evidence import EvidenceRecord, RunInfo
from agentbox.testing.evidence_writer import hand_over as give

INFO = RunInfo(harness="toy", version="1.0", binary_sha256="sha", dialect=None, sandbox_backend="bwrap",
               sandbox_version="0.8.0", kernel="6.1", agentbox_version="0.1.0", suite_revision="t",
               catalogue_digest="d")


def hand_over(request, vector_id, outcome="blocked"):
    record = EvidenceRecord(run_info=INFO, vector_id=vector_id, capability="workspace.read_only",
                            layer="composed", outcome=outcome, observation="o", control_outcome="passed")
    give(request.node, record)


@pytest.fixture
def around(request):
    hand_over(request, "from-setup")
    yield
    hand_over(request, "from-teardown")


@pytest.mark.parametrize("n", range(6))
def test_passes(request, n):
    hand_over(request, f"pass-{n}")
    hand_over(request, f"pass-{n}-b", "escaped")


def test_fails(request):
    hand_over(request, "fails")
    assert False


def test_skips(request):
    hand_over(request, "skips", "skipped")
    pytest.skip("no harness")


def test_uses_every_phase(around, request):
    hand_over(request, "from-call")


def test_records_an_unrelated_property(record_property):
    record_property("unrelated", "x")
"""
EXPECTED = sorted(
    [
        *(f"pass-{n}" for n in range(6)),
        *(f"pass-{n}-b" for n in range(6)),
        "fails",
        "skips",
        "from-setup",
        "from-call",
        "from-teardown",
    ]
)


def stored(directory):
    lines = (directory / "evidence.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len({r["id"] for r in records}) == len(records)
    return sorted(r["vector_id"] for r in records)


def test_every_record_a_test_hands_over_is_stored_exactly_once(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("--agentbox-evidence-dir", "ev")
    result.assert_outcomes(passed=8, failed=1, skipped=1)
    assert stored(pytester.path / "ev") == EXPECTED
    result.stdout.fnmatch_lines(["*agentbox evidence*", f"{len(EXPECTED)} record(s) appended to *ev"])


def test_every_record_is_stored_exactly_once_under_two_xdist_workers(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2", "--agentbox-evidence-dir", "ev")
    result.assert_outcomes(passed=8, failed=1, skipped=1)
    assert stored(pytester.path / "ev") == EXPECTED
    result.stdout.fnmatch_lines([f"{len(EXPECTED)} record(s) appended to *ev"])


def test_a_second_run_appends_to_the_store(pytester):
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("--agentbox-evidence-dir", "ev")
    pytester.runpytest("--agentbox-evidence-dir", "ev")
    assert stored(pytester.path / "ev") == sorted(EXPECTED * 2)


def test_a_run_that_records_nothing_prints_no_evidence_section(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest("--agentbox-evidence-dir", "ev")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*agentbox evidence*")
    assert not (pytester.path / "ev").exists()


def test_a_crashed_worker_is_reported_and_what_it_handed_over_is_kept(pytester):
    pytester.makepyfile(
        test_crash=SUITE
        + """

def test_dies(around):
    import os
    os._exit(3)
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--agentbox-evidence-dir", "ev", "-k", "dies or passes"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["CRASHED worker gw*", "CRASHED while running test_crash.py::test_dies: *"])
    assert "from-setup" in stored(pytester.path / "ev")


def test_a_malformed_record_is_reported_and_fails_the_run(pytester):
    pytester.makepyfile(
        test_bad="""
from agentbox.testing.evidence_writer import hand_over

def test_hands_over_garbage(request):
    hand_over(request.node, '{"schema_version": 1, "vector_id": "x"}')
"""
    )
    result = pytester.runpytest("--agentbox-evidence-dir", "ev")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["ERROR test_bad.py::test_hands_over_garbage: malformed evidence record: *"])


def test_a_record_handed_over_as_a_user_property_is_refused_naming_hand_over(pytester):
    # The old transport put the whole record into JUnit XML; a test still using it must not lose
    # its evidence silently.
    pytester.makepyfile(
        test_old="""
def test_uses_the_old_property(request):
    request.node.user_properties.append(("agentbox_evidence", "{}"))
"""
    )
    result = pytester.runpytest("--agentbox-evidence-dir", "ev")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "ERROR test_old.py::test_uses_the_old_property: evidence handed over as a user "
            "property; use agentbox.testing.evidence_writer.hand_over(request.node, record)"
        ]
    )


def test_the_summary_ends_with_the_claims_of_the_versions_this_run_recorded(pytester):
    write_catalogue(pytester.path / "vectors")
    pytester.makepyfile(test_suite=SUITE.replace('"pass-{n}"', '"ro-shell"'))
    result = pytester.runpytest("--agentbox-evidence-dir", "ev", "--agentbox-catalogue", "vectors", "-k", "passes")
    result.stdout.fnmatch_lines(
        [
            "claims:",
            "tested*sandbox*ran as*capability*declared*claim*run*as declared*notes",
            "toy*1.0*bwrap*workspace.read_only*unverified*missing: ro-file-tool*",
        ]
    )
