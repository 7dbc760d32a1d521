"""A bind that would put back what a private mount hid is refused before any run starts (`sandbox.cover`)."""

from __future__ import annotations

import pytest

from agentbox.core.plan import RuntimeRequirements
from agentbox.errors import SandboxError
from agentbox.harnesses.acp import acp_binds
from agentbox.sandbox.bwrap import SandboxRequest, compile_bwrap
from agentbox.sandbox.cover import uncovered


def request(**kw):
    return SandboxRequest(
        requirements=RuntimeRequirements(workspace="read_only", network="none", host_home="hidden"),
        workspace="/w/p",
        home="/home/u",
        **kw,
    )


@pytest.mark.parametrize(
    "binds",
    [
        {"ro_binds": ("/home/u",)},
        {"ro_binds": ("/home/u/",)},
        # a read-only bind above the home is the read-only root's own view and never emitted; a writable one is
        {"rw_binds": ("/home",)},
        {"rw_binds": ("/",)},
    ],
)
def test_a_bind_of_the_hidden_home_or_a_folder_above_it_is_refused_at_compile(binds):
    with pytest.raises(SandboxError, match=r"bind of .* would put back (/home/u|/tmp), .*\(sandbox layer\)"):
        compile_bwrap(request(**binds))


def test_a_writable_bind_of_the_hosts_tmp_is_refused_too():
    with pytest.raises(SandboxError, match="would put back /tmp"):
        compile_bwrap(request(rw_binds=("/tmp",)))


def test_a_bind_below_a_hidden_folder_is_what_a_plan_means_to_show_and_passes():
    assert compile_bwrap(request(ro_binds=("/home/u/.local/share/agentbox/harnesses/codex/1",))).argv


def test_only_a_bind_after_the_private_mount_undoes_it():
    assert uncovered(["bwrap", "--ro-bind", "/", "/", "--tmpfs", "/home/u"]) is None
    assert uncovered(["bwrap", "--tmpfs", "/home/u", "--ro-bind-fd", "7", "/home"]) == ("/home", "/home/u")


def test_option_values_are_never_read_as_options():
    # a variable's value that spells a bind, and the command after `--`, are not mounts
    argv = ["bwrap", "--tmpfs", "/home/u", "--setenv", "X", "--bind", "--chdir", "/w", "--", "--bind", "/", "/"]
    assert uncovered(argv) is None


def test_an_acp_adapter_installed_in_the_home_itself_binds_its_package_folder_not_the_home(tmp_path):
    home = tmp_path / "home"
    package = home / "node_modules" / "@zed-industries" / "codex-acp" / "bin"
    package.mkdir(parents=True)
    (package / "codex-acp.js").write_text("")
    (home / "node_modules" / ".bin").mkdir()
    (home / "node_modules" / ".bin" / "codex-acp").symlink_to(package / "codex-acp.js")
    binds = acp_binds("codex", str(home / "node_modules" / ".bin" / "codex-acp"))
    assert binds[0] == str(home / "node_modules")
    plan = SandboxRequest(
        requirements=RuntimeRequirements(workspace="read_only", network="none", host_home="hidden"),
        workspace=str(tmp_path / "ws"),
        home=str(home),
        ro_binds=binds,
    )
    assert ("--ro-bind", str(home / "node_modules"), str(home / "node_modules")) in zip(
        *[compile_bwrap(plan).argv[i:] for i in range(3)]
    )
