"""Other reporters fed with the evidence: pytest-html and allure-pytest.

Each is registered by the plugin only when its package is installed and its report is asked for
(`--html`, `--alluredir`), so neither is a dependency. JUnit XML needs nothing here: `hand_over`
already puts each record's small facts into the test's user properties, which junitxml writes as
`<property>` elements.

- pytest-html runs on the controller: the claims table goes into the report's summary section, and
  each test that handed evidence over links its records (embedded JSON) and the store they went to.
- allure-pytest writes its results from the process that ran the test (an xdist worker too): each
  test gets the labels harness, version, capability, layer and vector of its records, the records
  as JSON attachments, and the scripted model's transcript when the test used one.
"""

from __future__ import annotations

import html
import json
from typing import Any

import pytest

from agentbox.testing.evidence_writer import carried, facts, handed_over, writer_key

__all__ = ["register", "HtmlEvidence", "AllureEvidence"]

LABELS = ("harness", "version", "capability", "layer", "vector")


def register(config: pytest.Config) -> None:
    """Register the integrations this run can use (the plugin calls this from pytest_configure)."""
    controller = not hasattr(config, "workerinput")
    if controller and config.pluginmanager.hasplugin("html") and config.getoption("htmlpath", None):
        config.pluginmanager.register(HtmlEvidence(config), "agentbox-html")
    if getattr(config.option, "allure_report_dir", None):
        try:
            import allure  # noqa: F401
        except ImportError:
            return
        config.pluginmanager.register(AllureEvidence(), "agentbox-allure")


class HtmlEvidence:
    def __init__(self, config: pytest.Config):
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The teardown report carries every record of the test; pytest-html renders the test's row
        # when it arrives, with the extras of all its reports.
        records = carried(report) if report.when == "teardown" else []
        if not records:
            return
        from pytest_html import extras

        added = []
        for text in records:
            known = dict(facts(text))
            name = f"evidence {known.get('record_id', '?')[:12]} {known.get('layer', '')} {known.get('outcome', '')}"
            try:
                added.append(extras.json(json.loads(text), name=name.strip()))
            except ValueError:
                added.append(extras.text(text, name=name.strip()))
        writer = self.config.stash.get(writer_key, None)
        if writer is not None:
            added.append(extras.url(writer.directory.as_uri(), name="evidence store"))
        # pytest-html reads `extras` from the report: an attribute pytest's TestReport does not declare
        report.extras = [*getattr(report, "extras", []), *added]  # type: ignore[attr-defined]

    def pytest_html_results_summary(self, prefix: list, summary: list, postfix: list, session: Any) -> None:
        writer = self.config.stash.get(writer_key, None)
        lines = writer.claims_lines() if writer is not None else []
        if lines[:1] == ["claims:"]:  # the heading says it
            lines = lines[1:]
        if lines:
            summary.append(
                f'<h2>Agent-Box claims</h2><pre class="agentbox-claims">{html.escape(chr(10).join(lines))}</pre>'
            )


class AllureEvidence:
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        report = yield
        # At teardown every record has been handed over, and allure's result for the test is open
        # until pytest_runtest_logfinish.
        if report.when == "teardown":
            self._annotate(item)
        return report

    @staticmethod
    def _annotate(item: pytest.Item) -> None:
        records = handed_over(item)
        if not records:
            return
        import allure

        labels: dict[tuple[str, str], None] = {}
        for text in records:
            known = dict(facts(text))
            labels.update({(k, known[k]): None for k in LABELS if known.get(k)})
            allure.attach(
                text, name=f"evidence {known.get('record_id', '?')}", attachment_type=allure.attachment_type.JSON
            )
        for name, value in labels:
            allure.dynamic.label(name, value)
        model = (getattr(item, "funcargs", None) or {}).get("scripted_model")
        if model is not None:
            allure.attach(
                json.dumps(model.transcript.as_json(), indent=2, default=str),
                name="scripted model transcript",
                attachment_type=allure.attachment_type.JSON,
            )
