"""pytest imports the test files of `tests/` and `canary/` as top-level modules (no packages), so two files of one
name anywhere in the README's test command stop the whole run at collection ("import file mismatch"). That command
collects `testpaths` (`tests`, this checkout's entry points to the packaged suite `conformance` and `negative`,
`canary`)."""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTPATHS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]


def test_the_readmes_test_command_collects_the_package_tests_the_suite_and_the_canary():
    assert set(TESTPATHS) == {"tests", "conformance", "negative", "canary"}
    assert all((ROOT / folder).is_dir() for folder in TESTPATHS)


def test_every_test_file_of_the_readmes_test_command_has_a_name_of_its_own():
    names = Counter(p.name for folder in TESTPATHS for p in (ROOT / folder).rglob("test_*.py"))
    assert [name for name, n in names.items() if n > 1] == []
