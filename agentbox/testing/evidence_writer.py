"""The evidence writer: the controller appends every record a test reports, as its reports arrive.

Tests hand records over as `("agentbox_evidence", record_json)` in `request.node.user_properties`.
Those travel inside the test reports, which pytest-xdist serialises from its workers to the
controller, so only the controller writes (the plugin registers this object there alone, as
junitxml does) and no worker ever touches the store. A test's setup, call and teardown reports each
carry every property added so far, so a record is written once, keyed by its id.

Workers that die are reported in the terminal summary with the test they were running: the
records that test had not yet handed over are lost, and the summary says where to look.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ..evidence import SCHEMA_VERSION, EvidenceRecord, append

__all__ = ["PROPERTY", "EvidenceWriter", "writer_key"]

PROPERTY = "agentbox_evidence"


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
        fresh = []
        for name, value in report.user_properties:
            if name != PROPERTY:
                continue
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
        from ..claims import reconcile
        from ..errors import AgentBoxError
        from ..evidence import read_records
        from ..vectors import load_catalogue

        if not any(self.catalogue_dir.glob("*.yaml")):
            return [f"claims: no vector catalogue in {self.catalogue_dir}"]
        try:
            table = reconcile(read_records(self.directory), load_catalogue(self.catalogue_dir))
        except AgentBoxError as exc:
            return [f"claims: {exc}"]
        table = table.only(self.written)
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
