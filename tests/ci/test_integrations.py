"""JUnit XML, pytest-html and allure-pytest, fed by an inner pytest run that hands over synthetic evidence.

Each run is repeated without xdist and under two workers: records travel from the workers to the
controller on the test reports, and allure writes from the workers.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# Two composed records of codex 0.171.0 per test, as the negative suite hands them over, from a test
# that talked to the scripted model (so it has a transcript), and one test that hands nothing over.
SUITE = """
import urllib.request

import pytest

from agentbox.prove.claims import default_catalogue_dir
from agentbox.testing.evidence_writer import hand_over
from synthetic_evidence import posing_as_observed, proving_records
from agentbox.prove.vectors import load_catalogue

VECTORS = [r.vector_id for r in proving_records(load_catalogue(default_catalogue_dir()), "codex", "0.171.0",
                                                 "0" * 64, ["workspace.read_only"])][:3]


@pytest.mark.parametrize("vector", VECTORS)
def test_vector(request, scripted_model, vector):
    urllib.request.urlopen(scripted_model.base_url + "/v1/models", timeout=10).read()
    # a stand-in for a vector run: the claims table counts observed records only
    records = posing_as_observed(proving_records(load_catalogue(default_catalogue_dir()), "codex", "0.171.0",
                                                 "0" * 64, ["workspace.read_only"]))
    hand_over(request.node, next(r for r in records if r.vector_id == vector))


def test_plain():
    pass
"""

MODES = [pytest.param([], id="in-process"), pytest.param(["-p", "xdist", "-n", "2"], id="xdist")]


@pytest.fixture(params=MODES)
def run(request, pytester, monkeypatch):
    """Run the suite once with JUnit XML, HTML and allure output; returns the pytester path."""
    pytester.makepyfile(test_suite=SUITE)
    # the inner run imports the synthetic records' builder from the tests' own support folder, as this one does
    support = str(Path(__file__).resolve().parents[1] / "support")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (support, os.environ.get("PYTHONPATH")))))
    result = pytester.runpytest_subprocess(
        *request.param,
        "--agentbox-evidence-dir",
        "ev",
        "--junitxml",
        "junit.xml",
        "--html",
        "report.html",
        "--alluredir",
        "allure",
    )
    result.assert_outcomes(passed=4)
    return pytester.path


def stored(path) -> dict[str, dict]:
    lines = (path / "ev" / "evidence.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_each_junit_testcase_has_the_small_facts_of_its_record_and_not_the_record(run):
    records = stored(run)
    assert len(records) == 3
    cases = {c.get("name"): c for c in ET.parse(run / "junit.xml").getroot().iter("testcase")}
    assert len(cases) == 4
    seen = set()
    for name, case in cases.items():
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if name == "test_plain":
            assert props == {}
            continue
        assert set(props) == {"harness", "version", "capability", "layer", "vector", "outcome", "record_id"}
        record = records[props["record_id"]]
        assert props == {
            "harness": "codex",
            "version": "0.171.0",
            "capability": "workspace.read_only",
            "layer": "composed",
            "vector": record["vector_id"],
            "outcome": "blocked",
            "record_id": record["id"],
        }
        assert name == f"test_vector[{record['vector_id']}]"
        seen.add(record["id"])
    assert seen == set(records)
    assert "agentbox_evidence" not in (run / "junit.xml").read_text()


def _html_data(path) -> dict:
    text = (path / "report.html").read_text()
    blob = re.search(r'data-jsonblob="([^"]*)"', text).group(1)
    import html

    return json.loads(html.unescape(blob))


def test_the_html_summary_has_the_claims_table_and_each_row_links_its_evidence(run):
    text = (run / "report.html").read_text()
    claims = re.search(r'<h2>Agent-Box claims</h2><pre class="agentbox-claims">(.*?)</pre>', text, re.S)
    assert claims, "no claims table in the HTML summary"
    table = claims.group(1)
    assert table.startswith("tested ") and re.search(
        r"codex\s+0\.171\.0\s+bwrap\s+\S+\s+\S+\s+workspace\.read_only", table
    )
    tests = _html_data(run)["tests"]
    records = stored(run)
    for nodeid, rows in tests.items():
        extras = [e for row in rows for e in row["extras"]]
        if nodeid.endswith("test_plain"):
            assert extras == []
            continue
        evidence = [e for e in extras if e["name"].startswith("evidence ") and e["format_type"] == "json"]
        assert len(evidence) == 1
        linked = json.loads((run / evidence[0]["content"]).read_text())
        assert linked == records[linked["id"]] and nodeid.endswith(f"[{linked['vector_id']}]")
        assert evidence[0]["name"] == f"evidence {linked['id'][:12]} composed blocked"
        store = [e for e in extras if e["name"] == "evidence store"]
        assert store[0]["content"] == (run / "ev").as_uri()


def test_each_allure_result_has_the_labels_the_record_and_the_transcript(run):
    results = [json.loads(p.read_text()) for p in (run / "allure").glob("*-result.json")]
    assert len(results) == 4
    records = stored(run)
    for result in results:
        labels = {(label["name"], label["value"]) for label in result["labels"]}
        attachments = {a["name"]: run / "allure" / a["source"] for a in result.get("attachments", [])}
        if result["name"] == "test_plain":
            assert not {n for n, _ in labels} & {"harness", "layer", "vector"} and attachments == {}
            continue
        (record_name,) = [n for n in attachments if n.startswith("evidence ")]
        record = json.loads(attachments[record_name].read_text())
        assert record == records[record_name.removeprefix("evidence ")]
        assert {
            ("harness", "codex"),
            ("version", "0.171.0"),
            ("capability", "workspace.read_only"),
            ("layer", "composed"),
            ("vector", record["vector_id"]),
        } <= labels
        transcript = json.loads(attachments["scripted model transcript"].read_text())
        assert [r["path"] for r in transcript] == ["/v1/models"]
        assert "request" not in transcript[0]


def test_the_integrations_stay_unregistered_unless_their_report_is_asked_for(pytester):
    plain = pytester.parseconfigure()
    assert plain.pluginmanager.get_plugin("agentbox-html") is None
    assert plain.pluginmanager.get_plugin("agentbox-allure") is None
    asked = pytester.parseconfigure("--html", "r.html", "--alluredir", "a")
    assert asked.pluginmanager.get_plugin("agentbox-html") is not None
    assert asked.pluginmanager.get_plugin("agentbox-allure") is not None
