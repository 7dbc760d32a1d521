"""Helpers of the launch tests: the real codex fixture lives in conftest; profiles, synthetic evidence and the command line.

The gate counts only records a suite run observed, so the synthetic records that drive these tests are
relabelled `posing_as_observed`, by name and in the test's own temporary store: what is tested is the
gate's and the launch's logic, never a claim about codex."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentbox.compile.adapters import get_adapter
from agentbox.harnesses.build_identity import identify
from agentbox.prove.claims import default_catalogue_dir
from agentbox.prove.evidence import append
from synthetic_evidence import posing_as_observed, proving_records
from agentbox.prove.vectors import load_catalogue

CATALOGUE = load_catalogue(default_catalogue_dir())

# Answers the version probe as codex 0.171.0; inside a launch (after codex's own `--strict-config`) it
# does what its first argument says, so tests can watch a launch without a real harness.

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def build_digest(binary) -> str:
    """What the gate looks codex's evidence up by: the digest of its build (the native binary that
    bin/codex.js starts and its vendor folder), not of the launcher."""
    return identify(get_adapter("codex").build_files(str(binary))).sha256


def one_line(text: str) -> str:
    """A refusal as one line: what it says, whatever the wrapping (a command's continuations joined)."""
    return " ".join(text.replace(" \\\n", " ").split())


def write_profile(tmp_path, intent: str, name: str = "t") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nharness: codex\npermission_intent:\n{intent}")
    return path


RW = "  workspace: {access: read_write, requirement: required}\n"
RO = "  workspace: {access: read_only, requirement: required}\n"


def prove(store, binary, capabilities, version="0.171.0", **kw) -> int:
    """Evidence that makes `capabilities` exact (or, with outcome=..., anything else) for this exact build,
    posing as observed."""
    return append(
        store,
        posing_as_observed(proving_records(CATALOGUE, "codex", version, build_digest(binary), capabilities, **kw)),
    )


def cli(*args, env=None, timeout=120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentbox.cli", *map(str, args)],
        env=env or os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )
