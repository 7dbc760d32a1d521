"""pytest imports the suites' test files as top-level modules (no packages), so two files of one name anywhere
in the README's test command stop the whole run at collection ("import file mismatch")."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_file_of_the_readmes_test_command_has_a_name_of_its_own():
    names = Counter(p.name for folder in ("tests", "conformance", "negative")
                    for p in (ROOT / folder).rglob("test_*.py"))
    assert [name for name, n in names.items() if n > 1] == []
