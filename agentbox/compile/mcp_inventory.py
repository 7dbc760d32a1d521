"""The tools an MCP server offers, asked from the server itself before a run.

Some harnesses can hide an MCP tool only by naming it in a deny rule, so a tool-level allowlist
needs the server's full tool list. The server is started inside a locked-down bubblewrap (host
read-only, /proc read-only, private /tmp and /run, the home hidden when the profile hides it and AGENTBOX_HOME
always, no network, its own user namespace with no capability, and the run's seccomp denylist with new unix
sockets refused) so that asking it for its tools can neither change anything nor learn what the run may not:
the server's command may be a file a run could have rewritten, it runs on the host here, before any run, and
its tool names come back into the run's config. Without bubblewrap it is not started at all.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field

from agentbox.compile.mcp_binds import command_path, server_binds
from agentbox.core.paths import is_within
from agentbox.core.profile import McpServer
from agentbox.sandbox.session import hide_state, state_home

__all__ = ["list_tools", "inventory", "for_profile", "Inventory"]


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_UNIX_FILTER = os.path.join(_PACKAGE, "sandbox", "unix_filter.py")


def _locked_down(name: str, server: McpServer, home: str | None = None) -> tuple[str, list[str]]:
    """`home`: the home to hide (the run's, when its profile hides it), None to leave it in view."""
    from agentbox.errors import SandboxError
    from agentbox.sandbox.syscall_filter import host_program_path

    command, args = server.command, server.args
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError(
            "bubblewrap is not installed (bwrap not on PATH), and the server is never started "
            "outside it: apt-get install bubblewrap"
        )
    # Folders a server expects under /tmp exist again, empty, on the private /tmp: what it writes
    # there at start-up (a log, a marker) never reaches the host.
    # Elsewhere, a file the server would create (an absolute argument that does not exist yet) gets
    # an empty private folder in place of its parent.
    dirs = sorted({os.path.dirname(a) for a in args if a.startswith("/tmp/") and os.path.dirname(a) != "/tmp"})
    made = [x for d in dirs for x in ("--dir", d)]
    fresh = sorted(
        {
            os.path.dirname(a)
            for a in args
            if os.path.isabs(a)
            and not a.startswith("/tmp/")
            and not os.path.exists(a)
            and os.path.isdir(os.path.dirname(a))
            and os.path.dirname(a) != "/"
        }
    )
    made += [x for d in fresh for x in ("--tmpfs", d)]
    # What the server reads here it may hand back in its tool names, which the compile writes into the run's
    # config: so it sees no more than the run will, the home hidden when the profile hides it, and never
    # AGENTBOX_HOME (every profile's kept answers).
    hidden = ("/tmp", *((os.path.abspath(home),) if home and os.path.abspath(home) != "/" else ()))
    # A server started from this interpreter (`python -m ...`) must still find its packages when they
    # live under a hidden folder (an editable install in a temporary checkout, a PYTHONPATH entry).
    here = os.path.dirname(_PACKAGE)
    keep = sorted(
        {p for p in (*sys.path, here) if os.path.isdir(p) and any(is_within(p, h) for h in hidden) and p not in hidden}
    )
    # the server's own install, when it lies in a hidden folder, as the run's sandbox binds it
    keep += [d for d in server_binds(name, server, hidden) if d not in keep]
    made += [x for d in keep for x in ("--ro-bind", d, d)]
    # the seccomp program is loaded inside, by path (the MCP client cannot hand bwrap a descriptor), from the cache
    # under AGENTBOX_HOME, bound read-only wherever it lies
    program = host_program_path(deny_unix=True)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    base = [
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
        *(x for h in hidden[1:] for x in ("--tmpfs", h)),
    ]
    base += hide_state(base, state_home())
    return bwrap, [
        *base,
        "--tmpfs",
        "/run",
        *made,
        "--ro-bind",
        program,
        program,
        "--ro-bind",
        _UNIX_FILTER,
        _UNIX_FILTER,
        "--unshare-user",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
        "--",
        python,
        "-I",
        "-S",
        _UNIX_FILTER,
        program,
        "--",
        command,
        *args,
    ]


def list_tools(name: str, server: McpServer, timeout: float = 30.0, home: str | None = None) -> tuple[str, ...]:
    # The server's own stderr is the process's real one: a caller capturing sys.stderr (a StringIO, which has no
    # file descriptor) must not make asking the server fail. Swapped before the import too: the MCP client
    # binds sys.stderr as its default when first imported.
    shown, sys.stderr = sys.stderr, sys.__stderr__
    try:
        return _ask(name, server, timeout, home)
    finally:
        sys.stderr = shown


def _ask(name: str, server: McpServer, timeout: float, home: str | None) -> tuple[str, ...]:
    import anyio
    from mcp import Client, StdioServerParameters

    command, args = _locked_down(name, server, home)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    params = StdioServerParameters(command=command, args=args, env={**env, **server.env})

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
    servers: dict[str, McpServer], names: tuple[str, ...], timeout: float = 30.0, home: str | None = None
) -> Inventory:
    """Tool lists of the named servers; a server that cannot be asked is named with the reason (compile
    then reports the allowlist partial and says why)."""
    out = Inventory()
    for name in names:
        problem = _missing(servers[name])
        if problem is None:
            try:
                out.tools[name] = list_tools(name, servers[name], timeout, home)
                continue
            except Exception as exc:  # noqa: BLE001 - any failure means "inventory unknown", with its reason
                problem = _why(exc)
        out.problems[name] = problem
    return out


def for_profile(profile, home: str | None = None) -> Inventory:
    """The inventory a compile of `profile` needs: only tool allowlists need one (asked afresh every time).
    `home`: the run's home (default $HOME), hidden from the servers when the profile hides it."""
    intent = profile.permission_intent
    if not intent.mcp.tools:
        return Inventory()
    home = (home or os.environ.get("HOME") or "/root") if intent.host_home.access == "hidden" else None
    return inventory(profile.mcp_servers, intent.mcp.servers, home=home)
