"""A refused launch writes nothing and starts nothing: no private home, no project state, no harness."""

from __future__ import annotations

import json
import os

import pytest

from agentbox import cli
from agentbox.sandbox import session, startup
from launch_helpers import RW, cli as run_cli, needs_bwrap, one_line, write_profile

pytestmark = needs_bwrap


def snapshot(root):
    return sorted(
        (str(p.relative_to(root)), p.is_dir(), p.read_bytes() if p.is_file() else b"") for p in root.rglob("*")
    )


@pytest.fixture
def project(ws):
    """A project with native config that a launch would mask: it must stay exactly as it is."""
    (ws / ".codex").mkdir()
    (ws / ".codex" / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    (ws / "AGENTS.md").write_text("host instructions\n")
    return ws


def test_a_launch_without_evidence_exits_3_and_leaves_everything_as_it_was(tmp_path, abhome, project, real_codex):
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = {**os.environ, "AGENTBOX_RUN_ROOT": str(tmpdir)}
    (tmp_path / "empty").mkdir()  # a store with no records yet
    before = snapshot(project)
    profile = write_profile(tmp_path, RW)
    done = run_cli(
        "launch",
        profile,
        "--cwd",
        project,
        "--evidence",
        tmp_path / "empty",
        "--binary",
        real_codex,
        "--",
        "touch",
        env=env,
    )
    assert done.returncode == 3, done.stderr
    assert "workspace (workspace.read_write): claim unverified" in one_line(done.stderr)
    command = f"agent-box prove {profile} --cwd {project} --evidence {tmp_path / 'empty'}"
    assert command in one_line(done.stderr)
    assert snapshot(project) == before  # no STARTED (the harness never ran), no .agentbox, masks untouched
    assert list(tmpdir.iterdir()) == []  # no private config home
    assert not (abhome / "cache" / "launch").exists()  # a refusal is never cached
    assert list((tmp_path / "empty").iterdir()) == []  # reading the store wrote nothing into it
    runs = json.loads(run_cli("runs", "list", "--json", env=env).stdout)
    assert [(r["status"], r["exit_status"], r["harness_args"]) for r in runs] == [("refused", 3, ["touch"])]
    assert "workspace" in runs[0]["refusal"] and runs[0]["claims"]["workspace"]["verdict"] == "refused"


def test_a_refusal_reaches_neither_materialization_nor_any_process_start(
    tmp_path, abhome, project, real_codex, monkeypatch, capsys
):
    def forbidden(*args, **kwargs):
        raise AssertionError("a refused launch must not get this far")

    for name in ("materialize", "run_attached", "make_backing", "write_config"):
        monkeypatch.setattr(session, name, forbidden)
    monkeypatch.setattr(startup, "start_egress", forbidden)
    monkeypatch.setattr(os, "posix_spawn", forbidden)
    (tmp_path / "empty").mkdir()
    rc = cli.main(
        [
            "launch",
            str(write_profile(tmp_path, RW)),
            "--cwd",
            str(project),
            "--evidence",
            str(tmp_path / "empty"),
            "--binary",
            str(real_codex),
            "--",
            "touch",
        ]
    )
    assert rc == 3
    assert "refusing to launch" in capsys.readouterr().err


def test_refuted_evidence_refuses_even_with_accept_unverified(tmp_path, abhome, ws, real_codex):
    from launch_helpers import prove

    store = tmp_path / "ev"
    prove(store, real_codex, ["workspace.read_write"], outcome="escaped")
    done = run_cli(
        "launch",
        write_profile(tmp_path, RW),
        "--cwd",
        ws,
        "--evidence",
        store,
        "--binary",
        real_codex,
        "--accept-unverified",
        "workspace",
        "--",
        "touch",
    )
    assert done.returncode == 3 and "claim refuted" in one_line(done.stderr)
    assert list(ws.iterdir()) == []


def test_evidence_for_another_build_of_the_same_version_does_not_count(tmp_path, abhome, ws, real_codex):
    from launch_helpers import CATALOGUE, posing_as_observed
    from agentbox.prove.evidence import append
    from synthetic_evidence import proving_records

    store = tmp_path / "ev"
    append(
        store, posing_as_observed(proving_records(CATALOGUE, "codex", "0.171.0", "f" * 64, ["workspace.read_write"]))
    )
    done = run_cli(
        "launch", write_profile(tmp_path, RW), "--cwd", ws, "--evidence", store, "--binary", real_codex, "--", "touch"
    )
    assert done.returncode == 3 and "no evidence recorded for this build" in one_line(done.stderr)


def test_evidence_keyed_by_the_launchers_hash_alone_does_not_count(tmp_path, abhome, ws, real_codex):
    # what the store held when a build was identified by bin/codex.js: it says nothing of the native binary
    import hashlib

    from launch_helpers import CATALOGUE, posing_as_observed
    from agentbox.prove.evidence import append
    from synthetic_evidence import proving_records

    launcher = hashlib.sha256(open(os.path.realpath(real_codex), "rb").read()).hexdigest()
    store = tmp_path / "ev"
    append(
        store, posing_as_observed(proving_records(CATALOGUE, "codex", "0.171.0", launcher, ["workspace.read_write"]))
    )
    done = run_cli(
        "launch", write_profile(tmp_path, RW), "--cwd", ws, "--evidence", store, "--binary", real_codex, "--", "touch"
    )
    assert done.returncode == 3 and "no evidence recorded for this build" in one_line(done.stderr)


def test_synthetic_evidence_for_this_exact_build_never_reaches_the_gate(tmp_path, abhome, ws, real_codex):
    from launch_helpers import CATALOGUE, build_digest
    from agentbox.prove.evidence import append
    from synthetic_evidence import proving_records

    store = tmp_path / "ev"
    written = append(
        store, proving_records(CATALOGUE, "codex", "0.171.0", build_digest(real_codex), ["workspace.read_write"])
    )
    done = run_cli(
        "launch", write_profile(tmp_path, RW), "--cwd", ws, "--evidence", store, "--binary", real_codex, "--", "touch"
    )
    assert done.returncode == 3, done.stderr
    assert "workspace (workspace.read_write): claim unverified" in one_line(done.stderr)
    assert f"not counted: {written} synthetic vector run(s) of this build" in one_line(
        done.stderr
    ) and "synthetic evidence never proves a build" in one_line(done.stderr)
    assert list(ws.iterdir()) == []


def test_records_that_do_not_say_where_they_came_from_are_refused_with_the_command_to_rerun(
    tmp_path, abhome, ws, real_codex
):
    # a store written before evidence recorded its provenance: not proof of a real run of this build
    from launch_helpers import CATALOGUE, build_digest
    from agentbox.prove.evidence import append
    from synthetic_evidence import proving_records

    records = proving_records(CATALOGUE, "codex", "0.171.0", build_digest(real_codex), ["workspace.read_write"])
    store = tmp_path / "ev"
    append(
        store, [r.model_copy(update={"run_info": r.run_info.model_copy(update={"provenance": None})}) for r in records]
    )
    profile = write_profile(tmp_path, RW)
    done = run_cli("launch", profile, "--cwd", ws, "--evidence", store, "--binary", real_codex, "--", "touch")
    assert done.returncode == 3, done.stderr
    assert "whose records do not say where they came from" in one_line(done.stderr)
    assert "re-run the suite to prove this build" in one_line(done.stderr)
    assert f"agent-box prove {profile} --cwd {ws} --evidence {store}" in one_line(done.stderr)


def test_a_required_item_the_plan_cannot_cover_exactly_is_refused_with_its_layers(tmp_path, abhome, ws, real_codex):
    # shell ask: codex asks only in its TUI (partial), and the OS sandbox cannot tell its shell tool apart
    (tmp_path / "ask.yaml").write_text(
        "name: t\nharness: codex\npermission_intent:\n" + RW + "  shell: {access: ask, requirement: required}\n"
    )
    (tmp_path / "ev").mkdir()
    done = run_cli(
        "launch",
        tmp_path / "ask.yaml",
        "--cwd",
        ws,
        "--evidence",
        tmp_path / "ev",
        "--binary",
        real_codex,
        "--accept-unverified",
        "shell",
        "--",
        "touch",
    )
    assert done.returncode == 3
    assert "shell (shell.ask)" in one_line(done.stderr) and "plan layer" in one_line(done.stderr)


def test_an_evidence_store_that_does_not_exist_is_a_typo_exit_2_naming_it(tmp_path, abhome, ws, real_codex):
    done = run_cli(
        "launch",
        write_profile(tmp_path, RW),
        "--cwd",
        ws,
        "--evidence",
        tmp_path / "evidnce",
        "--binary",
        real_codex,
        "--",
        "touch",
    )
    assert done.returncode == 2 and f"{tmp_path / 'evidnce'}: no such evidence store (a typo?)" in one_line(done.stderr)
    assert list(ws.iterdir()) == []


def test_a_refusal_says_what_to_do_in_lines_a_terminal_shows_whole(tmp_path, abhome, ws, real_codex):
    (tmp_path / "ev").mkdir()
    done = run_cli(
        "launch",
        write_profile(tmp_path, RW),
        "--cwd",
        ws,
        "--evidence",
        tmp_path / "ev",
        "--binary",
        real_codex,
        "--",
        "touch",
    )
    assert done.returncode == 3
    lines = done.stderr.splitlines()
    assert [line for line in lines if len(line) > 100 and len(line.split()) > 1] == []
    assert "        workspace: {access: read_write, requirement: advisory}" in lines  # the profile's item, as YAML
    text = one_line(done.stderr)
    assert f"--cwd {ws} --evidence {tmp_path / 'ev'}" in text  # the launch's mode (tui) is prove's default
    assert text.count("agent-box prove") == 1


def test_a_refusal_offers_the_other_versions_on_which_the_store_proves_the_item(tmp_path, abhome, ws, real_codex):
    from launch_helpers import prove

    store = tmp_path / "ev"
    prove(store, real_codex, ["workspace.read_write"], version="0.170.0")  # another version, its own build
    done = run_cli(
        "launch", write_profile(tmp_path, RW), "--cwd", ws, "--evidence", store, "--binary", real_codex, "--", "touch"
    )
    assert done.returncode == 3
    assert "pick a harness or version on which the evidence proves it" in one_line(done.stderr)
    assert "workspace: codex@0.170.0" in one_line(done.stderr)


@pytest.mark.parametrize("lacks", [("modules",), ()])
def test_the_launch_gate_is_told_which_kernel_features_this_machine_lacks(
    tmp_path, abhome, ws, real_codex, monkeypatch, lacks
):
    """Claims resting on vectors inapplicable where recorded are held to this machine's kernel, checked as the
    suite checks it (`kernel_lacks_here`), in `launch` and `agent-box acp` alike (both decide in `launch_plan`)."""
    from agentbox import gate
    from agentbox.run import launch_plan
    from agentbox.prove import vectors

    told = []

    def spy(*args, **kwargs):
        told.append(kwargs["kernel_lacks"])
        return gate.decide(*args, **kwargs)

    monkeypatch.setattr(vectors, "kernel_lacks_here", lambda *features: lacks)
    monkeypatch.setattr(launch_plan, "decide", spy)
    (tmp_path / "empty").mkdir()
    rc = cli.main(
        [
            "launch",
            str(write_profile(tmp_path, RW)),
            "--cwd",
            str(ws),
            "--evidence",
            str(tmp_path / "empty"),
            "--binary",
            str(real_codex),
            "--",
            "touch",
        ]
    )
    assert rc == 3 and told == [lacks]
