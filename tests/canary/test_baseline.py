"""The canary baseline file: entries that name what they expect, the pinned schema, and the refused first format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import agentbox
from agentbox.prove.canary_baseline import ExpectedVector, json_schema, load_baseline
from agentbox.errors import InputError

ROOT = Path(agentbox.__file__).parent.parent
SCHEMA_FILE = ROOT / "agentbox" / "schemas" / "canary-baseline.schema.json"
VECTOR_NODE = (
    "negative/test_vectors.py::test_each_layer_of_each_harness_enforces_what_it_declares"
    "[ws-ro-shipped-config-claude-code-2.1.197-composed]"
)


def load(tmp_path, text):
    path = tmp_path / "baseline.yaml"
    path.write_text(text)
    return load_baseline(path)


def test_the_schema_file_is_exported_from_the_baseline_model():
    # Regenerate with: python -m agentbox.prove.canary_baseline --schema > agentbox/schemas/canary-baseline.schema.json
    out = subprocess.run(
        [sys.executable, "-m", "agentbox.prove.canary_baseline", "--schema"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert out == SCHEMA_FILE.read_text()
    assert json.loads(out) == json_schema()


def test_the_shipped_baseline_names_vector_layer_version_and_outcome_of_every_entry():
    baseline = load_baseline(ROOT / "canary" / "baseline.yaml")
    assert baseline.expected_failures and all(isinstance(e, ExpectedVector) for e in baseline.expected_failures)
    shipped_config = next(e for e in baseline.expected_failures if e.vector == "ws-ro-shipped-config")
    assert (shipped_config.harness, shipped_config.version, shipped_config.layer, shipped_config.outcome) == (
        "claude-code",
        "2.1.197",
        "composed",
        "error",
    )


def test_each_kind_of_entry_reads_back(tmp_path):
    baseline = load(
        tmp_path,
        """
schema_version: 2
expected_failures:
  - {harness: hermes, version: 0.13.0, vector: proc-read-host-environ, layer: harness, outcome: blocked, reason: a}
  - {backend: bwrap, version: 0.11.1, vector: net-curl, layer: sandbox, outcome: error, reason: b}
  - {harness: codex, version: 0.147.0, backend: bwrap, capability: shell.deny, outcome: unverified, reason: c}
  - {harness: codex, version: 0.147.0, untested_range: true, reason: d}
  - {test: "conformance/test_smokes.py::test_x[codex-0.147.0]", reason: e}
""",
    )
    assert [e.key().text() for e in baseline.expected_failures] == [
        "hermes@0.13.0 proc-read-host-environ/harness blocked",
        "bwrap@0.11.1 net-curl/sandbox error",
        "codex@0.147.0 bwrap/shell.deny unverified",
        "codex@0.147.0 untested_range",
        "test conformance/test_smokes.py::test_x[codex-0.147.0]",
    ]
    assert baseline.source.endswith("baseline.yaml")


def test_the_first_format_is_refused_naming_the_file_the_entry_and_the_entry_to_write(tmp_path):
    with pytest.raises(InputError) as exc:
        load(
            tmp_path, f'expected_failures:\n  "test:{VECTOR_NODE}": "control fails"\n  "codex@1.0:untested_range": x\n'
        )
    message = str(exc.value)
    assert message.startswith(f"{tmp_path / 'baseline.yaml'}: expected_failures.test:{VECTOR_NODE}: ")
    assert (
        '- {harness: claude-code, version: "2.1.197", vector: ws-ro-shipped-config, layer: composed, '
        'outcome: OUTCOME, reason: "control fails"}'
    ) in message
    assert "escapes included" in message and "1 more entr(ies)" in message


@pytest.mark.parametrize(
    "fid,written",
    [
        (
            "hermes@0.13.0:drift:proc-read-host-environ/harness",
            '{harness: hermes, version: "0.13.0", vector: proc-read-host-environ, layer: harness, outcome: OUTCOME',
        ),
        (
            "codex@0.147.0:regressed:bwrap/shell.deny",
            '{harness: codex, version: "0.147.0", backend: bwrap, capability: shell.deny, outcome: STATE',
        ),
        ("codex@0.147.0:untested_range", '{harness: codex, version: "0.147.0", untested_range: true'),
        ("test:conformance/test_smokes.py::test_x[codex-0.147.0]", '{test: "conformance/test_smokes.py::test_x'),
    ],
)
def test_every_first_format_id_is_translated(tmp_path, fid, written):
    with pytest.raises(InputError, match="format is refused") as exc:
        load(tmp_path, f'expected_failures:\n  "{fid}": why\n')
    assert written in str(exc.value)


def test_a_bare_failure_id_in_the_list_is_the_first_format_too(tmp_path):
    with pytest.raises(InputError, match=r"expected_failures\.0: the `failure id: reason` format is refused"):
        load(tmp_path, "expected_failures:\n  - codex@1.0:untested_range\n")


def test_a_test_entry_that_names_a_vector_run_is_refused_with_the_vector_entry_to_write(tmp_path):
    with pytest.raises(
        InputError,
        match=r"expected_failures\.0: this test runs vector ws-ro-shipped-config: .*"
        r"layer: composed, outcome: OUTCOME",
    ):
        load(tmp_path, f"expected_failures:\n  - {{test: '{VECTOR_NODE}', reason: r}}\n")


@pytest.mark.parametrize(
    "entry,problem",
    [
        (
            "{harness: codex, version: '1.0', vector: v, layer: composed, outcome: refused, reason: r}",
            r"expected_failures\.0\.outcome: Input should be 'blocked', 'escaped' or 'error'",
        ),
        (
            "{harness: codex, version: '1.0', vector: v, layer: composed, outcome: error}",
            r"expected_failures\.0\.reason: Field required",
        ),
        (
            "{harness: codex, version: 2.10, vector: v, layer: composed, outcome: error, reason: r}",
            r"expected_failures\.0\.version: quote the version",
        ),
        (
            "{harness: codex, backend: bwrap, version: '1.0', vector: v, layer: sandbox, outcome: error, reason: r}",
            "name either harness .* or backend",
        ),
        (
            "{backend: bwrap, version: '1.0', vector: v, layer: composed, outcome: error, reason: r}",
            "a sandbox-alone run .* is in the sandbox layer",
        ),
    ],
)
def test_an_entry_that_does_not_say_what_it_expects_is_refused_naming_the_field(tmp_path, entry, problem):
    with pytest.raises(InputError, match=problem):
        load(tmp_path, f"expected_failures:\n  - {entry}\n")


def test_an_entry_listed_twice_is_refused(tmp_path):
    entry = "{harness: codex, version: '1.0', vector: v, layer: composed, outcome: error, reason: r}"
    with pytest.raises(InputError, match=r"expected_failures\.1 \(codex@1\.0 v/composed error\) is listed twice"):
        load(tmp_path, f"expected_failures:\n  - {entry}\n  - {entry}\n")
