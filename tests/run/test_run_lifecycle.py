"""One lifecycle for every sandboxed run: what `launch`, `acp`, `sandbox run` and the suite's composed runs share,
so the gate's evidence is about the code a user runs; a dead proxy or a sandbox that cannot be made ends the run
failed, exit 4, recorded, with nothing left behind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agentbox.compile.compiler import compile_plan
from agentbox.errors import SandboxError
from agentbox.core.profile import LoadedProfile, Profile
from agentbox.run.lifecycle import ProxyDied, Record, sandboxed
from agentbox.run.runs import RunStore
from agentbox.sandbox.session import entry_from_plan

PACKAGE = Path(__file__).resolve().parents[2] / "agentbox"
FIELDS = {
    "profile": "p",
    "profile_digest": "d" * 64,
    "project_root": "/w",
    "harness": "claude-code",
    "version": "2.1.332",
    "claims": {},
    "evidence_ids": [],
    "accept_unverified": False,
}


@pytest.fixture
def entry(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path / "abhome"))
    project = tmp_path / "project"
    project.mkdir()
    profile = Profile.model_validate({"name": "p", "harness": "claude-code"})
    plan = compile_plan(
        LoadedProfile(profile=profile, source="<t>", digest="d"),
        str(project),
        harness_version="2.1.332",
        home="/home/u",
    )
    return entry_from_plan(plan, ())


@pytest.fixture
def store(tmp_path):
    store = RunStore(tmp_path / "abhome" / "agentbox.db")
    yield store
    store.close()


def _calls(path: Path, name: str, methods: bool = True) -> list[str]:
    """The functions of a module that call `name` (a plain call, or with `methods` an attribute's too)."""
    found = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and name in (
                    getattr(node.func, "id", None),
                    getattr(node.func, "attr", None) if methods else None,
                ):
                    found.append(fn.name)
                    break
    return found


def test_only_the_lifecycle_starts_a_sandbox_and_launch_acp_sandbox_run_and_the_suite_all_enter_it():
    starts = {str(p.relative_to(PACKAGE)): _calls(p, "Started") for p in PACKAGE.rglob("*.py")}
    # `sandboxed` returns the Lifecycle, whose entering starts the sandbox
    assert {path: fns for path, fns in starts.items() if fns} == {"run/lifecycle.py": ["__enter__"]}
    for path, caller in (
        ("run/launch.py", "execute"),
        ("run/sandbox_command.py", "execute"),
        ("acp_endpoint/endpoint.py", "serve"),
        ("run/harness_run.py", "prepared"),
    ):
        assert caller in _calls(PACKAGE / path, "sandboxed"), f"{path}'s {caller} does not run in the lifecycle"
    # what the lifecycle owns is done nowhere else but in the harness layer's bare run (no sandbox, no proxy)
    for step in ("materialize", "restore", "keep"):
        owners = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if _calls(p, step, methods=False)}
        assert owners <= {"run/lifecycle.py", "run/harness_run.py"}, (step, owners)


def test_a_run_whose_proxy_died_ends_failed_with_exit_4_recorded_and_its_folder_gone(tmp_path, entry, store):
    run_dir = tmp_path / "run"
    with pytest.raises(ProxyDied, match="the egress proxy died") as raised:
        with sandboxed(entry, str(run_dir), record=Record(store, FIELDS), tell=lambda line: None) as run:
            run.started.notes.append("the egress proxy died")  # what the watcher writes as it ends the run
            run.ended(0)  # the command's own ending does not count
    assert raised.value.exit_code == 4
    row = store.get(run.run_id)
    assert (row["status"], row["exit_status"]) == ("failed", 4) and not run_dir.exists()


def test_a_sandbox_that_cannot_be_made_is_a_sandbox_error_recorded_as_failed(tmp_path, entry, store):
    (tmp_path / "file").write_text("")
    with pytest.raises(SandboxError, match="cannot start the sandbox"):
        with sandboxed(entry, str(tmp_path / "file" / "run"), record=Record(store, FIELDS)):
            pytest.fail("the run started")
    [row] = store.list()
    assert (row["status"], row["exit_status"]) == ("failed", 4)


def test_a_run_that_ended_records_its_status_and_what_cleanup_did(tmp_path, entry, store):
    with sandboxed(entry, str(tmp_path / "run"), record=Record(store, FIELDS)) as run:
        run.ended(3, "interrupted")
    row = store.get(run.run_id)
    assert (
        (row["status"], row["exit_status"], row["cleanup"])
        == ("interrupted", 3, "clean")
        == (run.state, run.status, run.note)
    )


def test_a_driver_that_failed_leaves_the_run_failed_without_a_status_and_nothing_behind(tmp_path, entry, store):
    with pytest.raises(KeyError):
        with sandboxed(entry, str(tmp_path / "run"), record=Record(store, FIELDS)) as run:
            raise KeyError("the driver's own bug")
    row = store.get(run.run_id)
    assert (row["status"], row["exit_status"]) == ("failed", None) and not (tmp_path / "run").exists()
