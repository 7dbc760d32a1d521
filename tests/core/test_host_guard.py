"""What the host runs later stays out of a writable workspace's reach, and a backing Agent-Box did not write is
never used. Observed through `agent-box sandbox run` and the real bubblewrap; the scan's own rules directly."""

import os
import shutil
import subprocess
import sys

import pytest

from agentbox.errors import SandboxError
from agentbox.core.intent import PermissionIntent
from agentbox.sandbox.backings import record, status
from agentbox.sandbox.bwrap import _host_executed_names
from agentbox.sandbox.host_guard import Guard, guard_args, scan

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

RW = "  workspace: {access: read_write}\n  shell: {access: allow}\n"


def profile(tmp_path, extra: str = "", name: str = "t") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nharness: codex\npermission_intent:\n{RW}{extra}")
    return str(path)


def sandbox_run(env, prof, ws, script):
    return subprocess.run(
        [sys.executable, "-m", "agentbox.cli", "sandbox", "run", prof, "--cwd", str(ws), "--", "sh", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def spec(ws, home="/nonexistent", writable=()):
    return {"workspace": str(ws), "home": home, "writable": list(writable), **_host_executed_names()}


def _binds(args: list[str]) -> list[tuple[str, str]]:
    """(option, target) of each bind a guard's options make, in order."""
    return [(a, args[i + 2]) for i, a in enumerate(args) if a in ("--bind", "--ro-bind", "--bind-fd", "--ro-bind-fd")]


def _close(args: list[str]) -> None:
    """Close what `guard_args` opened for its binds by descriptor (a Guard closes its own)."""
    for fd in _fds(args):
        os.close(fd)


@needs_bwrap
def test_a_run_cannot_write_a_git_hook_an_editor_task_or_rename_a_nested_repository_away(tmp_path, env, ws):
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".vscode").mkdir()
    (ws / "pkg" / "lib" / ".git").mkdir(parents=True)
    done = sandbox_run(
        env,
        profile(tmp_path),
        ws,
        "echo x > .git/hooks/post-checkout; echo x > .vscode/tasks.json; mv pkg moved; touch ok",
    )
    assert "Read-only file system" in done.stderr and "Device or resource busy" in done.stderr
    assert not (ws / ".git/hooks/post-checkout").exists() and not (ws / ".vscode/tasks.json").exists()
    assert (ws / "pkg/lib/.git").is_dir() and (ws / "ok").exists()


@needs_bwrap
def test_a_name_absent_at_the_root_cannot_be_created_and_its_placeholder_is_gone_after_the_run(tmp_path, env, ws):
    done = sandbox_run(env, profile(tmp_path), ws, "echo 'touch ran' > .envrc; mkdir .claude/x; cat .mcp.json")
    assert "Read-only file system" in done.stderr
    assert '{"mcpServers": {}}' in done.stdout  # what a harness reads there is still valid JSON
    assert sorted(os.listdir(ws)) == []


@needs_bwrap
def test_a_name_the_profile_frees_is_writable_and_the_others_stay_held(tmp_path, env, ws):
    prof = profile(tmp_path, "  host_executed: {access: protected, writable: [.vscode]}\n")
    done = sandbox_run(env, prof, ws, "mkdir .vscode && echo x > .vscode/tasks.json; echo x > .envrc")
    assert (ws / ".vscode/tasks.json").exists() and not (ws / ".envrc").exists(), done.stderr


@needs_bwrap
def test_host_executed_writable_lets_the_run_write_them_all(tmp_path, env, ws):
    done = sandbox_run(env, profile(tmp_path, "  host_executed: writable\n"), ws, "echo x > .envrc")
    assert (ws / ".envrc").exists(), done.stderr


# per harness: a project config it reads, and what a clone could ship as its backing
SHIPPED = {
    "claude-code": (".claude", "settings.json"),
    "codex": (".codex", "config.toml"),
    "opencode": (".opencode", "opencode.json"),
    "hermes": (".hermes", "config.yaml"),
}


@needs_bwrap
@pytest.mark.parametrize("shipped_for", sorted(SHIPPED))
def test_a_backing_that_came_with_the_project_is_refused_by_name_and_a_blank_one_made_after_it_is_removed(
    tmp_path, env, ws, shipped_for
):
    folder, name = SHIPPED[shipped_for]
    (ws / folder).mkdir()
    (ws / folder / name).write_text("the project's own\n")
    shipped = ws / ".agentbox/profiles/t/root" / folder
    shipped.mkdir(parents=True)
    (shipped / name).write_text("shipped with the clone\n")
    prof = tmp_path / "t.yaml"
    prof.write_text(f"name: t\nharness: {shipped_for}\npermission_intent:\n{RW}")
    done = sandbox_run(env, str(prof), ws, f"cat {folder}/{name}")
    assert done.returncode == 4 and "shipped" not in done.stdout
    assert f"profile backing {shipped} is not written by Agent-Box" in done.stderr
    shutil.rmtree(ws / ".agentbox")
    done = sandbox_run(env, str(prof), ws, f"ls -A {folder}")
    assert done.returncode == 0 and done.stdout == "", done.stderr


def test_a_backing_changed_since_agentbox_wrote_it_is_refused(tmp_path):
    backing = tmp_path / "b.json"
    backing.write_text("{}")
    record(str(backing), str(tmp_path / "home"))
    assert status(str(backing), str(tmp_path / "home")) == "written by Agent-Box"
    backing.write_text('{"hooks": {}}')
    assert status(str(backing), str(tmp_path / "home")) == "changed since Agent-Box wrote it"


def test_a_link_at_a_host_executed_path_is_refused(tmp_path, ws):
    (ws / ".envrc").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SandboxError, match=r"host-executed path .*\.envrc is a symbolic link"):
        scan(spec(ws))


def test_the_scan_finds_repositories_deeper_and_in_dependencies_but_no_other_names_there(tmp_path, ws):
    (ws / "a/b/.git").mkdir(parents=True)
    (ws / "node_modules/x/.git").mkdir(parents=True)
    (ws / "node_modules/x/.vscode").mkdir()
    (ws / "third_party/github.com/org/lib/.git").mkdir(parents=True)
    existing, _ = scan(spec(ws))
    assert [p for p, _ in existing] == [
        str(ws / "a/b/.git"),
        str(ws / "node_modules/x/.git"),
        str(ws / "third_party/github.com/org/lib/.git"),
    ]


def test_a_worktree_holds_its_common_repository_too(tmp_path, ws):
    subprocess.run(["git", "init", "-q", "--bare", str(ws / "repo.git")], check=True)
    (ws / "main/.git").parent.mkdir()
    (ws / "main/.git").write_text(f"gitdir: {ws}/repo.git/worktrees/main\n")
    (ws / "repo.git/worktrees/main").mkdir(parents=True)
    (ws / "repo.git/worktrees/main/commondir").write_text("../..\n")
    existing = dict(scan(spec(ws))[0])
    assert existing[str(ws / "repo.git")] == "directory"


def test_a_hooks_path_written_on_one_line_or_in_an_included_file_is_held(tmp_path, ws):
    (ws / ".git").mkdir()
    (ws / ".git/config").write_text("[include]\n\tpath = ../project.gitconfig\n")
    (ws / "project.gitconfig").write_text("[core] hooksPath = scripts/hooks\n")
    (ws / "scripts/hooks").mkdir(parents=True)
    existing = dict(scan(spec(ws))[0])
    assert str(ws / "project.gitconfig") in existing and str(ws / "scripts/hooks") in existing


def test_what_a_yarnrc_makes_every_yarn_command_run_is_held(tmp_path, ws):
    (ws / ".yarnrc.yml").write_text("yarnPath: .yarn/releases/yarn-4.1.0.cjs\n")
    (ws / ".yarn/releases").mkdir(parents=True)
    (ws / ".yarn/releases/yarn-4.1.0.cjs").write_text("")
    assert str(ws / ".yarn/releases/yarn-4.1.0.cjs") in dict(scan(spec(ws))[0])


def test_the_home_is_known_through_a_link_or_a_trailing_slash(tmp_path, ws):
    (ws / ".bashrc").write_text("")
    link = tmp_path / "homelink"
    link.symlink_to(ws)
    for home in (str(link), f"{ws}/"):
        assert str(ws / ".bashrc") in dict(scan(spec(ws, home=home))[0])


def test_a_backing_holding_a_link_is_refused_even_where_its_files_match(tmp_path):
    backing = tmp_path / "root/.claude"
    backing.mkdir(parents=True)
    record(str(backing), str(tmp_path / "home"))
    (tmp_path / "evil").mkdir()
    (backing / "commands").symlink_to(tmp_path / "evil")
    assert status(str(backing), str(tmp_path / "home")).startswith("holding a symbolic link")


def test_core_hooks_path_elsewhere_in_the_workspace_is_held_too(tmp_path, ws):
    (ws / ".git").mkdir()
    (ws / ".git/config").write_text("[core]\n\thooksPath = tools/hooks\n")
    (ws / "tools/hooks").mkdir(parents=True)
    existing, _ = scan(spec(ws))
    assert (str(ws / "tools/hooks"), "directory") in existing


def test_a_folder_above_a_nested_one_is_pinned_before_the_nested_one_is_bound(tmp_path, ws):
    (ws / "a/b/.vscode").mkdir(parents=True)
    args, _ = guard_args(spec(ws), [], str(tmp_path / "run"))
    _close(args)
    assert _binds(args)[:3] == [
        ("--bind-fd", str(ws / "a")),
        ("--bind-fd", str(ws / "a/b")),
        ("--ro-bind-fd", str(ws / "a/b/.vscode")),
    ]


def test_what_the_plan_mounts_over_after_the_workspace_is_left_to_it_and_what_it_mounted_before_is_not(tmp_path, ws):
    (ws / ".agentbox").mkdir()
    (ws / ".vscode").mkdir()
    argv = [
        "bwrap",
        "--ro-bind",
        str(ws / ".vscode"),
        str(ws / ".vscode"),
        "--bind",
        str(ws),
        str(ws),
        "--tmpfs",
        str(ws / ".agentbox"),
    ]
    args, made = guard_args(spec(ws), argv, str(tmp_path / "run"))
    _close(args)
    assert str(ws / ".agentbox") not in args and str(ws / ".agentbox") not in dict(made)
    assert ("--ro-bind-fd", str(ws / ".vscode")) in _binds(args)  # the workspace's bind covered the first


def test_a_link_on_the_way_to_what_a_config_points_at_is_refused(tmp_path, ws):
    (tmp_path / "real/releases").mkdir(parents=True)
    (tmp_path / "real/releases/yarn.cjs").write_text("")
    (ws / ".yarn").symlink_to(tmp_path / "real")
    (ws / ".yarnrc.yml").write_text("yarnPath: .yarn/releases/yarn.cjs\n")
    with pytest.raises(SandboxError, match=r"host-executed path .*/\.yarn is a symbolic link"):
        scan(spec(ws))


def test_a_linked_worktree_holds_the_hooks_path_its_common_config_names(tmp_path, ws):
    main = ws / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    subprocess.run(["git", "-C", str(main), "config", "core.hooksPath", "tools/hooks"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(main),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(ws / "wt")], check=True)
    (ws / "wt/tools/hooks").mkdir(parents=True)
    assert str(ws / "wt/tools/hooks") in dict(scan(spec(ws))[0])


def test_a_fifo_in_place_of_a_config_stalls_no_start(tmp_path, ws):
    (ws / "sub/.git").mkdir(parents=True)
    os.mkfifo(ws / "sub/.git/config")
    os.mkfifo(ws / ".yarnrc.yml")
    existing = dict(scan(spec(ws))[0])
    assert str(ws / "sub/.git") in existing


def test_the_last_run_of_a_workspace_removes_the_placeholders_and_an_earlier_one_does_not(tmp_path, ws):
    first = Guard(spec(ws), [], str(tmp_path / "run1"))
    second = Guard(spec(ws), [], str(tmp_path / "run2"))
    (ws / ".envrc").touch()  # what bwrap would have made as the placeholder's mount point
    assert first.release() == [] and (ws / ".envrc").exists()
    assert second.release() == [] and not (ws / ".envrc").exists()


def test_a_placeholder_a_host_program_wrote_meanwhile_is_kept(tmp_path, ws):
    guard = Guard(spec(ws), [], str(tmp_path / "run"))
    (ws / ".envrc").write_text("export A=1\n")
    assert guard.release() == [str(ws / ".envrc")] and (ws / ".envrc").exists()


def test_host_executed_writable_names_are_clean_relative_paths_and_only_under_protected():
    assert PermissionIntent.model_validate({"host_executed": "writable"}).host_executed.access == "writable"
    with pytest.raises(ValueError, match="climbs out"):
        PermissionIntent.model_validate({"host_executed": {"access": "protected", "writable": ["../x"]}})
    with pytest.raises(ValueError, match="only apply to access 'protected'"):
        PermissionIntent.model_validate({"host_executed": {"access": "writable", "writable": [".vscode"]}})


def test_a_blank_backing_without_a_record_is_taken_as_agentbox_made_it(tmp_path):
    from agentbox.sandbox.session import make_backing

    backing = tmp_path / "root/.mcp.json"
    backing.parent.mkdir(parents=True)
    backing.write_text('{"mcpServers": {}}')  # as an earlier Agent-Box, without digests, made it
    make_backing(str(backing), "file", '{"mcpServers": {}}', home=str(tmp_path / "home"))
    assert status(str(backing), str(tmp_path / "home")) == "written by Agent-Box"


def test_a_folder_of_the_launchers_path_in_the_workspace_is_held_and_an_absent_one_at_its_first_missing_folder(ws):
    (ws / "bin").mkdir()
    found, absent = scan({**spec(ws), "path": f"{ws}/bin:{ws}/tools/bin:/usr/bin"})
    assert (str(ws / "bin"), "directory") in found
    assert (str(ws / "tools"), "directory", "") in absent  # so the run cannot make tools/bin either
    assert not any(p.startswith("/usr") for p, _ in found)


def test_a_relative_path_entry_or_the_workspace_itself_on_path_refuses_the_run(ws):
    for path in ("/usr/bin:.", "/usr/bin:", "bin:/usr/bin", str(ws)):
        with pytest.raises(SandboxError, match="PATH holds"):
            scan({**spec(ws), "path": path})


def test_a_path_folder_the_profile_frees_by_name_stays_writable(ws):
    (ws / "bin").mkdir()
    found, _ = scan({**spec(ws, writable=["bin"]), "path": f"{ws}/bin"})
    assert (str(ws / "bin"), "directory") not in found


def test_a_path_folder_reached_through_a_link_in_the_workspace_is_refused(ws):
    (ws / "real").mkdir()
    (ws / "bin").symlink_to(ws / "real")
    with pytest.raises(SandboxError, match="symbolic link"):
        scan({**spec(ws), "path": f"{ws}/bin"})


@needs_bwrap
def test_a_program_written_to_a_path_folder_in_the_workspace_is_refused_and_the_rest_stays_writable(tmp_path, env, ws):
    (ws / "bin").mkdir()
    done = sandbox_run(
        {**env, "PATH": f"{ws}/bin:{env['PATH']}"},
        profile(tmp_path),
        ws,
        "echo x > bin/git; mkdir -p tools/bin; touch ok",
    )
    assert "Read-only file system" in done.stderr
    assert not (ws / "bin" / "git").exists() and (ws / "ok").exists()


@needs_bwrap
def test_a_repository_made_in_a_new_folder_during_the_run_is_named_to_the_user_after_it(tmp_path, env, ws):
    # the guard cannot hold what does not exist at the start (host-executed.md): it says so when the run ends
    done = sandbox_run(
        env, profile(tmp_path), ws, "git init -q newpkg && git -C newpkg config core.fsmonitor 'touch ran'; touch ok"
    )
    assert (ws / "newpkg/.git/config").exists() and (ws / "ok").exists()
    [line] = [line for line in done.stderr.splitlines() if "after the run" in line]
    assert "left host-executed files where nothing held them" in line and line.endswith(f"{ws}/newpkg/.git")


@needs_bwrap
def test_a_name_the_run_chose_is_printed_after_it_as_seen_never_as_terminal_escapes(tmp_path, env, ws):
    # a folder named to erase the warning's line and hide what follows, on a terminal that obeyed it
    done = sandbox_run(env, profile(tmp_path), ws, "d=$(printf 'a\\r\\033[2K\\033[8m;b'); git init -q \"$d\"; touch ok")
    assert (ws / "ok").exists()
    [line] = [line for line in done.stderr.splitlines() if "after the run" in line]
    assert "\x1b" not in line and "\r" not in line
    assert line.endswith(f"{ws}/a\\x0d\\x1b[2K\\x1b[8m\\x3bb/.git")


def test_what_the_guard_held_at_the_start_is_no_newcomer_and_a_link_left_at_such_a_name_is(tmp_path, ws):
    (ws / ".git").mkdir()
    guard = Guard(spec(ws), [], str(tmp_path / "run"))
    assert guard.newcomers() == []
    (ws / "sub").mkdir()
    (ws / "sub" / ".envrc").symlink_to("/etc/passwd")
    [why] = guard.newcomers()
    assert why.startswith(f"host-executed path {ws}/sub/.envrc is a symbolic link")
    guard.release()


def test_a_placeholder_of_a_nested_workspace_stays_while_the_run_around_it_holds_it_and_goes_with_the_last(
    tmp_path, ws
):
    inner = ws / "inner"
    inner.mkdir()
    first = Guard(spec(inner), [], str(tmp_path / "run1"))
    (inner / ".envrc").touch()  # the inner run's placeholder, as bwrap makes it on the host
    second = Guard(spec(ws), [], str(tmp_path / "run2"))  # finds it as a host-executed file of its own workspace
    assert ("--ro-bind", str(inner / ".envrc")) in _binds(second.args)  # a placeholder: bound from the run folder
    assert first.release() == [] and (inner / ".envrc").exists()  # the outer run still holds it read-only
    assert second.release() == [] and not (inner / ".envrc").exists()


def test_a_killed_run_holds_nothing_so_the_next_run_to_end_removes_what_it_made(tmp_path, ws):
    killed = Guard(spec(ws), [], str(tmp_path / "run1"))
    (ws / ".envrc").touch()
    assert killed._fd is not None
    os.close(killed._fd)  # what SIGKILL leaves: the run's lock file, held by nobody, and its name in the record
    later = Guard(spec(ws), [], str(tmp_path / "run2"))
    assert later.release() == [] and not (ws / ".envrc").exists()


def test_the_end_of_a_run_removes_no_placeholder_through_a_folder_that_became_a_link(tmp_path, ws):
    from agentbox.sandbox.host_guard import _remove_placeholders

    (tmp_path / "victim" / "bin").mkdir(parents=True)
    (ws / "tools").symlink_to(tmp_path / "victim")  # the placeholder was ws/tools/bin
    assert _remove_placeholders({str(ws / "tools" / "bin"): {"kind": "directory"}}) == [str(ws / "tools" / "bin")]
    assert (tmp_path / "victim" / "bin").is_dir()


def test_a_path_folder_held_below_the_root_has_its_parents_pinned_so_no_rename_carries_it_away(tmp_path, ws):
    (ws / "tools").mkdir()
    args, made = guard_args({**spec(ws), "path": f"{ws}/tools/bin:/usr/bin"}, [], str(tmp_path / "run"))
    _close(args)
    assert (str(ws / "tools" / "bin"), "directory") in made
    assert ("--bind-fd", str(ws / "tools")) in _binds(args)


def test_the_hold_is_recorded_where_no_run_can_reach_it_whatever_agentbox_home_says(tmp_path):
    from agentbox.sandbox.host_guard import guard_folder

    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    assert guard_folder(str(runtime)) == str(runtime / "agentbox" / "guards")
    shared = tmp_path / "shared"
    (shared / "agentbox" / "guards").mkdir(parents=True, mode=0o777)
    (shared / "agentbox" / "guards").chmod(0o777)  # another user could write a record there: not used
    mine = tmp_path / "fallback"
    assert guard_folder(str(shared), str(mine)) == str(mine / "guards")
    mine.chmod(0o755)  # no longer this user's alone
    with pytest.raises(SandboxError, match="is not this user's alone"):
        guard_folder(str(shared), str(mine))


def test_a_record_of_held_placeholders_inside_the_writable_workspace_refuses_the_run(tmp_path, ws, monkeypatch):
    from agentbox.sandbox import host_guard
    from agentbox.sandbox.session import refuse_writable_state

    runtime = ws / "xdg"
    runtime.mkdir(mode=0o700)
    monkeypatch.setattr(host_guard, "_runtime_folders", lambda: [str(runtime)])
    entry = {"argv": ["bwrap", "--bind", str(ws), str(ws)], "host_executed": spec(ws)}
    with pytest.raises(SandboxError, match="the record of held host-executed placeholders .* which this run can write"):
        refuse_writable_state(entry, str(tmp_path / "run"))


@needs_bwrap
def test_a_placeholder_removed_on_the_host_while_the_run_lasts_frees_its_name_and_what_the_run_put_there_is_named(
    tmp_path, env, ws
):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentbox.cli",
            "sandbox",
            "run",
            profile(tmp_path),
            "--cwd",
            str(ws),
            "--",
            "sh",
            "-c",
            "echo started; read go; echo 'touch ran' > .envrc",
        ],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "started\n"  # bubblewrap made the placeholder's mount point before
    (ws / ".envrc").unlink()  # a host program (git clean, an editor) removes the empty file
    _, err = proc.communicate("go\n", timeout=60)
    assert (ws / ".envrc").read_text() == "touch ran\n"
    assert "after the run: kept the host-executed placeholders" in err and str(ws / ".envrc") in err


def test_what_the_plan_mounts_over_is_no_newcomer_after_the_run(tmp_path, ws):
    (ws / ".agentbox" / "profiles").mkdir(parents=True)  # the profiles' backings, made before the guard
    argv = ["bwrap", "--bind", str(ws), str(ws), "--tmpfs", str(ws / ".agentbox")]
    guard = Guard(spec(ws), argv, str(tmp_path / "run"))
    assert guard.newcomers() == []
    guard.release()


# What a held path leads a host program to is held too, or the run refused: a link out of a held folder, a second
# name of a held file, the repository a .git file names through a link, the hooks the user's own git config names.


def repository(ws):
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")


def test_a_hook_linked_to_a_file_elsewhere_in_the_workspace_holds_that_file_too(ws):
    repository(ws)
    (ws / ".git/hooks/pre-commit").symlink_to("../../scripts/pre-commit")
    assert (str(ws / "scripts/pre-commit"), "file") in scan(spec(ws))[0]


def test_a_linked_folder_is_held_whole_and_what_its_own_links_lead_to_as_well(ws):
    (ws / ".claude").mkdir()
    (ws / "prompts").mkdir()
    (ws / "prompts" / "review.md").symlink_to("../docs/review.md")
    (ws / "docs").mkdir()
    (ws / "docs" / "review.md").write_text("review\n")
    (ws / ".claude" / "commands").symlink_to("../prompts")
    existing = dict(scan(spec(ws))[0])
    assert existing[str(ws / "prompts")] == "directory" and existing[str(ws / "docs/review.md")] == "file"


def test_a_link_in_a_held_folder_that_leads_through_a_link_the_run_could_replace_is_refused(ws):
    repository(ws)
    (ws / "tools").symlink_to("scripts")
    (ws / ".git/hooks/pre-commit").symlink_to("../../tools/pre-commit")
    with pytest.raises(SandboxError, match=rf"host-executed path {ws}/tools is a symbolic link \(sandbox layer\)"):
        scan(spec(ws))
    assert (str(ws / "scripts/pre-commit"), "file") in scan(spec(ws, writable=["tools"]))[0]


def test_a_link_within_a_held_folder_or_out_of_the_workspace_is_followed_and_holds_nothing_more(tmp_path, ws):
    (ws / ".venv/bin").mkdir(parents=True)
    (ws / ".venv/bin/python3").symlink_to("python")
    (ws / ".venv/bin/python").symlink_to(sys.executable)
    found, _ = scan({**spec(ws), "path": f"{ws}/.venv/bin"})
    assert found == [(str(ws / ".venv/bin"), "directory")]


def test_a_link_in_a_held_folder_to_what_the_run_could_create_in_the_workspace_is_refused(ws):
    repository(ws)
    (ws / ".git/hooks/pre-push").symlink_to("../../scripts/pre-push")
    with pytest.raises(SandboxError, match=r"hooks/pre-push is a symbolic link to .*/scripts/pre-push, which does not"):
        scan(spec(ws))


def test_a_link_the_profile_frees_by_name_is_not_followed(ws):
    repository(ws)
    (ws / ".git/hooks/pre-commit").symlink_to("../../scripts/pre-commit")
    for freed in (".git/hooks/pre-commit", "scripts/pre-commit"):  # the link, or what it leads to
        assert str(ws / "scripts/pre-commit") not in dict(scan(spec(ws, writable=[freed]))[0])


def test_a_hook_hard_linked_to_a_file_elsewhere_in_the_workspace_refuses_the_run_and_says_what_to_do(ws):
    repository(ws)
    os.link(ws / "scripts/pre-commit", ws / ".git/hooks/pre-commit")
    with pytest.raises(SandboxError) as refused:
        scan(spec(ws))
    assert str(refused.value).startswith(
        f"host-executed path {ws}/.git/hooks/pre-commit has another name, {ws}/scripts/pre-commit, which the run can"
    )
    assert "(sandbox layer)" in str(refused.value) and "replace the hard link with a copy" in str(refused.value)
    assert "host_executed: {writable: [.git/hooks/pre-commit]}" in str(refused.value)


def test_a_held_program_whose_other_name_lies_outside_the_workspace_refuses_nothing(tmp_path, ws):
    (tmp_path / "cache").mkdir()  # a package cache a tool links its installs from (conda, uv)
    (tmp_path / "cache" / "tool").write_text("#!/bin/sh\n")
    (ws / "env/bin").mkdir(parents=True)
    os.link(tmp_path / "cache" / "tool", ws / "env/bin/tool")
    assert (str(ws / "env/bin"), "directory") in scan({**spec(ws), "path": f"{ws}/env/bin"})[0]


def test_a_held_file_at_the_root_with_a_second_name_refuses_the_run_too(ws):
    (ws / "direnv.sh").write_text("export A=1\n")
    os.link(ws / "direnv.sh", ws / ".envrc")
    with pytest.raises(SandboxError, match=r"\.envrc has another name"):
        scan(spec(ws))


def test_a_hard_link_whose_every_name_is_held_or_freed_by_name_refuses_nothing(ws):
    repository(ws)
    (ws / ".vscode").mkdir()
    os.link(ws / "scripts/pre-commit", ws / ".git/hooks/pre-commit")
    os.link(ws / "scripts/pre-commit", ws / ".vscode/pre-commit")
    os.unlink(ws / "scripts/pre-commit")  # its two names are both held now
    scan(spec(ws))
    (ws / "scripts/other").write_text("")
    os.link(ws / "scripts/other", ws / ".git/hooks/post-checkout")
    scan(spec(ws, writable=[".git/hooks/post-checkout"]))


def test_git_data_a_local_clone_hard_links_is_not_walked(tmp_path, ws):
    subprocess.run(["git", "init", "-q", str(tmp_path / "origin")], check=True)
    git = ["git", "-C", str(tmp_path / "origin"), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    subprocess.run(["git", "clone", "-q", "--local", str(tmp_path / "origin"), str(ws / "clone")], check=True)
    objects = [
        f for d, _, fs in os.walk(ws / "clone/.git/objects") for f in fs if os.stat(os.path.join(d, f)).st_nlink > 1
    ]
    assert objects  # the clone shares its objects with the origin
    assert (str(ws / "clone/.git"), "directory") in scan(spec(ws))[0]


def test_a_git_file_naming_its_repository_through_a_link_in_the_workspace_is_refused(ws):
    (ws / "vault/repo.git").mkdir(parents=True)
    (ws / "store").symlink_to("vault")
    (ws / ".git").write_text("gitdir: store/repo.git\n")
    with pytest.raises(SandboxError, match=rf"host-executed path {ws}/store is a symbolic link"):
        scan(spec(ws))
    # freed as the refusal says: the repository is held where git finds it now, through the link
    assert (str(ws / "vault/repo.git"), "directory") in scan(spec(ws, writable=["store"]))[0]


def test_a_git_file_naming_a_repository_of_the_workspace_through_a_link_outside_holds_the_repository(tmp_path, ws):
    (ws / "vault/repo.git").mkdir(parents=True)
    (tmp_path / "store").symlink_to(ws / "vault")
    (ws / ".git").write_text(f"gitdir: {tmp_path}/store/repo.git\n")
    assert (str(ws / "vault/repo.git"), "directory") in scan(spec(ws))[0]


def global_config(tmp_path, text):
    config = tmp_path / "global.gitconfig"
    config.write_text(text)
    return {"HOME": str(tmp_path / "nohome"), "GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}


def test_a_relative_hooks_path_of_the_users_global_config_is_held_in_every_repository(tmp_path, ws):
    environ = global_config(tmp_path, "[core]\n\thooksPath = .hooks\n")
    for repo in (ws, ws / "sub"):
        (repo / ".git").mkdir(parents=True)
        (repo / ".hooks").mkdir()
    existing = dict(scan({**spec(ws), "environ": environ})[0])
    assert existing[str(ws / ".hooks")] == "directory" and existing[str(ws / "sub/.hooks")] == "directory"
    assert str(ws / ".hooks") not in dict(scan({**spec(ws), "environ": {"HOME": str(tmp_path / "nohome")}})[0])


def test_a_hooks_folder_the_users_config_names_but_the_worktree_lacks_is_held_by_a_folder_placeholder(tmp_path, ws):
    (ws / ".git").mkdir()
    environ = global_config(tmp_path, "[core]\n\thooksPath = .hooks\n")
    assert (str(ws / ".hooks"), "directory", "") in scan({**spec(ws), "environ": environ})[1]


def test_a_program_a_command_setting_names_in_the_worktree_is_held_and_an_absent_one_at_its_first_missing_name(
    tmp_path, ws
):
    (ws / ".git").mkdir()
    (ws / "tools").mkdir()
    (ws / "tools/watch").write_text("#!/bin/sh\n")
    text = '[core]\n\tfsmonitor = ./tools/watch\n[alias]\n\tst = !bin/st --short\n[filter "x"]\n\tclean = gzip -c\n'
    existing, absent = scan({**spec(ws), "environ": global_config(tmp_path, text)})
    assert (str(ws / "tools/watch"), "file") in existing
    assert (str(ws / "bin"), "directory", "") in absent  # bin/st: the run may make neither the folder nor the program
    assert not any("gzip" in p for p, _ in existing)  # found on PATH: nothing of the workspace


def test_the_users_global_config_is_found_by_the_launchers_home_and_xdg_config_home(tmp_path, ws):
    (ws / ".git").mkdir()
    (ws / "a").mkdir()
    (ws / "b").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home/.gitconfig").write_text("[core]\n\thooksPath = a\n")
    (tmp_path / "xdg/git").mkdir(parents=True)
    (tmp_path / "xdg/git/config").write_text("[include]\n\tpath = ~/more.gitconfig\n")
    (tmp_path / "home/more.gitconfig").write_text("[core] hooksPath = b\n")
    environ = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "GIT_CONFIG_NOSYSTEM": "1"}
    existing = dict(scan({**spec(ws), "environ": environ})[0])
    assert str(ws / "a") in existing and str(ws / "b") in existing


def test_a_file_the_users_config_includes_from_the_workspace_is_held_and_read_whatever_its_condition(tmp_path, ws):
    (ws / ".git").mkdir()
    (ws / "tools/hooks").mkdir(parents=True)
    (ws / "team.gitconfig").write_text("[core]\n\thooksPath = tools/hooks\n")
    environ = global_config(tmp_path, f'[includeIf "gitdir:/nowhere/"]\n\tpath = {ws}/team.gitconfig\n')
    existing = dict(scan({**spec(ws), "environ": environ})[0])
    assert existing[str(ws / "team.gitconfig")] == "file" and existing[str(ws / "tools/hooks")] == "directory"


def test_the_system_config_is_read_unless_git_config_nosystem_says_not_to(tmp_path, ws):
    (ws / ".git").mkdir()
    (ws / ".hooks").mkdir()
    (tmp_path / "system.gitconfig").write_text("[core]\n\thooksPath = .hooks\n")
    environ = {"HOME": str(tmp_path / "nohome"), "GIT_CONFIG_SYSTEM": str(tmp_path / "system.gitconfig")}
    assert str(ws / ".hooks") in dict(scan({**spec(ws), "environ": environ})[0])
    assert str(ws / ".hooks") not in dict(scan({**spec(ws), "environ": {**environ, "GIT_CONFIG_NOSYSTEM": "1"}})[0])


def test_the_users_git_config_is_read_once_per_scan_and_not_where_there_is_no_repository(tmp_path, ws, monkeypatch):
    from agentbox.sandbox import host_guard

    calls = []
    monkeypatch.setattr(host_guard, "_user_git_config", lambda environ: calls.append(environ) or [])
    scan(spec(ws))
    assert calls == []
    for repo in (ws / "a", ws / "b"):
        (repo / ".git").mkdir(parents=True)
    scan(spec(ws))
    assert len(calls) == 1


@needs_bwrap
def test_a_run_cannot_rewrite_a_hook_through_the_link_it_was_installed_by_nor_one_the_global_config_names(
    tmp_path, env, ws
):
    repository(ws)
    (ws / ".git/hooks/pre-commit").symlink_to("../../scripts/pre-commit")
    (ws / ".hooks").mkdir()
    environ = global_config(tmp_path, "[core]\n\thooksPath = .hooks\n")
    done = sandbox_run(
        {**env, "GIT_CONFIG_GLOBAL": environ["GIT_CONFIG_GLOBAL"]},
        profile(tmp_path),
        ws,
        "echo 'touch ran' > scripts/pre-commit; echo 'touch ran' > .hooks/pre-commit; touch ok",
    )
    assert done.stderr.count("Read-only file system") == 2, done.stderr
    assert (ws / "scripts/pre-commit").read_text() == "#!/bin/sh\nexit 0\n" and (ws / "ok").exists()


def test_a_bare_repository_in_the_workspace_is_held_whole_so_its_hooks_and_config_stay_the_hosts(ws):
    for name in ("objects", "refs", "hooks"):
        (ws / "mirror.git" / name).mkdir(parents=True)
    (ws / "mirror.git/HEAD").write_text("ref: refs/heads/main\n")
    (ws / "mirror.git/config").write_text("[core]\n\tbare = true\n")
    assert (str(ws / "mirror.git"), "directory") in scan(spec(ws))[0]


def test_a_repository_around_the_workspace_has_what_its_config_names_inside_the_workspace_held(tmp_path):
    (tmp_path / "checkout/.git").mkdir(parents=True)
    (tmp_path / "checkout/.git/config").write_text("[core]\n\thooksPath = app/hooks\n")
    ws = tmp_path / "checkout/app"
    (ws / "hooks").mkdir(parents=True)
    assert (str(ws / "hooks"), "directory") in scan(spec(ws))[0]


def test_a_script_a_command_setting_hands_to_an_interpreter_is_held_too(tmp_path, ws):
    (ws / ".git").mkdir()
    (ws / "tools").mkdir()
    (ws / "tools/strip.py").write_text("print()\n")
    environ = global_config(tmp_path, '[filter "nb"]\n\tclean = python3 tools/strip.py --keep\n')
    assert (str(ws / "tools/strip.py"), "file") in scan({**spec(ws), "environ": environ})[0]


def test_a_git_file_with_a_nul_byte_is_no_repository_and_stops_no_scan(ws):
    (ws / "sub").mkdir()
    (ws / "sub/.git").write_bytes(b"gitdir: a\0b\n")
    scan(spec(ws))  # neither at the start nor at the end's check: no exception


def test_a_held_file_replaced_on_the_host_during_the_run_is_named_after_it(tmp_path, ws):
    (ws / ".envrc").write_text("export A=1\n")
    guard = Guard(spec(ws), [], str(tmp_path / "run"))
    (ws / ".envrc").unlink()  # its mount is gone with the file: the run may write the new one
    (ws / ".envrc").write_text("export A=2\n")
    assert guard.newcomers() == [str(ws / ".envrc")]
    guard.release()


def test_a_held_folder_replaced_outside_the_run_is_named_after_it(tmp_path, ws):
    (ws / "sub/.git/hooks").mkdir(parents=True)
    guard = Guard(spec(ws), [], str(tmp_path / "run"))
    # a process outside the run renames the repository away and puts another folder at its name: the hold went
    # with the one renamed away, and the one a host git now finds was held nowhere (red team of the fd binds)
    (ws / "sub/.git").rename(ws / "sub/.git.away")
    (ws / "sub/.git/hooks").mkdir(parents=True)
    assert guard.newcomers() == [
        f"{ws}/sub/.git (not what the run held: it was put there while the run started or ran, "
        "and what stood there then was not held)"
    ]
    guard.release()


def test_the_end_of_a_run_opens_no_folder_through_a_link_on_the_way(tmp_path):
    from agentbox.sandbox.host_guard import _open_folder

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    os.close(_open_folder(str(tmp_path / "real")))
    with pytest.raises(OSError):
        _open_folder(str(tmp_path / "link"))


# A path git is given (core.hooksPath, an include's path, a .git file's gitdir) goes to the kernel as it is spelled:
# `x/../hooks`, where `x` is a link, is the folder above where `x` leads, not `hooks`. The guard resolves such a path
# as the kernel does, and holds what git then uses.


def linked(ws, hooks_path="x/../hooks"):
    """A repository whose hooks path steps back out of the link `x -> sub/deeper`, with a hooks folder both where
    the path's spelling and where the kernel leads; each hook notes which one ran."""
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "config", "core.hooksPath", hooks_path], check=True)
    (ws / "sub/deeper").mkdir(parents=True)
    (ws / "x").symlink_to("sub/deeper")
    for hooks in ("hooks", "sub/hooks"):
        (ws / hooks).mkdir()
        (ws / hooks / "pre-commit").write_text(f"#!/bin/sh\necho {hooks} >> {ws}/.ran\n")
        (ws / hooks / "pre-commit").chmod(0o755)


def git_env(tmp_path):
    return {
        **os.environ,
        "HOME": str(tmp_path / "nohome"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }


def test_a_hooks_path_that_steps_out_of_a_link_is_not_the_folder_its_spelling_names_but_where_git_runs_hooks(
    tmp_path, ws
):
    from agentbox.sandbox.host_guard import _resolve

    linked(ws)
    git = ["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=git_env(tmp_path))
    assert (ws / ".ran").read_text() == "sub/hooks\n"  # the hook git ran
    named = subprocess.run([*git, "rev-parse", "--git-path", "hooks"], capture_output=True, text=True, check=True)
    assert named.stdout.strip() == "x/../hooks"  # what git hands the kernel, relative to the worktree
    assert os.path.normpath(os.path.join(ws, named.stdout.strip())) == str(ws / "hooks")  # the textual answer: wrong
    assert os.path.realpath(os.path.join(ws, named.stdout.strip())) == str(ws / "sub/hooks")
    assert _resolve(str(ws), f"{ws}/x/../hooks", lambda p: True) == str(ws / "sub/hooks")


def test_a_hooks_path_through_a_link_the_run_could_replace_is_refused_and_one_freed_by_name_holds_where_it_leads(ws):
    linked(ws)
    with pytest.raises(SandboxError, match=rf"host-executed path {ws}/x is a symbolic link \(sandbox layer\)"):
        scan(spec(ws))  # the run could point `x` at a folder of its own, and the hooks with it
    existing = dict(scan(spec(ws, writable=["x"]))[0])  # as the refusal says
    assert existing[str(ws / "sub/hooks")] == "directory" and str(ws / "hooks") not in existing
    assert (
        existing[str(ws / "sub/deeper")] == "directory"
    )  # what `..` stepped out of: replaced, it would lead elsewhere


def test_a_hooks_path_through_a_link_outside_the_workspace_holds_the_hooks_folder_the_link_leads_to_in_it(tmp_path, ws):
    (ws / ".git").mkdir()
    (ws / "sub/deeper").mkdir(parents=True)
    (ws / "sub/hooks").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/x").symlink_to(ws / "sub/deeper")
    environ = global_config(tmp_path, f"[core]\n\thooksPath = {tmp_path}/outside/x/../hooks\n")
    existing = dict(scan({**spec(ws), "environ": environ})[0])
    # spelled, it names {tmp_path}/outside/hooks, outside the workspace: nothing would have been held
    assert existing[str(ws / "sub/hooks")] == "directory" and existing[str(ws / "sub/deeper")] == "directory"


def test_a_file_included_through_a_link_outside_the_workspace_is_held_where_git_reads_it(tmp_path, ws):
    (ws / ".git").mkdir()
    (ws / "sub/deeper").mkdir(parents=True)
    (ws / "sub/hooks").mkdir()
    (ws / "sub/team.gitconfig").write_text("[core]\n\thooksPath = sub/hooks\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/x").symlink_to(ws / "sub/deeper")
    (tmp_path / "outside/team.gitconfig").write_text("[core]\n\thooksPath = hooks\n")  # what the spelling names
    environ = global_config(tmp_path, f"[include]\n\tpath = {tmp_path}/outside/x/../team.gitconfig\n")
    read = subprocess.run(
        ["git", "-C", str(ws), "config", "--includes", "core.hooksPath"],
        env={**os.environ, **environ},
        capture_output=True,
        text=True,
    )
    assert read.stdout.strip() == "sub/hooks"  # git read the file in the workspace
    existing = dict(scan({**spec(ws), "environ": environ})[0])
    assert existing[str(ws / "sub/team.gitconfig")] == "file" and existing[str(ws / "sub/hooks")] == "directory"
    assert str(ws / "hooks") not in existing


def test_a_git_file_whose_gitdir_steps_out_of_a_link_in_the_workspace_is_refused(ws):
    (ws / "sub/deeper").mkdir(parents=True)
    (ws / "sub/repo.git").mkdir()
    (ws / "x").symlink_to("sub/deeper")
    (ws / ".git").write_text("gitdir: x/../repo.git\n")  # git's repository: sub/repo.git
    with pytest.raises(SandboxError, match=rf"host-executed path {ws}/x is a symbolic link"):
        scan(spec(ws))
    assert (str(ws / "sub/repo.git"), "directory") in scan(spec(ws, writable=["x"]))[0]


def test_a_folder_a_configured_path_steps_out_of_is_held_so_the_run_cannot_make_it_a_link(ws):
    (ws / ".git").mkdir()
    (ws / ".git/config").write_text("[core]\n\thooksPath = tools/../hooks\n[alias]\n\tst = !gone/../bin/st\n")
    (ws / "tools").mkdir()
    (ws / "hooks").mkdir()
    existing, absent = scan(spec(ws))
    assert (str(ws / "tools"), "directory") in existing and (str(ws / "hooks"), "directory") in existing
    assert (str(ws / "gone"), "directory", "") in absent  # absent: a folder placeholder, so it cannot be made either


def test_a_folder_stepped_out_of_that_is_held_already_or_pinned_is_not_held_again(ws):
    (ws / ".git").mkdir()
    (ws / ".git/config").write_text("[include]\n\tpath = ../project.gitconfig\n")  # out of .git, held whole
    (ws / "project.gitconfig").write_text("[core]\n\thooksPath = app/../app/hooks\n")  # out of app, pinned
    (ws / "app/hooks").mkdir(parents=True)
    existing = dict(scan(spec(ws))[0])
    assert existing[str(ws / "app/hooks")] == "directory" and str(ws / "app") not in existing


def test_a_hooks_path_through_a_loop_of_links_refuses_the_run(tmp_path, ws):
    (ws / ".git").mkdir()
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    environ = global_config(tmp_path, f"[core]\n\thooksPath = {tmp_path}/a/hooks\n")
    with pytest.raises(SandboxError, match="leads through too many symbolic links"):
        scan({**spec(ws), "environ": environ})


def test_a_link_in_a_held_folder_whose_target_steps_out_of_a_folder_the_run_could_replace_holds_that_folder(ws):
    repository(ws)
    (ws / "scripts/x").mkdir()
    (ws / ".git/hooks/pre-commit").symlink_to("../../scripts/x/../pre-commit")
    existing = dict(scan(spec(ws))[0])
    assert existing[str(ws / "scripts/pre-commit")] == "file" and existing[str(ws / "scripts/x")] == "directory"
    (ws / ".git/hooks/pre-push").symlink_to("../../scripts/gone/../pre-commit")
    with pytest.raises(SandboxError, match=r"steps back \(\.\.\) out of .*/scripts/gone, which does not exist"):
        scan(spec(ws))


def test_a_file_where_a_folder_of_a_path_or_hooks_path_would_be_is_held_so_the_run_cannot_replace_it(ws):
    (ws / ".git").mkdir()
    (ws / ".git/config").write_text("[core]\n\thooksPath = README/hooks\n")
    (ws / "README").write_text("")
    (ws / "tool").write_text("")
    (ws / "bin").write_text("")
    existing, _ = scan({**spec(ws), "path": f"{ws}/tool/bin:{ws}/bin"})
    for name in ("README", "tool", "bin"):
        assert (str(ws / name), "file") in existing, name


def test_a_path_entry_through_a_link_outside_the_workspace_that_leads_through_one_in_it_is_refused(tmp_path, ws):
    (ws / "real/bin").mkdir(parents=True)
    (ws / "tools").symlink_to("real")
    (tmp_path / "outside").symlink_to(ws)
    with pytest.raises(SandboxError, match=rf"host-executed path {ws}/tools is a symbolic link"):
        scan({**spec(ws), "path": f"{tmp_path}/outside/tools/bin"})


def test_the_record_of_held_placeholders_is_found_once_per_start_for_its_check_and_its_guard(tmp_path, ws, monkeypatch):
    from agentbox.compile.compiler import compile_plan
    from agentbox.core.profile import load_profile
    from agentbox.sandbox import host_guard, session, startup
    from agentbox.sandbox.session import cleanup, entry_from_plan, materialize

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path / "abhome"))
    entry = entry_from_plan(compile_plan(load_profile(profile(tmp_path)), str(ws), home=str(tmp_path)), [])
    run_dir = str(tmp_path / "run")
    materialize(entry, run_dir)
    found, real = [], host_guard.guard_folder

    def guard_folder(*args):
        found.append(args)
        return real(*args)

    for module in (session, startup):
        monkeypatch.setattr(module, "guard_folder", guard_folder)
    monkeypatch.setattr(host_guard, "guard_folder", lambda *args: pytest.fail("the guard looked for it again"))
    started = startup.Started(entry, run_dir, "guard-" + os.urandom(4).hex())
    try:
        assert started.guard is not None and len(found) == 1
    finally:
        cleanup(started._run[2], run_dir, started)


@pytest.fixture
def unlistable(monkeypatch):
    """Makes a folder execute-only (0111), as a run can: a user goes through it but cannot list it. Root lists it
    regardless, so to root the guard is told it cannot, as the kernel tells a user."""
    shut: set[str] = set()
    if os.geteuid() == 0:
        real = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: str(path) not in shut and real(path, mode, **kw))

    def make(folder):
        folder.chmod(0o111)
        shut.add(str(folder))

    yield make
    for folder in shut:
        os.chmod(folder, 0o755)


def test_a_folder_the_host_user_cannot_list_at_the_start_is_held_whole(ws, unlistable):
    (ws / "hid/repo/.git").mkdir(parents=True)
    unlistable(ws / "hid")
    assert (str(ws / "hid"), "directory") in scan(spec(ws))[0]


def test_a_folder_the_run_made_unlistable_is_named_after_it_with_why(tmp_path, ws, unlistable):
    guard = Guard(spec(ws), [], str(tmp_path / "run"))
    (ws / "hid/repo/.git").mkdir(parents=True)  # what the run left below it, which git on the host still finds
    unlistable(ws / "hid")
    assert guard.newcomers() == [f"{ws}/hid (a folder this user cannot list: what the run left in it cannot be seen)"]
    guard.release()


def test_a_workspace_the_host_user_cannot_list_refuses_the_run(ws, unlistable):
    unlistable(ws)
    with pytest.raises(SandboxError, match=r"cannot be listed by this user \(host_executed, sandbox layer\)"):
        scan(spec(ws))


def venv(ws):
    """A virtual environment's shape, as `python3 -m venv .venv` leaves it."""
    (ws / ".venv/bin").mkdir(parents=True)
    (ws / ".venv/lib/python3.11/site-packages").mkdir(parents=True)
    (ws / ".venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    return ws / ".venv"


def test_an_activated_virtual_environment_on_path_is_held_whole_with_what_its_python_loads(ws):
    found, _ = scan({**spec(ws), "path": f"{venv(ws)}/bin:/usr/bin"})
    assert (str(ws / ".venv"), "directory") in found  # its site-packages, where a .pth runs at every python start


def test_a_virtual_environment_or_its_bin_freed_by_name_stays_writable(ws):
    venv(ws)
    for freed in (".venv", ".venv/bin"):
        found, _ = scan({**spec(ws, writable=[freed]), "path": f"{ws}/.venv/bin"})
        assert not any(p.startswith(str(ws / ".venv")) for p, _ in found)


def test_path_holding_the_bin_of_a_workspace_that_is_a_virtual_environment_refuses_the_run(ws):
    (ws / "bin").mkdir()
    (ws / "pyvenv.cfg").write_text("home = /usr/bin\n")
    with pytest.raises(SandboxError, match=r"virtual environment that is the workspace .* \(host_executed, sandbox"):
        scan({**spec(ws), "path": f"{ws}/bin"})


@needs_bwrap
def test_a_run_cannot_plant_a_pth_file_the_hosts_next_python_of_the_activated_environment_would_run(tmp_path, env, ws):
    site = venv(ws) / "lib/python3.11/site-packages"
    done = sandbox_run(
        {**env, "PATH": f"{ws}/.venv/bin:{env['PATH']}"}, profile(tmp_path), ws, f"echo 'import os' > {site}/x.pth"
    )
    assert "Read-only file system" in done.stderr and not (site / "x.pth").exists()


def test_a_hooks_path_whose_name_is_no_utf8_is_held_under_the_name_git_runs_hooks_from(ws):
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    with open(ws / ".git/config", "ab") as f:
        f.write(b"[core]\n\thooksPath = hooks-\xe9\n")  # latin-1 "hooks-é", as a user's config may hold it
    hooks = os.path.join(os.fsencode(ws), b"hooks-\xe9")
    _, absent = scan(spec(ws))
    assert (os.fsdecode(hooks), "directory", "") in absent  # the placeholder bwrap makes is where git looks


def test_a_git_file_whose_gitdir_is_no_utf8_holds_the_repository_it_names(ws):
    os.makedirs(os.path.join(os.fsencode(ws), b"store-\xe9/repo.git"))
    (ws / ".git").write_bytes(b"gitdir: store-\xe9/repo.git\n")
    existing = dict(scan(spec(ws))[0])
    assert existing.get(os.fsdecode(os.path.join(os.fsencode(ws), b"store-\xe9/repo.git"))) == "directory"


def _fds(args: list[str]) -> list[int]:
    """The descriptors a guard's options bind (bwrap must inherit them)."""
    return [int(args[i + 1]) for i, a in enumerate(args[:-1]) if a in ("--bind-fd", "--ro-bind-fd")]


def _bwrap(ws, args: list[str], script: str) -> subprocess.CompletedProcess:
    """`script` in a bubblewrap sandbox with the workspace bound read-write and the guard's options after it, as a
    run's argv has them."""
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", str(ws), str(ws), *args]
    argv += ["--chdir", str(ws), "--", "sh", "-c", script]
    return subprocess.run(argv, pass_fds=_fds(args), capture_output=True, text=True, timeout=60)


def _swap_for_link(folder, target, relative: bool = False) -> None:
    """What a concurrent run of the workspace does (redteam F4): the folder renamed away, a link in its place."""
    os.rename(folder, f"{folder}.d")
    os.symlink(os.path.relpath(target, os.path.dirname(folder)) if relative else target, folder)


@needs_bwrap
def test_a_folder_swapped_for_a_link_between_the_scan_and_the_hold_refuses_the_run_and_nothing_lands_outside(
    tmp_path, ws, monkeypatch
):
    from agentbox.sandbox import host_guard

    victim = tmp_path / "victim"  # another project of the user, outside the workspace
    (victim / ".git").mkdir(parents=True)
    (ws / "sub" / ".git").mkdir(parents=True)
    real = host_guard.scan

    def scan_then_swap(spec):
        found = real(spec)
        _swap_for_link(ws / "sub", victim, relative=True)  # sub/ was a folder holding .git when scanned
        return found

    monkeypatch.setattr(host_guard, "scan", scan_then_swap)
    try:
        guard = Guard(spec(ws), ["bwrap", "--bind", str(ws), str(ws)], str(tmp_path / "run"))
    except SandboxError as exc:
        assert f"{ws / 'sub'} changed between the scan" in str(exc)
    else:  # the run started: what it writes in sub/ must not land where the link leads
        try:
            _bwrap(ws, guard.args, "echo x > sub/PWNED")
        finally:
            guard.release()
    assert not (victim / "PWNED").exists()
    assert os.listdir(victim) == [".git"] and os.listdir(ws / "sub.d") == [".git"]


@needs_bwrap
@pytest.mark.parametrize("relative", [False, True])
def test_a_folder_swapped_for_a_link_after_its_hold_is_opened_is_mounted_nowhere_and_the_run_ends(
    tmp_path, ws, relative
):
    victim = tmp_path / "victim"
    (victim / ".git").mkdir(parents=True)
    (ws / "sub" / ".git").mkdir(parents=True)
    guard = Guard(spec(ws), ["bwrap", "--bind", str(ws), str(ws)], str(tmp_path / "run"))
    try:
        _swap_for_link(ws / "sub", victim, relative)  # before bubblewrap mounts what the guard opened
        done = _bwrap(ws, guard.args, "echo x > sub/PWNED")
    finally:
        guard.release()
    assert not (victim / "PWNED").exists() and os.listdir(victim) == [".git"]
    assert done.returncode != 0 and ("Race condition binding dirfd" in done.stderr or "No such file" in done.stderr)
    assert not (ws / "sub.d" / "PWNED").exists()


@needs_bwrap
def test_what_the_guard_binds_by_descriptor_holds_as_before_and_no_descriptor_reaches_the_command(tmp_path, ws):
    from agentbox.sandbox.view import SandboxView, mounts_of

    (ws / "sub" / ".git" / "hooks").mkdir(parents=True)
    (ws / ".envrc").write_text("use nix\n")
    guard = Guard(spec(ws), ["bwrap", "--bind", str(ws), str(ws)], str(tmp_path / "run"))
    try:
        assert _fds(guard.args) and "--bind" not in guard.args and "--ro-bind-fd" in guard.args
        done = _bwrap(
            ws,
            guard.args,
            "ls /proc/self/fd; echo x > sub/.git/hooks/pre-commit; echo x > .envrc; mv sub moved; touch sub/ok",
        )
    finally:
        guard.release()
    assert sorted(done.stdout.split()) == ["0", "1", "2", "3"]  # 3: the listing's own
    assert done.stderr.count("Read-only file system") == 2 and "Device or resource busy" in done.stderr
    assert (ws / "sub/ok").exists() and not (ws / "sub/.git/hooks/pre-commit").exists()
    assert (ws / ".envrc").read_text() == "use nix\n"
    view = SandboxView(mounts_of(["bwrap", "--bind", str(ws), str(ws), *guard.args]))
    assert not view.writable_host(str(ws / "sub/.git/hooks/pre-commit")) and view.shows_host(str(ws / ".envrc"))
    assert view.writable_host(str(ws / "sub/ok"))
