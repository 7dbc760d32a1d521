"""The MCP tool inventory starts a server only as the sandbox backend locks it down: it asks the backend by its
name (`get_backend`) for the locked-down command and starts exactly that, with the environment it gave; it builds
no sandbox of its own. A stub backend, registered under its own name, stands in for bubblewrap here."""

import os
import shutil
import sys
import textwrap

import pytest

from agentbox.compile.mcp_inventory import for_profile, inventory, list_tools
from agentbox.core.profile import McpServer, Profile
from agentbox.errors import SandboxError
from agentbox.sandbox import backend
from agentbox.sandbox.backend import LockedDownCommand, get_backend

# A server that names its one tool after what the backend put in its environment: the inventory started what the
# backend returned, as it returned it.
SERVER = textwrap.dedent("""
    import os
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("stubbed", log_level="WARNING")
    server.tool(name="started_by_" + os.environ["STARTED_BY"], structured_output=False)(lambda: "")
    server.run()
""")


class Stub:
    """A backend that records what it is asked to lock down, and starts the command as it is (or refuses it)."""

    name = "stub"

    def __init__(self, refuse: bool = False):
        self.refuse, self.asked = refuse, []

    def locked_down_command(self, command, args, env, home=None, bind_back=None, hide=()):
        hidden = ("/tmp", *((home,) if home else ()))
        self.asked.append({"command": command, "args": list(args), "env": dict(env), "home": home, "hide": hide})
        self.asked[-1]["bound_back"] = tuple(bind_back(hidden)) if bind_back else ()
        if self.refuse:
            raise SandboxError("the stub backend is not installed")
        return LockedDownCommand(argv=(command, *args), env={**env, "STARTED_BY": self.name})


@pytest.fixture
def stub(monkeypatch):
    def register(**kw) -> Stub:
        made = Stub(**kw)
        monkeypatch.setitem(backend._BACKENDS, made.name, "unused:unused")
        monkeypatch.setitem(backend._LOADED, made.name, made)
        return made

    return register


def test_the_inventory_starts_the_command_the_named_backend_locked_down_with_the_environment_it_gave(stub, tmp_path):
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    server = McpServer(command=sys.executable, args=[str(script)], env={"EXTRA": "1"})
    chosen = stub()
    assert list_tools("stubbed", server, backend="stub") == ("started_by_stub",)
    (asked,) = chosen.asked
    assert asked["command"] == sys.executable and asked["args"] == [str(script)] and asked["home"] is None
    assert asked["env"]["EXTRA"] == "1" and "STARTED_BY" not in asked["env"]
    # the server's own install lies in the hidden /tmp (pytest's tmp_path): bound back, as the run's sandbox binds it
    assert str(tmp_path) in asked["bound_back"]


def test_a_backend_that_cannot_lock_the_server_down_leaves_it_unstarted_and_says_why(stub, tmp_path):
    refusing = stub(refuse=True)
    marker = tmp_path / "started"
    server = McpServer(command="/bin/sh", args=["-c", f"touch {marker}"])
    found = inventory({"s": server}, ("s",), home="/home/u", backend="stub")
    assert found.tools == {} and found.problems == {"s": "SandboxError: the stub backend is not installed"}
    assert refusing.asked[0]["home"] == "/home/u" and not marker.exists()


def test_a_profile_with_a_tool_allowlist_asks_the_backend_it_is_given_and_hides_the_home_it_hides(stub, tmp_path):
    refusing = stub(refuse=True)
    profile = Profile.model_validate(
        {
            "name": "p",
            "harness": "claude-code",
            "mcp_servers": {"s": {"command": "/bin/true"}},
            "permission_intent": {
                "host_home": {"access": "hidden"},
                "mcp": {"servers": ["s"], "tools": {"s": ["a"]}},
            },
        }
    )
    assert "SandboxError" in for_profile(profile, home=str(tmp_path), backend="stub").problems["s"]
    assert [a["home"] for a in refusing.asked] == [str(tmp_path)]


@pytest.mark.parametrize("access", ["none", "read_only"])
def test_a_profile_without_a_workspace_has_the_project_hidden_from_its_servers_and_one_with_it_not(
    stub, tmp_path, access
):
    asked = stub(refuse=True)
    profile = Profile.model_validate(
        {
            "name": "p",
            "harness": "claude-code",
            "mcp_servers": {"s": {"command": "/bin/true"}},
            "permission_intent": {"workspace": {"access": access}, "mcp": {"servers": ["s"], "tools": {"s": ["a"]}}},
        }
    )
    for_profile(profile, backend="stub", workspace=str(tmp_path))
    assert [a["hide"] for a in asked.asked] == [(str(tmp_path),) if access == "none" else ()]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_bubblewrap_wraps_the_command_itself_hides_the_home_and_binds_back_what_the_caller_says_it_needs(tmp_path):
    needed = str(tmp_path / "home" / "venv")
    locked = get_backend().locked_down_command(
        "/usr/bin/env", ["A=1"], {"PATH": "/usr/bin"}, str(tmp_path / "home"), lambda hidden: [needed]
    )
    argv = list(locked.argv)
    assert os.path.basename(argv[0]) == "bwrap" and locked.env == {"PATH": "/usr/bin"}
    assert argv[-3:] == ["--", "/usr/bin/env", "A=1"]
    options = " ".join(argv[: argv.index("--")])
    for option in ("--tmpfs /tmp", f"--tmpfs {tmp_path}/home", f"--ro-bind {needed} {needed}", "--unshare-net"):
        assert option in options
