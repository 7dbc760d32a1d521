"""The report page in a real browser (Debian's chromium driven by Playwright): matrix, drill-down,
filters and the version diff, as a user clicks through them.

No browser is downloaded: the test uses /usr/bin/chromium (`apt-get install chromium`, done by
.ci/setup). Without it the test skips, except under CI, where a missing browser is a failure.
"""

from __future__ import annotations

import os

import pytest

from agentbox.prove.claims import reconcile
from agentbox.prove.claims_diff import diff_claims
from agentbox.prove.evidence import append
from agentbox.report import generate

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EXCERPT = "proxy log:\nCONNECT evil.example:443 denied <b>not bold</b>"


def _browser_or_skip():
    if not os.path.exists(CHROMIUM) or not _has_playwright():
        why = f"{CHROMIUM} and the playwright package are needed (apt-get install chromium; pip install playwright)"
        if os.environ.get("CI"):
            pytest.fail(f"under CI the browser test must run: {why}")
        pytest.skip(why)


def _has_playwright() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return True


def twist(harness, version, vector, layer, predicted):
    if (harness, version, vector.id, layer) == ("alpha", "1.1.0", "vec-001", "composed"):
        return "escaped", "passed"  # refutes cap01 on alpha 1.1.0 only
    if (harness, version, vector.id, layer) == ("alpha", "1.2.0", "vec-002", "composed"):
        return None  # cap02 unverified on alpha 1.2.0
    if (harness, vector.id, layer) == ("bravo", "vec-000", "harness"):
        return "blocked", "passed"  # drift on cap00 for every bravo version
    return predicted


@pytest.fixture
def records(matrix):
    return [
        r.model_copy(update={"observation": EXCERPT}) if r.vector_id == "vec-005" else r for r in matrix.records(twist)
    ]


@pytest.fixture
def page(tmp_path, matrix, records):
    _browser_or_skip()
    from playwright.sync_api import sync_playwright

    append(tmp_path / "ev", records)
    generate(
        [tmp_path / "ev"],
        tmp_path / "report.html",
        catalogue_dir=matrix.catalogue_dir,
        declarations=matrix.declarations,
    )
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            # Anything but the file itself would be a remote asset: fail loudly rather than fetch it.
            pg.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith("file://")
                    else (errors.append(f"fetched {route.request.url}"), route.abort())
                ),
            )
            pg.goto((tmp_path / "report.html").as_uri())
            yield pg
        finally:
            browser.close()
    assert errors == []


def cell(page, capability, column):
    return page.locator(f'#matrix tr[data-cap="{capability}"] td').nth(column)


def column_index(page, key):
    keys = page.evaluate("JSON.parse(document.getElementById('report-data').textContent).columns.map(c => c.key)")
    return keys.index(key)


def test_a_user_reads_the_matrix_opens_a_cell_filters_and_diffs_two_versions(
    page, records, matrix, tmp_path, record_property
):
    # The matrix: the expected state in each interesting cell, in words (data-state) and symbols.
    refuted = cell(page, "cap01.synthetic", column_index(page, "alpha 1.1.0 box root headless"))
    assert refuted.get_attribute("data-state") == "refuted" and refuted.locator(".sym").inner_text() == "!"
    unverified = cell(page, "cap02.synthetic", column_index(page, "alpha 1.2.0 box root headless"))
    assert unverified.get_attribute("data-state") == "unverified"
    drifting = cell(page, "cap00.synthetic", column_index(page, "bravo 1.0.0 box root headless"))
    assert (drifting.get_attribute("data-state"), drifting.get_attribute("data-drift")) == ("exact", "1")
    assert drifting.locator(".sym").inner_text() == "✓~"
    unsupported = cell(page, "cap03.synthetic", column_index(page, "alpha 1.0.0 box root headless"))
    assert unsupported.get_attribute("data-state") == "unsupported" and "none" in unsupported.inner_text()

    # Drill-down: the refuted cell lists its vectors in every layer, the escape named and decisive.
    assert page.locator("#detail").is_hidden()
    refuted.click()
    detail = page.locator("#detail")
    assert detail.is_visible()
    assert "cap01.synthetic on alpha 1.1.0 / box" in detail.locator("h2").inner_text()
    rows = detail.locator("#detail-vectors tbody tr")
    assert {rows.nth(i).get_attribute("data-vector") for i in range(rows.count())} == {"vec-001", "vec-005"}
    escaped = detail.locator('tr[data-vector="vec-001"][data-layer="composed"]')
    assert "escaped" in escaped.inner_text() and "(decides)" in escaped.inner_text()
    assert "alpha-1.1.0-vec-001-composed" in escaped.inner_text()
    assert detail.locator('tr[data-vector="vec-001"]').first.locator("td").nth(1).inner_text() == "escaped"
    observed = detail.locator('tr[data-vector="vec-005"][data-layer="composed"] td.obs').inner_text()
    assert observed == EXCERPT  # verbatim, the markup shown as text
    shot = tmp_path / "report-drilldown.png"
    page.screenshot(path=str(shot), full_page=True)

    # Filters: one harness's columns only; then only the rows holding a refuted cell.
    page.select_option("#f-harness", "bravo")
    visible = page.locator('#matrix tbody tr[data-cap="cap00.synthetic"] td:visible')
    assert visible.count() == 3 and all(visible.nth(i).get_attribute("data-h") == "bravo" for i in range(3))
    page.select_option("#f-harness", "")
    page.select_option("#f-state", "refuted")
    assert [r.get_attribute("data-cap") for r in page.locator("#matrix tbody tr:visible").all()] == ["cap01.synthetic"]
    page.select_option("#f-capability", "cap00.synthetic")
    assert page.locator("#matrix tbody tr:visible").count() == 0
    page.click("#f-reset")
    assert page.locator("#matrix tbody tr:visible").count() == 4

    # Version diff: an adjacent pair (precomputed) and a distant one (computed in the page), both
    # as agentbox.prove.claims_diff.diff_claims says.
    claims = reconcile(records, matrix.catalogue, matrix.declarations).claims

    def expected(old, new):
        def of(version):
            return [c for c in claims if (c.harness, c.version) == ("alpha", version)]

        return [(c.capability, c.change) for c in diff_claims(of(old), of(new))]

    def shown():
        rows = page.locator("#diff-table tbody tr")
        return [
            (rows.nth(i).get_attribute("data-capability"), rows.nth(i).get_attribute("data-change"))
            for i in range(rows.count())
        ]

    page.select_option("#d-harness", "alpha")
    page.select_option("#d-old", "1.0.0")
    page.select_option("#d-new", "1.1.0")
    assert ("cap01.synthetic", "regressed") in shown() and shown() == expected("1.0.0", "1.1.0")
    page.select_option("#d-new", "1.2.0")
    assert shown() == expected("1.0.0", "1.2.0") and ("cap02.synthetic", "regressed") in shown()
    assert "alpha 1.0.0 → 1.2.0" in page.locator("#diff-summary").inner_text()
    page.select_option("#d-old", "1.1.0")
    assert ("cap01.synthetic", "improved") in shown()

    page.screenshot(path=str(shot), full_page=True)
    record_property("screenshot", str(shot))
    print(f"screenshot: {shot}")
