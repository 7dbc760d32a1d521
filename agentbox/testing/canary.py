"""`pytest --agentbox-canary`: re-verify the harness builds whose evidence is stale, reuse the rest,
and judge what changed since the previous version.

The controller decides once, before any worker starts, which builds are re-verified; the decision
travels to pytest-xdist workers in `workerinput`, because workers that looked at the store
themselves could disagree (the controller appends evidence while they collect) and xdist refuses
workers that collect different tests. Only the controller reads the outcome and writes the report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentbox.prove.evidence import EvidenceRecord
from agentbox.testing.evidence_writer import carried
from agentbox.testing.session import AgentBoxSession

if TYPE_CHECKING:
    from agentbox.prove.canary import CanaryReport

__all__ = ["CanaryPlugin", "WORKERINPUT"]

WORKERINPUT = "agentbox_canary"
# What the canary runs: the conformance suites. Unit tests say nothing about an installed harness.
SUITE_MARKERS = ("golden", "smoke", "negative")


class CanaryPlugin:
    def __init__(self, config: pytest.Config, session: AgentBoxSession):
        self.config, self.session = config, session
        self.failed: set[str] = set()
        self.ran: set[str] = set()
        self.recorded: dict[str, EvidenceRecord] = {}  # record id -> a record this run's tests handed over
        self.report: CanaryReport | None = None
        self.report_error: str | None = None
        if len(session.modes) > 1:  # what is stale, and what a version's claims are diffed against, is per mode
            raise pytest.UsageError(
                f"--agentbox-canary re-verifies one mode at a time, and this run drives {', '.join(session.modes)}: "
                "give one --agentbox-mode (a run per mode)"
            )
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None:
            self.decision = json.loads(workerinput[WORKERINPUT])
            self.builds, self.sandbox = [], []
        else:
            self.baseline = self._load_baseline()
            self.builds, self.sandbox = self._decide()
            self.decision = {
                "reused": [f"{b.harness}-{b.version}" for b in self.builds if b.action == "reused"],
                "sandbox_current": bool(self.sandbox) and all(s.current for s in self.sandbox),
            }

    # -- deciding (controller) --------------------------------------------------------------------
    def _load_baseline(self):
        path = self.config.getoption("--agentbox-baseline")
        if not path:
            return None
        from agentbox.prove.canary_baseline import load_baseline
        from agentbox.errors import InputError

        try:
            return load_baseline(path)
        except InputError as exc:
            raise pytest.UsageError(f"--agentbox-baseline: {exc}") from None

    def _decide(self):
        from agentbox.prove.canary import Build
        from agentbox.errors import AgentBoxError
        from agentbox.prove.freshness import freshness, sandbox_freshness
        from agentbox.sandbox import DEFAULT_BACKEND
        from agentbox.testing.negative import sandbox_version, suite_revision

        here = self._here()

        catalogue = self.session.catalogue()
        try:
            records = self._records()
        except AgentBoxError as exc:
            raise pytest.UsageError(f"--agentbox-canary: {exc}") from None
        revision = suite_revision()
        builds = []
        for target in self.session.targets():
            if target.binary is None:
                continue  # reported as a skip (or an error under --agentbox-require-harnesses) by the tests
            adapter = target.adapter()
            try:
                probe = adapter.probe(target.binary)
            except AgentBoxError as exc:
                raise pytest.UsageError(f"--agentbox-canary: cannot probe {target.id}: {exc}") from None
            fresh = freshness(
                records,
                catalogue,
                revision,
                harness=target.name,
                version=target.version,
                binary_sha256=probe.sha256,
                here=self._driving(here, target.name),
            )
            builds.append(
                Build(
                    harness=target.name,
                    version=target.version,
                    binary_sha256=probe.sha256,
                    in_tested_range=adapter.declarations.in_tested_range(target.version),
                    freshness=fresh,
                    action="reused" if fresh.current else "reverified",
                )
            )
        sandbox = [
            sandbox_freshness(
                records, catalogue, revision, backend=DEFAULT_BACKEND, version=sandbox_version(), here=here
            )
        ]
        return builds, sandbox

    def _here(self):
        """What this run's records are taken under: only records taken so speak for it (`freshness.Here`)."""
        import platform

        from agentbox.prove.evidence import privilege_level
        from agentbox.prove.freshness import Here

        return Here(
            provenance="observed", mode=self.session.mode, privilege=privilege_level(), kernel=platform.release()
        )

    def _driving(self, here, harness: str):
        """`here` for one harness: in acp mode, with the ACP adapter build the suite drives it through (the newest
        installed, as `acp_drive` picks it), whose records alone speak for this run."""
        from dataclasses import replace

        from agentbox.harnesses.acp import AcpUnavailable, adapter_build
        from agentbox.prove.claims import through_adapter

        if not through_adapter(harness, self.session.mode):
            return here
        try:
            built = adapter_build(harness)
        except AcpUnavailable:
            return here  # not installed: its tests skip, saying so, and re-verify nothing either way
        return replace(here, adapter=built[0] if built is not None else None)

    def _still_stale(self, records: list) -> list[str]:
        """What this run set out to re-verify and is still not current after it: a -k, -m, --deselect or
        --agentbox-capability that left vectors out proved part of it only."""
        from agentbox.prove.freshness import freshness, sandbox_freshness
        from agentbox.sandbox import DEFAULT_BACKEND
        from agentbox.testing.negative import sandbox_version, suite_revision

        catalogue, revision, here = self.session.catalogue(), suite_revision(), self._here()
        out = []
        for b in self.builds:
            if b.action == "reverified":
                after = freshness(
                    records,
                    catalogue,
                    revision,
                    harness=b.harness,
                    version=b.version,
                    binary_sha256=b.binary_sha256,
                    here=self._driving(here, b.harness),
                )
                if not after.current:
                    out.append(f"{b.key}: {after.reason}")
        if self.session.mode == "headless":
            for s in self.sandbox:
                if not s.current:
                    after = sandbox_freshness(
                        records, catalogue, revision, backend=DEFAULT_BACKEND, version=sandbox_version(), here=here
                    )
                    if not after.current:
                        out.append(f"{after.subject} (sandbox alone): {after.reason}")
        return out

    def _records(self) -> list:
        from agentbox.prove.evidence import read_records

        store = self.session.evidence_dir
        return list(read_records(store)) if store.exists() else []

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT] = json.dumps(self.decision)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        lines = [
            f"agentbox canary: {b.harness} {b.version}: "
            + ("reusing current evidence" if b.action == "reused" else f"re-verifying ({b.freshness.reason})")
            for b in self.builds
        ]
        lines += [
            f"agentbox canary: {s.subject} (sandbox alone): "
            + ("reusing current evidence" if s.current else f"re-verifying ({s.reason})")
            for s in self.sandbox
        ]
        return [*lines, *self._catalogue_note()]

    def _catalogue_note(self) -> list[str]:
        """A catalogue other than the package's is said: its claims are not the ones the launch gate reads."""
        from agentbox.prove.claims import default_catalogue_dir

        if self.session.catalogue_dir.resolve() == default_catalogue_dir().resolve():
            return []
        digest = self.session.catalogue().digest[:12]
        return [
            f"agentbox canary: catalogue {self.session.catalogue_dir} (digest {digest}), not the package's: "
            "what it verifies is not what the launch gate reads"
        ]

    # -- selecting (controller and workers alike) -------------------------------------------------
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        reused = set(self.decision["reused"])
        keep, drop = [], []
        for item in items:
            callspec = getattr(item, "callspec", None)
            target = callspec.params.get("harness") if callspec else None
            if not any(item.get_closest_marker(m) for m in SUITE_MARKERS):
                drop.append(item)
            elif target is not None and getattr(target, "id", None) in reused:
                drop.append(item)
            elif target is None and item.get_closest_marker("negative") and self.decision["sandbox_current"]:
                drop.append(item)
            else:
                keep.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    # -- judging (controller) ---------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed.add(report.nodeid)
        elif report.when == "call" and report.passed:
            self.ran.add(report.nodeid)
        # What each test observed: it decides which baseline entry may expect the test's failure, and
        # which entries this run could judge at all.
        for value in carried(report):
            try:
                record = EvidenceRecord.model_validate_json(value)
            except ValueError:
                continue  # the evidence writer reports a malformed record
            self.recorded[record.id] = record

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput") or self.config.option.collectonly:
            return
        from agentbox.prove.canary import build_report
        from agentbox.prove.claims import reconcile
        from agentbox.errors import AgentBoxError
        from agentbox.testing.negative import suite_revision

        passed = self.ran - self.failed
        try:
            records = self._records()
            table = reconcile(records, self.session.catalogue())
            self.report = build_report(
                table,
                self.builds,
                suite_revision=suite_revision(),
                sandbox=self.sandbox,
                failed_tests=self.failed,
                ran_tests=passed,
                recorded=self.recorded.values(),
                baseline=self.baseline,
                allow_empty=self.config.getoption("--agentbox-canary-allow-empty"),
                sandbox_runs=self.session.mode == "headless",
                still_stale=self._still_stale(records),
            )
            self._write(self.report)
        except (AgentBoxError, OSError) as exc:
            self.report_error = str(exc)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        # The canary is the arbiter of its own run: baselined failures pass, stale entries fail. Lost
        # evidence is never baselined away.
        from agentbox.testing.evidence_writer import writer_key

        writer = self.config.stash.get(writer_key, None)
        if writer is not None and (writer.problems or writer.crashed_tests):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.TESTS_FAILED,
            pytest.ExitCode.NO_TESTS_COLLECTED,
        ):
            session.exitstatus = pytest.ExitCode.OK if self.report.passed else pytest.ExitCode.TESTS_FAILED

    @property
    def report_path(self) -> Path:
        opt = self.config.getoption("--agentbox-canary-report")
        return Path(opt).absolute() if opt else self.session.evidence_dir / "canary-report.json"

    def _write(self, report) -> None:
        from agentbox.core.atomic import write_files

        write_files({self.report_path: report.model_dump_json(indent=2) + "\n"}, make_dirs=True)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        terminalreporter.write_sep("-", "agentbox canary")
        if self.report_error:
            terminalreporter.write_line(f"ERROR canary report: {self.report_error}")
            return
        if self.report is None:
            return
        for line in [*self._catalogue_note(), *self.report.summary_lines()]:
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"report: {self.report_path}")
