"""The client-surface policy's decisions, on a sandbox view written out by hand (no sandbox runs here)."""

from __future__ import annotations

import pytest

from agentbox.acp_endpoint.policy import Refusal, SurfacePolicy
from agentbox.sandbox.view import SandboxView, mounts_of

WS = "/srv/project"
ARGV = [
    "bwrap",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    "--tmpfs",
    "/home/me",
    "--bind",
    "{run_dir}/config",
    "/tmp/agentbox/config",
    "--bind",
    WS,
    WS,
    "--ro-bind",
    f"{WS}/.agentbox/profiles/p/root/.mcp.json",
    f"{WS}/.mcp.json",
    "--tmpfs",
    f"{WS}/.agentbox",
    "--unshare-net",
    "--tmpfs",
    "/run",
    "--setenv",
    "A",
    "B",
    "--chdir",
    WS,
]


def policy(**kw) -> SurfacePolicy:
    base = dict(workspace=WS, workspace_access="read_write", shell="ask", view=SandboxView(mounts_of(ARGV)))
    return SurfacePolicy(**{**base, **kw})


@pytest.mark.parametrize(
    "path, shown",
    [
        ("/etc/hosts", True),
        (f"{WS}/src/a.py", True),
        ("/home/me/.ssh/id_ed25519", False),
        ("/tmp/x", False),
        ("/proc/self/environ", False),
        ("/run/docker.sock", False),
        (f"{WS}/.mcp.json", False),
        (f"{WS}/.agentbox/profiles/p/root/.mcp.json", False),
        ("/tmp/agentbox/config/settings.json", False),
    ],
)
def test_the_view_says_where_the_sandbox_shows_the_host_as_it_is(path, shown):
    assert SandboxView(mounts_of(ARGV)).shows_host(path) == shown


def test_a_later_mount_over_a_parent_hides_an_earlier_one_below_it():
    view = SandboxView(mounts_of(["bwrap", "--bind", "/tmp/ws", "/tmp/ws", "--tmpfs", "/tmp"]))
    assert not view.shows_host("/tmp/ws/a")


def test_writes_go_only_into_the_workspace_where_the_sandbox_lets_the_agent_write():
    p = policy()
    assert p.check_write(f"{WS}/a.txt") == f"{WS}/a.txt"
    for path, why in (
        ("/etc/passwd", "outside the workspace"),
        (f"{WS}/.mcp.json", "profile's own copy"),
        ("relative.txt", "not an absolute path"),
    ):
        with pytest.raises(Refusal, match=why):
            p.check_write(path)
    with pytest.raises(Refusal, match="workspace access is read_only"):
        policy(workspace_access="read_only").check_write(f"{WS}/a.txt")


def test_reads_go_where_the_agent_could_read_and_nowhere_under_workspace_none():
    assert policy().check_read("/etc/hosts") == "/etc/hosts"
    with pytest.raises(Refusal, match="private to the sandbox"):
        policy().check_read("/home/me/.aws/credentials")
    with pytest.raises(Refusal, match="workspace access is none"):
        policy(workspace_access="none").check_read(f"{WS}/a.txt")


def test_capabilities_are_the_clients_offer_narrowed_by_the_intent():
    offer = {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
        "_meta": {"terminal-auth": True},
        "auth": {"terminal": True},
    }
    assert policy().client_capabilities(offer) == {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
    }
    assert policy(workspace_access="read_only", shell="deny").client_capabilities(offer) == {
        "fs": {"readTextFile": True, "writeTextFile": False},
        "terminal": False,
    }
    assert policy().client_capabilities(None)["fs"] == {"readTextFile": False, "writeTextFile": False}


def test_auth_methods_that_would_run_a_command_on_the_host_are_not_shown_to_the_client():
    answer = {
        "authMethods": [
            {"id": "login", "type": "terminal", "args": ["--cli"]},
            {"id": "meta", "_meta": {"terminal-auth": {"command": "/usr/bin/node"}}},
            {"id": "key", "name": "API key"},
        ]
    }
    assert [m["id"] for m in SurfacePolicy.agent_answer(answer)["authMethods"]] == ["key"]


OPTIONS = [
    {"optionId": "always", "kind": "allow_always", "name": "a"},
    {"optionId": "once", "kind": "allow_once", "name": "o"},
    {"optionId": "no", "kind": "reject_once", "name": "n"},
]


def test_a_shell_request_under_deny_is_answered_reject_without_asking():
    d = policy(shell="deny").permission({"toolCall": {"kind": "execute"}, "options": OPTIONS})
    assert d.answer == "no"
    assert policy(shell="deny").permission({"toolCall": {"kind": "execute"}, "options": OPTIONS[:2]}).answer == ""


def test_a_shell_request_under_ask_loses_its_always_option_and_a_widening_mode_is_never_offered():
    d = policy().permission({"toolCall": {"kind": "execute"}, "options": OPTIONS})
    assert [o["optionId"] for o in d.options] == ["once", "no"]
    plan_exit = [{"optionId": "bypassPermissions", "kind": "allow_always", "name": "b"}, *OPTIONS[1:]]
    d = policy(refuse_modes={"bypassPermissions": "skips asks"}).permission(
        {"toolCall": {"kind": "switch_mode"}, "options": plan_exit}
    )
    assert [o["optionId"] for o in d.options] == ["once", "no"]


def test_session_requests_keep_to_the_workspace_and_the_profiles_mcp_servers():
    p = policy(session_mcp=({"name": "github", "command": "gh-mcp", "args": [], "env": []},))
    out, notes = p.session_params(
        "session/new", {"cwd": WS, "mcpServers": [{"name": "evil", "command": "x", "args": [], "env": []}]}
    )
    assert [s["name"] for s in out["mcpServers"]] == ["github"] and "evil" in notes[0]
    with pytest.raises(Refusal, match="outside the workspace"):
        p.session_params("session/new", {"cwd": "/", "mcpServers": []})
    with pytest.raises(Refusal, match="additionalDirectories"):
        p.session_params("session/new", {"cwd": WS, "additionalDirectories": ["/etc"]})


def test_meta_keys_are_refused_kept_or_stripped_by_the_agents_facts():
    p = policy(meta_keep=("systemPrompt",), meta_refuse={"claudeCode.options": "SDK options"})
    with pytest.raises(Refusal, match=r"_meta.claudeCode.options.env would widen"):
        p.meta("session/new", {"claudeCode": {"options": {"env": {"X": "1"}}}})
    kept, notes = p.meta("session/new", {"systemPrompt": "hi", "other": 1})
    assert kept == {"systemPrompt": "hi"} and "other" in notes[0]
    assert p.meta("session/prompt", {"systemPrompt": "hi"})[0] == {}, "only session requests carry kept keys"


def test_a_mode_that_widens_the_plan_is_refused_by_set_mode_and_by_the_mode_config_option():
    p = policy(refuse_modes={"full-access": "approval never"})
    with pytest.raises(Refusal, match="full-access"):
        p.mode("session/set_mode", "full-access")
    with pytest.raises(Refusal, match="full-access"):
        p.config_option({"configId": "mode", "value": "full-access"})
    p.config_option({"configId": "model", "value": "full-access"})


def _real_tree(tmp_path):
    """A workspace (bound writable, as the sandbox binds it), a folder outside it, and the policy over them."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    argv = ["bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", str(ws), str(ws)]
    return (
        ws,
        outside,
        SurfacePolicy(workspace=str(ws), workspace_access="read_write", shell="ask", view=SandboxView(mounts_of(argv))),
    )


def test_a_planted_symlink_out_of_the_workspace_refuses_a_write_that_another_one_leads_back_in(tmp_path):
    ws, outside, p = _real_tree(tmp_path)
    (ws / "out").symlink_to(outside)
    (outside / "back").symlink_to(ws)  # the resolved path is inside again: only the way there tells
    with pytest.raises(Refusal, match=r"out is a symlink to .*outside, outside what the agent may write"):
        p.check_write(f"{ws}/out/back/a.txt")
    hidden = SurfacePolicy(
        workspace=str(ws),
        workspace_access="read_write",
        shell="ask",
        view=SandboxView(
            mounts_of(["bwrap", "--ro-bind", "/", "/", "--tmpfs", str(outside), "--bind", str(ws), str(ws)])
        ),
    )
    (ws / "a.txt").write_text("x")
    with pytest.raises(Refusal, match="which the agent may not read"):  # the way runs through a folder it cannot see
        hidden.check_read(f"{ws}/out/back/a.txt")


def test_a_symlink_inside_the_workspace_is_followed_and_the_client_gets_the_resolved_path(tmp_path):
    ws, _, p = _real_tree(tmp_path)
    (ws / "src").mkdir()
    (ws / "alias").symlink_to(ws / "src")
    assert p.check_write(f"{ws}/alias/a.txt") == f"{ws}/src/a.txt"


def test_the_hosts_own_symlinks_before_the_workspace_are_followed_as_the_sandbox_follows_them(tmp_path):
    ws, _, p = _real_tree(tmp_path)
    (tmp_path / "to-ws").symlink_to(ws)  # not in a folder the agent may write: not one it could have planted
    assert p.check_write(f"{tmp_path}/to-ws/a.txt") == f"{ws}/a.txt"
