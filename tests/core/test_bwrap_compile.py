import pytest

from agentbox.errors import SandboxError
from agentbox.core.plan import RuntimeRequirements
from agentbox.sandbox.bwrap import SandboxRequest, compile_bwrap, coverage


def request(**kw):
    req = {"workspace": "read_only", "network": "none", "host_home": "hidden"}
    req.update(kw.pop("req", {}))
    return SandboxRequest(
        requirements=RuntimeRequirements(**req),
        workspace=kw.pop("workspace", "/w/p"),
        home=kw.pop("home", "/home/u"),
        **kw,
    )


def pairs(argv):
    return [tuple(argv[i : i + 3]) for i in range(len(argv))]


def test_a_read_only_workspace_is_bound_read_only():
    argv = compile_bwrap(request()).argv
    assert ("--ro-bind", "/w/p", "/w/p") in pairs(argv)
    assert ("--bind", "/w/p", "/w/p") not in pairs(argv)


def test_a_read_write_workspace_is_the_only_writable_host_path():
    argv = compile_bwrap(request(req={"workspace": "read_write"})).argv
    writable = [t for t in pairs(argv) if t[0] == "--bind"]
    assert [t[2] for t in writable] == ["/tmp/agentbox/config", "/w/p"]


def test_no_workspace_means_an_empty_tmpfs_in_its_place():
    argv = compile_bwrap(request(req={"workspace": "none"})).argv
    assert ("--tmpfs", "/w/p") in [tuple(argv[i : i + 2]) for i in range(len(argv))]


def test_network_none_unshares_the_network_and_unrestricted_does_not():
    assert "--unshare-net" in compile_bwrap(request()).argv
    assert "--unshare-net" not in compile_bwrap(request(req={"network": "unrestricted"})).argv


def test_a_shared_network_wants_the_abstract_socket_scope_whatever_the_compiling_kernel_has(monkeypatch):
    from agentbox.sandbox import landlock_scope

    monkeypatch.setattr(landlock_scope, "supported", lambda: False)  # compiled in a container without Landlock
    assert compile_bwrap(request(req={"network": "unrestricted"})).abstract_unix_scope
    assert not compile_bwrap(request(req={"network": "none"})).abstract_unix_scope  # its own abstract sockets


def test_a_remote_model_unshares_the_network_too_and_network_none_stays_exact():
    req = request(req={"model_endpoint": "api.example.com:443"})
    assert "--unshare-net" in compile_bwrap(req).argv  # the model is reached through the egress proxy
    assert coverage(req, "0.8.0")["command_network"].support == "exact"


def test_a_bubblewrap_outside_its_tested_range_is_never_exact():
    assert coverage(request(), "0.11.0")["workspace"].support == "partial"
    assert coverage(request(), None)["workspace"].support == "partial"


def test_the_run_holds_no_capability_and_cannot_make_a_user_namespace_whoever_starts_it():
    argv = compile_bwrap(request()).argv
    assert "--unshare-user" in argv and "--disable-userns" in argv
    assert ("--cap-drop", "ALL") in [tuple(argv[i : i + 2]) for i in range(len(argv))]


@pytest.mark.parametrize("network", ["none", "restricted", "unrestricted"])
def test_the_hosts_own_sockets_under_run_are_hidden_under_every_network_setting(network):
    extra = {"allow_domains": ("example.com",)} if network == "restricted" else {}
    argv = compile_bwrap(request(req={"network": network, **extra})).argv
    assert ("--tmpfs", "/run") in [tuple(argv[i : i + 2]) for i in range(len(argv))]


def test_a_hidden_home_is_a_tmpfs_and_the_process_tree_is_contained():
    argv = compile_bwrap(request()).argv
    assert ("--tmpfs", "/home/u") in [tuple(argv[i : i + 2]) for i in range(len(argv))]
    for flag in ("--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in argv


def test_a_workspace_that_contains_the_hidden_home_is_refused():
    with pytest.raises(SandboxError, match="contains the host home"):
        compile_bwrap(request(workspace="/home"))


@pytest.mark.parametrize("spelling", ["/{ws}/home", "{link}/home", "{ws}/x/../home"])
def test_a_workspace_that_contains_the_hidden_home_is_refused_however_home_is_spelled(tmp_path, spelling):
    ws = tmp_path / "ws"
    (ws / "home").mkdir(parents=True)
    (tmp_path / "link").symlink_to(ws)
    home = spelling.format(ws=ws, link=tmp_path / "link")  # `//tmp/...` is /tmp/... to the kernel
    with pytest.raises(SandboxError, match=f"contains the host home {ws}/home .HOME is"):
        compile_bwrap(request(workspace=str(ws), home=home))


def test_the_root_as_workspace_is_refused():
    with pytest.raises(SandboxError):
        compile_bwrap(request(workspace="/"))


def test_binaries_under_a_hidden_path_stay_visible_read_only():
    argv = compile_bwrap(request(ro_binds=("/home/u/.local/share/agentbox/harnesses/codex/1",))).argv
    assert (
        "--ro-bind",
        "/home/u/.local/share/agentbox/harnesses/codex/1",
        "/home/u/.local/share/agentbox/harnesses/codex/1",
    ) in pairs(argv)


def test_no_environment_value_ever_reaches_the_argv():
    plan = compile_bwrap(request(req={"env_allow": ("SECRET_TOKEN",)}))
    assert not any("SECRET" in a for a in plan.argv)


def test_a_loopback_model_on_a_privileged_port_is_refused_with_the_reason():
    with pytest.raises(SandboxError, match="below 1024"):
        compile_bwrap(request(req={"model_endpoint": "127.0.0.1:80"}))
