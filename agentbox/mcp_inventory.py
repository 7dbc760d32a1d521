"""The tools an MCP server offers, asked from the server itself before a run.

Some harnesses can hide an MCP tool only by naming it in a deny rule, so a tool-level allowlist
needs the server's full tool list. The server is started inside a locked-down bubblewrap (host
read-only, private /tmp, no network) so that asking it for its tools cannot change anything.
"""

from __future__ import annotations

import os
import shutil
import sys

from .profile import McpServer

__all__ = ["list_tools", "inventory"]


def _locked_down(command: str, args: tuple[str, ...]) -> tuple[str, list[str]]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return command, list(args)
    # Folders a server expects under /tmp exist again, empty, on the private /tmp: what it writes
    # there at start-up (a log, a marker) never reaches the host.
    # Elsewhere, a file the server would create (an absolute argument that does not exist yet) gets
    # an empty private folder in place of its parent.
    dirs = sorted({os.path.dirname(a) for a in args if a.startswith("/tmp/") and os.path.dirname(a) != "/tmp"})
    made = [x for d in dirs for x in ("--dir", d)]
    fresh = sorted({os.path.dirname(a) for a in args if os.path.isabs(a) and not a.startswith("/tmp/")
                    and not os.path.exists(a) and os.path.isdir(os.path.dirname(a)) and os.path.dirname(a) != "/"})
    made += [x for d in fresh for x in ("--tmpfs", d)]
    # A server started from this interpreter (`python -m ...`) must still find its packages when they
    # live under /tmp (an editable install in a temporary checkout, a PYTHONPATH entry).
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    keep = sorted({p for p in (*sys.path, here) if p.startswith("/tmp/") and os.path.isdir(p)})
    made += [x for d in keep for x in ("--ro-bind", d, d)]
    return bwrap, ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *made,
                   "--unshare-net", "--unshare-pid", "--die-with-parent", "--", command, *args]


def list_tools(server: McpServer, timeout: float = 30.0) -> tuple[str, ...]:
    import anyio
    from mcp import Client, StdioServerParameters

    command, args = _locked_down(server.command, server.args)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    params = StdioServerParameters(command=command, args=args, env={**env, **server.env})

    async def main() -> tuple[str, ...]:
        with anyio.fail_after(timeout):
            async with Client(params, mode="legacy") as client:
                return tuple(sorted(t.name for t in (await client.list_tools()).tools))

    return anyio.run(main)


def inventory(servers: dict[str, McpServer], names: tuple[str, ...], timeout: float = 30.0) -> dict[str, tuple[str, ...]]:
    """Tool lists of the named servers; a server that cannot be asked is left out (compile then warns)."""
    out: dict[str, tuple[str, ...]] = {}
    for name in names:
        try:
            out[name] = list_tools(servers[name], timeout)
        except Exception:  # noqa: BLE001 - any failure just means "inventory unknown"
            continue
    return out
