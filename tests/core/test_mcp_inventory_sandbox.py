"""The MCP tool inventory starts a profile's server on the host, before any run and maybe before any gate: it
asks it inside a sandbox that holds what a run's does. Observed from the server itself, which names its tools
after what it found."""

import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from agentbox.compile.mcp_inventory import list_tools
from agentbox.core.profile import McpServer

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

# A server whose tool names are its observations: its effective capabilities, whether it could make a unix socket,
# and whether it could write a host sysctl (it writes back the value it read, so nothing changes either way).
OBSERVER = textwrap.dedent("""
    import socket
    from mcp.server.mcpserver import MCPServer

    cap = next(l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff:"))
    try:
        socket.socket(socket.AF_UNIX)
        unix = "unix_socket_made"
    except OSError:
        unix = "unix_socket_refused"
    try:
        path = "/proc/sys/vm/swappiness"
        value = open(path).read()
        open(path, "w").write(value)
        sysctl = "sysctl_written"
    except OSError:
        sysctl = "sysctl_refused"
    server = MCPServer("observer", log_level="WARNING")
    for name in (f"capeff_{cap}", unix, sysctl):
        server.tool(name=name, structured_output=False)(lambda: "")
    server.run()
""")


def test_the_inventory_asks_a_server_that_holds_no_capability_no_unix_socket_and_no_host_sysctl(tmp_path):
    script = tmp_path / "observer.py"
    script.write_text(OBSERVER)
    tools = list_tools("observer", McpServer(command=sys.executable, args=[str(script)]))
    assert set(tools) == {"capeff_0000000000000000", "unix_socket_refused", "sysctl_refused"}, tools


# A server that names a tool after each file it looks for: what it can read, it could hand back in the run's
# config. Told where to look in its environment, not its arguments: the sandbox binds back the folder of every
# argument that names a file.
READER = textwrap.dedent("""
    import os
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("reader", log_level="WARNING")
    for label, path in (a.split("=", 1) for a in os.environ["LOOK"].split(";")):
        server.tool(name=f"{label}_read" if os.path.isfile(path) else f"{label}_hidden", structured_output=False)(
            lambda: "")
    server.run()
""")


@pytest.fixture
def place(tmp_path):
    # outside /tmp, which is private to the server anyway: only the mounts under test can hide these
    base = Path("/var/tmp") / f"agentbox-inventory-{tmp_path.name}-{os.getpid()}"
    (base / "srv").mkdir(parents=True)
    (base / "srv" / "reader.py").write_text(READER)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _ask(place, home=None, hide=(), **paths):
    server = McpServer(
        command=sys.executable,
        args=[str(place / "srv" / "reader.py")],
        env={"LOOK": ";".join(f"{k}={v}" for k, v in paths.items())},
    )
    return set(list_tools("reader", server, home=home, hide=hide))


def _plant(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("secret\n")
    return path


def test_the_inventory_hides_the_runs_home_from_the_server_when_the_profile_hides_it(place, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(place / "state"))
    key = _plant(place / "home" / ".ssh" / "id_canary")
    assert _ask(place, home=str(place / "home"), key=key) == {"key_hidden"}
    assert _ask(place, home=None, key=key) == {"key_read"}  # the control: a home the profile shows


def test_the_inventory_never_shows_the_server_agentbox_home(place, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(place / "state"))
    kept = _plant(place / "state" / "state" / "other" / "claude-code" / ".claude.json")
    assert _ask(place, kept=kept) == {"kept_hidden"}
    monkeypatch.setenv("AGENTBOX_HOME", str(place / "elsewhere"))
    assert _ask(place, kept=kept) == {"kept_read"}  # the control: the same file, not Agent-Box's state now


def test_the_inventory_hides_the_project_from_the_server_when_the_run_has_no_workspace(place, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(place / "state"))
    secret = _plant(place / "project" / "secret.txt")
    monkeypatch.chdir(place / "project")  # `python -m` puts the current folder on sys.path: not bound back either
    monkeypatch.syspath_prepend(str(place / "project"))
    assert _ask(place, hide=(str(place / "project"),), secret=secret) == {"secret_hidden"}
    assert _ask(place, secret=secret) == {"secret_read"}  # the control: a run that sees its workspace


def test_a_server_asked_for_a_profile_without_a_workspace_reads_nothing_of_the_project(place, monkeypatch):
    from agentbox.compile.mcp_inventory import for_profile
    from agentbox.core.profile import Profile

    monkeypatch.setenv("AGENTBOX_HOME", str(place / "state"))
    secret = _plant(place / "project" / "secret.txt")
    reader = {"command": sys.executable, "args": [str(place / "srv" / "reader.py")], "env": {"LOOK": f"s={secret}"}}
    profile = Profile.model_validate(
        {
            "name": "p",
            "harness": "claude-code",
            "mcp_servers": {"reader": reader},
            "permission_intent": {
                "workspace": {"access": "none"},
                "mcp": {"servers": ["reader"], "tools": {"reader": ["s_read"]}},
            },
        }
    )
    assert for_profile(profile, workspace=str(place / "project")).tools == {"reader": ("s_hidden",)}
