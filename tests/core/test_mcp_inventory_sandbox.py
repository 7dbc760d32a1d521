"""The MCP tool inventory starts a profile's server on the host, before any run and maybe before any gate: it
asks it inside a sandbox that holds what a run's does. Observed from the server itself, which names its tools
after what it found."""

import shutil
import sys
import textwrap

import pytest

from agentbox.mcp_inventory import list_tools
from agentbox.profile import McpServer

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

# A server whose tool names are its observations: its effective capabilities, whether it could make a unix socket,
# and whether it could write a host sysctl (it writes back the value it read, so nothing changes either way).
OBSERVER = textwrap.dedent('''
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
''')


def test_the_inventory_asks_a_server_that_holds_no_capability_no_unix_socket_and_no_host_sysctl(tmp_path):
    script = tmp_path / "observer.py"
    script.write_text(OBSERVER)
    tools = list_tools("observer", McpServer(command=sys.executable, args=[str(script)]))
    assert set(tools) == {"capeff_0000000000000000", "unix_socket_refused", "sysctl_refused"}, tools
