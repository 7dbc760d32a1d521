"""The evidence writer: the controller appends every record a test reports, as its reports arrive.

Tests hand records over with `hand_over(request.node, record)`. The records travel as JSON in the
test's reports (`report.agentbox_evidence`, set by the plugin's `pytest_runtest_makereport`), which
pytest-xdist serialises from its workers to the controller with the rest of the report's attributes,
so only the controller writes (the plugin registers this object there alone, as junitxml does) and
no worker ever touches the store. A test's setup, call and teardown reports each carry every record
handed over so far, so a record is written once, keyed by its id. Only the record's small facts
(harness, version, capability, layer, vector, outcome, record_id) become `user_properties`, and so
JUnit XML properties; the record itself stays out of them.

Workers that die are reported in the terminal summary with the test they were running: the
records that test had not yet handed over are lost, and the summary says where to look.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentbox.prove.evidence import SCHEMA_VERSION, EvidenceRecord, append

__all__ = ["ATTRIBUTE", "EvidenceWriter", "attach", "carried", "facts", "hand_over", "handed_over", "writer_key"]

# The report attribute that carries a test's records as JSON strings; records once travelled in a
# user property of this name, which put them into JUnit XML: the writer refuses that now.
ATTRIBUTE = "agentbox_evidence"
_handed_key = pytest.StashKey[list[str]]()


def hand_over(node: pytest.Item, record: EvidenceRecord | dict | str) -> None:
    """Give a record to the controller's writer with this test's reports; call it from the test (or a
    fixture) in any phase. The record is checked by the writer, which reports a malformed one."""
    if isinstance(record, EvidenceRecord):
        text = record.model_dump_json()
    else:
        text = record if isinstance(record, str) else json.dumps(record, default=str)
    node.stash.setdefault(_handed_key, []).append(text)
    node.user_properties.extend(facts(record))


def handed_over(item: pytest.Item) -> list[str]:
    """The records handed over so far in this process, as JSON, oldest first."""
    return list(item.stash.get(_handed_key, ()))


def attach(item: pytest.Item, report: pytest.TestReport) -> None:
    """Put the records handed over so far on the report (the plugin calls this for every phase)."""
    handed = handed_over(item)
    if handed:
        setattr(report, ATTRIBUTE, handed)


def carried(report: pytest.TestReport) -> list[str]:
    """The records a report carries (on the controller too), as JSON, oldest first."""
    return list(getattr(report, ATTRIBUTE, None) or ())


def facts(record: EvidenceRecord | dict | str) -> list[tuple[str, str]]:
    """A record's small facts, the properties a JUnit testcase gets ("" for none); [] if malformed."""
    try:
        r = _parse(record)
    except (ValueError, ValidationError):
        return []  # the writer reports it
    return [
        ("harness", r.run_info.harness or ""),
        ("version", r.run_info.version or ""),
        ("capability", r.capability),
        ("layer", r.layer),
        ("vector", r.vector_id),
        ("outcome", r.outcome),
        ("record_id", r.id),
    ]


def _parse(value: Any) -> EvidenceRecord:
    # JSON is the contract (it survives xdist's serialisation); a model or dict is accepted too, for
    # in-process runs.
    if isinstance(value, EvidenceRecord):
        record = value
    elif isinstance(value, dict):
        record = EvidenceRecord.model_validate(value)
    else:
        record = EvidenceRecord.model_validate_json(value)
    if record.schema_version != SCHEMA_VERSION:
        raise ValueError(f"schema_version {record.schema_version} is not {SCHEMA_VERSION}")
    return record


class EvidenceWriter:
    def __init__(self, directory: Path, catalogue_dir: Path):
        self.directory = directory
        self.catalogue_dir = catalogue_dir
        self.written: list[EvidenceRecord] = []
        self.problems: list[str] = []
        self.crashed_tests: list[str] = []
        self.crashed_workers: list[str] = []
        self._seen: set[str] = set()
        self._bad: set[tuple[str, str]] = set()

    # -- hooks ------------------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if any(name == ATTRIBUTE for name, _ in report.user_properties):
            self._problem(
                report.nodeid,
                ATTRIBUTE,
                "evidence handed over as a user property; use "
                "agentbox.testing.evidence_writer.hand_over(request.node, record)",
            )
        fresh = []
        for value in carried(report):
            try:
                record = _parse(value)
            except (ValueError, ValidationError) as exc:
                self._problem(report.nodeid, value, f"malformed evidence record: {_first_line(exc)}")
                continue
            if record.id not in self._seen:
                self._seen.add(record.id)
                fresh.append(record)
        if not fresh:
            return
        try:
            append(self.directory, fresh)
        except OSError as exc:
            # Losing evidence must fail the run, but an INTERNALERROR would lose the rest as well.
            self._problem(report.nodeid, "", f"cannot append {len(fresh)} record(s) to {self.directory}: {exc}")
            return
        self.written += fresh

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        self.crashed_tests.append(crashitem)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        if error is not None:
            self.crashed_workers.append(f"{getattr(getattr(node, 'gateway', None), 'id', node)}: {error}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.problems and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not (self.written or self.problems or self.crashed_tests or self.crashed_workers):
            return
        write = terminalreporter.write_line
        terminalreporter.write_sep("-", "agentbox evidence")
        write(f"{len(self.written)} record(s) appended to {self.directory}")
        for worker in self.crashed_workers:
            write(f"CRASHED worker {worker}")
        for nodeid in self.crashed_tests:
            write(f"CRASHED while running {nodeid}: records it had not yet reported are lost")
        for problem in self.problems:
            write(f"ERROR {problem}")
        for line in self.claims_lines():
            write(line)

    # -- claims -----------------------------------------------------------------------------------
    def claims_lines(self) -> list[str]:
        """The claims table for the harness and backend versions this run recorded."""
        if not self.written:
            return []
        from agentbox.prove.claims import NO_HARNESS, reconcile
        from agentbox.errors import AgentBoxError
        from agentbox.prove.evidence import read_records
        from agentbox.prove.vectors import load_catalogue

        if not any(self.catalogue_dir.glob("*.yaml")):
            return [f"claims: no vector catalogue in {self.catalogue_dir}"]
        try:
            # a record made up for tests or benchmarks is never a claim's evidence, here as at the gate
            table = reconcile(
                [r for r in read_records(self.directory) if r.run_info.provenance != "synthetic"],
                load_catalogue(self.catalogue_dir),
            )
        except AgentBoxError as exc:
            return [f"claims: {exc}"]
        table = table.only(self.written)
        # a run of some capabilities in one mode (`agent-box prove`, `--agentbox-capability`) shows those rows only
        # (a sandbox-alone row, the ACP endpoint's included, is the same in every mode)
        capabilities, modes = {r.capability for r in self.written}, {r.run_info.mode for r in self.written}
        table = table.model_copy(
            update={
                "claims": [
                    c
                    for c in table.claims
                    if c.capability in capabilities and (c.mode in modes or c.harness == NO_HARNESS)
                ]
            }
        )
        if not table.claims:
            return ["claims: no capability of this catalogue has records from this run"]
        return ["claims:", *table.lines()]

    def _problem(self, nodeid: str, value: Any, message: str) -> None:
        key = (nodeid, json.dumps(value, default=str) if not isinstance(value, str) else value)
        if key not in self._bad:  # setup, call and teardown reports repeat the same property
            self._bad.add(key)
            self.problems.append(f"{nodeid}: {message}")


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc']) or '(record)'}: {err['msg']}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


writer_key = pytest.StashKey[EvidenceWriter]()
