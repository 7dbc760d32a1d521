"""Fixtures for launch tests: a private AGENTBOX_HOME (every test), a project and the real installed codex."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentbox.harnesses.installs import find_binary

REAL = find_binary("codex")  # resolved at import, before the tests move AGENTBOX_HOME


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory) -> Path:
    """One build-digest cache for the session: keyed by each file's stat, it holds nothing a test could
    leave behind but digests, and spares every test hashing codex's 440 MB afresh."""
    return tmp_path_factory.mktemp("build-cache")


@pytest.fixture(autouse=True)
def abhome(tmp_path, monkeypatch, build_cache) -> Path:
    home = tmp_path / "abhome"
    (home / "cache").mkdir(parents=True)
    (home / "cache" / "build").symlink_to(build_cache)
    monkeypatch.setenv("AGENTBOX_HOME", str(home))
    return home


@pytest.fixture
def ws(tmp_path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def real_codex(abhome) -> Path:
    """The REAL installed codex (no stand-in), seen from the test's AGENTBOX_HOME as it would be at home.

    Refusal tests only probe it; the others launch it."""
    if REAL is None or REAL.source != "agentbox":
        pytest.skip("codex is not installed: agent-box harness install codex@0.171.0")
    version_dir = Path(REAL.binary).parents[2]
    (abhome / "harnesses" / "codex").mkdir(parents=True, exist_ok=True)
    link = abhome / "harnesses" / "codex" / REAL.version
    if not link.exists():
        link.symlink_to(version_dir)
    return Path(REAL.binary)
