"""The tools an MCP server offers, asked from the server itself before a run.

Some harnesses can hide an MCP tool only by naming it in a deny rule, so a tool-level allowlist
needs the server's full tool list. The server is started locked down by the sandbox backend
(`SandboxBackend.locked_down_command`: host read-only, private /tmp and /run, the home hidden when the profile
hides it and AGENTBOX_HOME always, no network, no capability, and the run's seccomp denylist with new unix
sockets refused, the project hidden where the run has no workspace) so that asking it for its tools can neither
change anything nor learn what the run may not:
the server's command may be a file a run could have rewritten, it runs on the host here, before any run, and
its tool names come back into the run's config. Without the backend installed it is not started at all.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from agentbox.compile.mcp_binds import command_path, server_binds
from agentbox.core.profile import McpServer
from agentbox.sandbox import DEFAULT_BACKEND
from agentbox.sandbox.backend import LockedDownCommand, get_backend

__all__ = ["list_tools", "inventory", "for_profile", "Inventory"]


def _locked_down(
    name: str, server: McpServer, home: str | None = None, backend: str = DEFAULT_BACKEND, hide: tuple[str, ...] = ()
) -> LockedDownCommand:
    """The server's command as the sandbox backend starts it locked down. `home`: the home to hide (the run's,
    when its profile hides it), None to leave it in view; `hide`: what else the run does not see (its project,
    under workspace: none)."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    return get_backend(backend).locked_down_command(
        server.command,
        server.args,
        {**env, **server.env},
        home,
        # the server's own install, when it lies in a hidden folder, as the run's sandbox binds it
        lambda hidden: server_binds(name, server, hidden),
        hide,
    )


def list_tools(
    name: str,
    server: McpServer,
    timeout: float = 30.0,
    home: str | None = None,
    backend: str = DEFAULT_BACKEND,
    hide: tuple[str, ...] = (),
) -> tuple[str, ...]:
    # The server's own stderr is the process's real one: a caller capturing sys.stderr (a StringIO, which has no
    # file descriptor) must not make asking the server fail. Swapped before the import too: the MCP client
    # binds sys.stderr as its default when first imported.
    shown, sys.stderr = sys.stderr, sys.__stderr__
    try:
        return _ask(name, server, timeout, home, backend, hide)
    finally:
        sys.stderr = shown


def _ask(
    name: str, server: McpServer, timeout: float, home: str | None, backend: str, hide: tuple[str, ...]
) -> tuple[str, ...]:
    import anyio
    from mcp import Client, StdioServerParameters

    locked = _locked_down(name, server, home, backend, hide)
    params = StdioServerParameters(command=locked.argv[0], args=list(locked.argv[1:]), env=locked.env)

    async def main() -> tuple[str, ...]:
        with anyio.fail_after(timeout):
            async with Client(params, mode="legacy") as client:
                return tuple(sorted(t.name for t in (await client.list_tools()).tools))

    return anyio.run(main)


@dataclass(frozen=True)
class Inventory:
    """What the servers answered: each server's tools, or why it could not be asked."""

    tools: dict[str, tuple[str, ...]] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)

    def compile_args(self) -> dict:
        return {"mcp_tools": self.tools, "mcp_problems": self.problems}


def _why(exc: BaseException) -> str:
    """The first real failure: anyio wraps a server that died at start-up in exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "it did not answer tools/list in time"
    return f"{type(exc).__name__}: {exc}"[:300]


def _missing(server: McpServer) -> str | None:
    if command_path(server.command) is not None:
        return None
    if os.path.isabs(server.command):
        return f"{server.command} does not exist or is not executable"
    return f"{server.command} is not on PATH"


def inventory(
    servers: dict[str, McpServer],
    names: tuple[str, ...],
    timeout: float = 30.0,
    home: str | None = None,
    backend: str = DEFAULT_BACKEND,
    hide: tuple[str, ...] = (),
) -> Inventory:
    """Tool lists of the named servers, each asked inside the sandbox backend named `backend`; a server that cannot
    be asked is named with the reason (compile then reports the allowlist partial and says why)."""
    out = Inventory()
    for name in names:
        problem = _missing(servers[name])
        if problem is None:
            try:
                out.tools[name] = list_tools(name, servers[name], timeout, home, backend, hide)
                continue
            except Exception as exc:  # noqa: BLE001 - any failure means "inventory unknown", with its reason
                problem = _why(exc)
        out.problems[name] = problem
    return out


def for_profile(
    profile, home: str | None = None, backend: str = DEFAULT_BACKEND, workspace: str | None = None
) -> Inventory:
    """The inventory a compile of `profile` needs: only tool allowlists need one (asked afresh every time).
    `home`: the run's home (default $HOME), hidden from the servers when the profile hides it; `workspace`: the
    run's project (default the current folder), hidden from them when the profile gives the run none: what a
    server reads it may hand back as a tool name, into the run's config."""
    intent = profile.permission_intent
    if not intent.mcp.tools:
        return Inventory()
    home = (home or os.environ.get("HOME") or "/root") if intent.host_home.access == "hidden" else None
    hide = (workspace or os.getcwd(),) if intent.workspace.access == "none" else ()
    return inventory(profile.mcp_servers, intent.mcp.servers, home=home, backend=backend, hide=hide)
