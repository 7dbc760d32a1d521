"""Nothing a run can write is read back as Agent-Box's own: the refusals at a run's start, where run folders live,
and what a profile argument names. Observed through `agent-box sandbox run` and the real bubblewrap."""

import os
import shutil
import subprocess
import sys

import pytest

from agentbox.errors import InputError, SandboxError
from agentbox.hot import resolve_profile_path as hot_resolve
from agentbox.core.profile import resolve_profile_path
from agentbox.sandbox.session import refuse_writable_state, writable_sources

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

RW = "  workspace: {access: read_write}\n  shell: {access: allow}\n"


def profile(tmp_path, intent: str = RW, name: str = "t") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nharness: codex\npermission_intent:\n{intent}")
    return str(path)


def sandbox_run(env, prof, ws, *cmd):
    return subprocess.run(
        [sys.executable, "-m", "agentbox.cli", "sandbox", "run", prof, "--cwd", str(ws), "--", *cmd],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@needs_bwrap
def test_a_run_whose_writable_workspace_holds_agentbox_home_is_refused_before_its_command_starts(tmp_path, env, ws):
    inside = ws / "agentbox-home"
    done = sandbox_run({**env, "AGENTBOX_HOME": str(inside)}, profile(tmp_path), ws, "touch", str(ws / "ran"))
    assert done.returncode == 4
    assert f"AGENTBOX_HOME {inside} is inside {ws}, which this run can write" in done.stderr
    assert not (ws / "ran").exists()


@needs_bwrap
def test_a_read_only_workspace_that_holds_agentbox_home_is_refused_too_its_bind_would_put_it_back_in_view(
    tmp_path, env, ws
):
    ro = "  workspace: {access: read_only}\n  shell: {access: allow}\n"
    inside = ws / "agentbox-home"
    inside.mkdir()
    done = sandbox_run({**env, "AGENTBOX_HOME": str(inside)}, profile(tmp_path, ro), ws, "touch", "/tmp/ran")
    assert done.returncode == 4, done.stderr
    assert (
        f"bind of {ws} would put back {inside}" in done.stderr and "AGENTBOX_HOME outside the workspace" in done.stderr
    )


@needs_bwrap
def test_a_profile_inside_the_writable_workspace_is_refused_so_no_run_rewrites_the_next_one(env, ws):
    prof = profile(ws)
    done = sandbox_run(env, prof, ws, "true")
    assert done.returncode == 4 and f"the profile {prof} is inside {ws}" in done.stderr


@needs_bwrap
def test_run_folders_live_under_tmp_whatever_tmpdir_says_so_no_other_run_sees_them(tmp_path, env, ws):
    elsewhere = tmp_path / "tmpdir"
    elsewhere.mkdir()
    done = sandbox_run({**env, "TMPDIR": str(elsewhere)}, profile(tmp_path), ws, "true")
    assert done.returncode == 0, done.stderr
    assert list(elsewhere.iterdir()) == []  # nothing was made there, not even for a moment that left a trace


@needs_bwrap
def test_a_workspace_of_tmp_itself_is_refused_since_every_run_keeps_its_folder_there(tmp_path, env):
    done = sandbox_run(env, profile(tmp_path, "  workspace: {access: read_only}\n"), "/tmp", "true")
    assert done.returncode == 4 and "workspace /tmp would expose the host's /tmp" in done.stderr


def test_the_writable_sources_of_a_plan_are_its_binds_but_the_run_folders_own():
    argv = [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--bind",
        "{run_dir}/config",
        "/tmp/agentbox/config",
        "--bind",
        "/srv/ws",
        "/srv/ws",
        "--ro-bind",
        "/srv/ro",
        "/srv/ro",
        "--",
    ]
    assert writable_sources(argv, "/tmp/agentbox-run-x") == ["/srv/ws"]


def test_a_trusted_path_named_by_the_entry_is_refused_inside_a_writable_bind_and_a_control_may_set_it_aside(tmp_path):
    ws = tmp_path / "ws"
    (ws / "store").mkdir(parents=True)
    entry = {"argv": ["bwrap", "--bind", str(ws), str(ws), "--"], "trusted": {"the evidence store": str(ws / "store")}}
    with pytest.raises(SandboxError, match="the evidence store .* is inside .*, which this run can write"):
        refuse_writable_state(entry, "/tmp/agentbox-run-x", {"AGENTBOX_HOME": str(tmp_path / "abhome")})
    refuse_writable_state(
        {**entry, "trust_writable_state": True}, "/tmp/agentbox-run-x", {"AGENTBOX_HOME": str(tmp_path / "abhome")}
    )


def test_a_link_into_the_workspace_is_seen_through(tmp_path):
    ws = tmp_path / "ws"
    (ws / "home").mkdir(parents=True)
    os.symlink(ws / "home", tmp_path / "link")
    entry = {"argv": ["bwrap", "--bind", str(ws), str(ws), "--"]}
    with pytest.raises(SandboxError, match="AGENTBOX_HOME"):
        refuse_writable_state(entry, "/tmp/agentbox-run-x", {"AGENTBOX_HOME": str(tmp_path / "link")})


def test_a_bare_profile_name_is_never_a_file_of_that_name_in_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path / "abhome"))
    (tmp_path / "reviewer").write_text("name: planted\nharness: codex\n")  # a file a run left in the project
    with pytest.raises(InputError, match="no profile named 'reviewer'"):
        resolve_profile_path("reviewer")
    assert hot_resolve("reviewer") is None  # the fast path sends it to the full parser, which says the above
    assert resolve_profile_path("./reviewer").name == "reviewer"  # read on purpose


@needs_bwrap
def test_an_egress_log_inside_the_writable_workspace_is_refused_so_no_link_there_aims_the_host_write(tmp_path, env, ws):
    done = sandbox_run_with(env, profile(tmp_path), ws, ["--egress-log", str(ws / "egress.jsonl")], "true")
    assert done.returncode == 4 and f"the --egress-log file {ws / 'egress.jsonl'} is inside {ws}" in done.stderr


@needs_bwrap
def test_a_bubblewrap_found_inside_the_writable_workspace_is_refused(tmp_path, env, ws):
    planted = ws / "bin"
    planted.mkdir()
    wrapper = planted / "bwrap"  # what a run could write there: bubblewrap's flags, changed on the host
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("bwrap")} "$@"\n')
    wrapper.chmod(0o755)
    done = sandbox_run({**env, "PATH": f"{planted}:{env['PATH']}"}, profile(tmp_path), ws, "true")
    assert done.returncode == 4 and "bubblewrap" in done.stderr, done.stderr


def sandbox_run_with(env, prof, ws, options, *cmd):
    return subprocess.run(
        [sys.executable, "-m", "agentbox.cli", "sandbox", "run", prof, "--cwd", str(ws), *options, "--", *cmd],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def state(tmp_path):
    """An AGENTBOX_HOME outside /tmp (which every run replaces with its own anyway), as /var/lib/agentbox would be."""
    path = os.path.join("/var/tmp", f"agentbox-state-{tmp_path.name}-{os.getpid()}")
    os.makedirs(os.path.join(path, "state", "other", "codex"))
    with open(os.path.join(path, "state", "other", "codex", "auth.json"), "w") as f:
        f.write("kept-login\n")
    os.makedirs(os.path.join(path, "harnesses", "tool", "bin"))
    with open(os.path.join(path, "harnesses", "tool", "bin", "tool"), "w") as f:
        f.write("#!/bin/sh\necho the harness runs\n")
    os.chmod(os.path.join(path, "harnesses", "tool", "bin", "tool"), 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


VISIBLE = RW + "  host_home: visible\n"


@needs_bwrap
def test_what_agentbox_keeps_is_hidden_from_the_run_but_its_harness_installs_still_run(tmp_path, env, ws, state):
    run = {**env, "AGENTBOX_HOME": state}
    done = sandbox_run(
        run,
        profile(tmp_path, VISIBLE),
        ws,
        "sh",
        "-c",
        f"cat {state}/state/other/codex/auth.json; ls -A {state}; {state}/harnesses/tool/bin/tool",
    )
    assert "kept-login" not in done.stdout
    assert done.stdout.split("\n")[0] == "harnesses"  # nothing else of it is there
    assert "the harness runs" in done.stdout, done.stderr


@needs_bwrap
def test_without_the_hiding_the_same_read_sees_the_kept_answers(tmp_path, env, ws, state):
    # the control, on the same oracle: the entry's `state_visible` (the suite's weakening) leaves it in view
    prof = profile(tmp_path, VISIBLE)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentbox.testing.weakened",
            "--weaken",
            "state_visible",
            prof,
            "--cwd",
            str(ws),
            "--",
            "cat",
            f"{state}/state/other/codex/auth.json",
        ],
        env={**env, "AGENTBOX_HOME": state},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "kept-login" in done.stdout, done.stderr


def test_the_state_mounts_go_before_every_bind_the_plan_names_and_bind_back_only_where_nothing_covers_it(state):
    from agentbox.sandbox.session import hide_state, sandbox_argv

    entry = {
        "argv": [
            "bwrap",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--remount-ro",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            f"{state}/harnesses/tool",
            f"{state}/harnesses/tool",
        ]
    }
    argv = sandbox_argv(entry, "/tmp/run", state=state)
    assert argv[12:19] == [
        "--tmpfs",
        state,
        "--ro-bind",
        f"{state}/harnesses",
        f"{state}/harnesses",
        "--ro-bind",
        f"{state}/harnesses/tool",
    ]
    # a hidden home covers it: its own private mount stays, with nothing bound back, for the bind check to read
    assert hide_state(["bwrap", "--tmpfs", os.path.dirname(state)], state) == ["--tmpfs", state]
    assert hide_state(["bwrap"], "/tmp/agentbox-home-absent") == []  # nothing there to read, or to mount over
    # a bind of a folder above it below the home (an install prefix such as ~/.local) puts it back: its mounts go
    # after that bind, or, when the plan already bound something inside it, the bind is refused (red team)
    hidden_home = ["bwrap", "--tmpfs", "/tmp", "--tmpfs", os.path.dirname(os.path.dirname(state))]
    above = os.path.dirname(state)
    argv = sandbox_argv({"argv": [*hidden_home, "--ro-bind", above, above]}, "/tmp/run", state=state)
    assert argv[-5:] == ["--tmpfs", state, "--ro-bind", f"{state}/harnesses", f"{state}/harnesses"]
    inside = ["--ro-bind", f"{state}/harnesses/tool", f"{state}/harnesses/tool"]
    with pytest.raises(SandboxError, match=f"would put back {state}"):
        sandbox_argv({"argv": [*hidden_home, *inside, "--ro-bind", above, above]}, "/tmp/run", state=state)


@needs_bwrap
def test_a_visible_home_under_tmp_runs_with_the_agentbox_home_in_it_hidden(tmp_path, env, ws):
    home = tmp_path / "hosthome"  # under /tmp: bound back over the run's private /tmp
    kept = home / ".local" / "share" / "agentbox" / "state" / "other" / "codex" / "auth.json"
    kept.parent.mkdir(parents=True)
    kept.write_text("kept-login\n")
    visible = "  workspace: {access: read_only}\n  shell: {access: allow}\n  host_home: visible\n"
    done = sandbox_run(
        {**env, "HOME": str(home), "AGENTBOX_HOME": str(kept.parents[3])},
        profile(tmp_path, visible),
        ws,
        "sh",
        "-c",
        f"ls -a {home}; cat {kept}",
    )
    assert done.returncode != 0 and ".local" in done.stdout, done.stderr  # the home is in view ...
    assert "kept-login" not in done.stdout and "No such file" in done.stderr  # ... and what Agent-Box keeps is not
