"""What an MCP server needs to see inside a sandbox that hides /tmp (and, maybe, the home).

The harness starts its MCP servers inside the run's sandbox, where /tmp is private and a hidden home is an
empty tmpfs. A server installed there (a virtual environment under /tmp, a script under the home) would
fail with `bwrap: execvp ...: No such file or directory`, and every vector through it would come out an
error. So each configured server's install is bound back read-only: the smallest folder that holds it
(the virtual environment, the package's node_modules, an installation prefix's bin/ and lib/, a script's own
folder), following one shebang to its interpreter. A server that would need a whole hidden root (a script lying directly in
/tmp or the home) is refused when the plan is compiled, with the path and the reason, because binding
the root back would undo the hiding.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable

from agentbox.errors import SandboxError
from agentbox.core.paths import is_within, shebang
from agentbox.core.profile import McpServer

__all__ = ["server_binds", "command_path"]


def command_path(command: str) -> str | None:
    """The executable file a server's command names (absolute, or found on PATH), without resolving symlinks (a
    venv's bin/python is a link out of it); None when there is none. One answer for the inventory that asks the
    server and for the binds that let it start in the sandbox."""
    if os.path.isabs(command):
        return command if os.path.isfile(command) and os.access(command, os.X_OK) else None
    found = shutil.which(command)
    return os.path.abspath(found) if found else None


def _shebang(path: str) -> str | None:
    words = shebang(path)
    return words[0] if words and os.path.isabs(words[0]) else None


def _install_roots(path: str) -> tuple[str, ...]:
    """The smallest folders that make `path` work: its virtual environment, its node package tree, or its own
    folder. An installation prefix's bin/ and lib/ (a pyenv version, `pip --user`'s ~/.local), never the prefix
    itself: ~/.local holds AGENTBOX_HOME and the rest of the user's data (`sandbox.cover` refuses its bind)."""
    start = path if os.path.isdir(path) else os.path.dirname(path)
    for folder in (start, *_parents(start)):
        if os.path.exists(os.path.join(folder, "pyvenv.cfg")):
            return (folder,)
        if os.path.basename(folder) == "node_modules":
            return (folder,)
    lib = os.path.join(os.path.dirname(start), "lib")
    if os.path.basename(start) == "bin" and os.path.isdir(lib):
        return (start, lib)  # an installation prefix: bin/ needs its lib/
    return (start,)


def _parents(path: str) -> Iterable[str]:
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return
        yield parent
        path = parent


def _needed(server: McpServer) -> list[str]:
    """Host paths the server's start touches: its command (and the interpreter its shebang names) and
    every absolute argument that exists."""
    out: list[str] = []
    command = command_path(server.command)
    if command is not None:
        # the link and what it points to: a virtual environment's bin/python leads to the base interpreter
        out += dict.fromkeys((command, os.path.realpath(command)))
        interpreter = _shebang(command)
        if interpreter is not None:
            out += dict.fromkeys((interpreter, os.path.realpath(interpreter)))
    out += [a for a in server.args if os.path.isabs(a) and os.path.exists(a)]
    return out


def server_binds(name: str, server: McpServer, hidden: tuple[str, ...]) -> tuple[str, ...]:
    """Folders to bind read-only so server `name` can start under a sandbox that hides `hidden`."""
    binds: list[str] = []
    for path in _needed(server):
        root = next((h for h in hidden if is_within(path, h)), None)
        if root is None:
            continue
        for folder in _install_roots(path):
            if not is_within(folder, root) or os.path.realpath(folder) == os.path.realpath(root):
                raise SandboxError(
                    f"mcp_servers.{name}: {path} lies directly in {root}, which the sandbox hides; binding "
                    f"{root} back would undo that. Move the server into a folder of its own (a virtual "
                    "environment, a package folder) or outside it"
                )
            if folder not in binds:
                binds.append(folder)
    return tuple(binds)
