"""The intent, held on the ACP surfaces the client performs outside the sandbox. Decisions only: no I/O but the
file system's answers about a path (where its symlinks lead).

An ACP client reads and writes files (`fs/*`), runs terminals (`terminal/*`) and answers permission
requests on the host, where neither the harness's own rules nor the OS sandbox can see. Each method
the agent may send the client gets a decision here, and so does every client request that could widen
what the agent itself may do (session `_meta` options, modes, MCP servers, working directories):

- capabilities the agent is told about are the client's and the intent's intersection: a write only
  under `workspace: read_write`, a read unless `workspace: none`, a terminal unless `shell: deny` (the
  endpoint runs it in the sandbox itself, never the client); nothing else the client offers (auth
  terminals, `_meta` extensions, MCP over ACP, elicitation) is passed on;
- a file request goes through only where the host path is what the sandbox shows at it (`view`), and a
  write only inside the workspace and where the sandbox lets the agent write: judged on the resolved path, and on
  every symlink on the way that the agent could have planted (one out of the area refuses the request even when
  another leads back);
  the client is sent the resolved path, and the relay judges and forwards it with the run held still (`hold`);
- a permission request for a shell action under `shell: deny` is answered "reject" without asking; under
  `ask` it goes to the client without its "always" options (a standing grant would turn ask into allow),
  and an option naming a mode that widens the plan is never offered;
- session requests must work in the workspace; `_meta` keys the agent reads are refused when they widen
  the plan, kept when they cannot, stripped otherwise; MCP servers come from the profile, never the client.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

from agentbox.sandbox.view import SandboxView, resolve, symlinks_on

__all__ = ["Refusal", "SurfacePolicy", "PermissionDecision", "SESSION_METHODS"]

# client -> agent requests that open a session in a working directory
SESSION_METHODS = ("session/new", "session/load", "session/resume", "session/fork")
_ALLOW_ALWAYS = "allow_always"
_REJECT = ("reject_once", "reject_always")


class Refusal(Exception):
    """A request the intent does not allow: the reason names the item and the surface."""


@dataclass(frozen=True)
class PermissionDecision:
    """`answer`: reply to the agent at once with this option id ("" for a cancelled outcome), without asking;
    else `options`: ask the client, offering only these."""

    answer: str | None = None
    options: tuple[dict, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class SurfacePolicy:
    workspace: str  # resolved
    workspace_access: Literal["none", "read_only", "read_write"]
    shell: Literal["deny", "ask", "allow"]
    view: SandboxView
    meta_keep: tuple[str, ...] = ()
    meta_refuse: dict[str, str] = field(default_factory=dict)
    refuse_modes: dict[str, str] = field(default_factory=dict)
    # the profile's allowed MCP servers, as ACP stdio server specs, for an agent that takes them only from the
    # session request; None: the agent loads them from the compiled config and gets none from the session
    session_mcp: tuple[dict, ...] | None = None

    def data(self) -> dict:
        """Plain data (the sandbox view aside: it is read again from the entry's argv), for the endpoint's cache."""
        return {
            "workspace": self.workspace,
            "workspace_access": self.workspace_access,
            "shell": self.shell,
            "meta_keep": list(self.meta_keep),
            "meta_refuse": dict(self.meta_refuse),
            "refuse_modes": dict(self.refuse_modes),
            "session_mcp": None if self.session_mcp is None else list(self.session_mcp),
        }

    @classmethod
    def from_data(cls, data: dict, sandbox_argv: list[str]) -> "SurfacePolicy":
        from agentbox.sandbox.view import mounts_of

        mcp = data.get("session_mcp")
        return cls(
            workspace=data["workspace"],
            workspace_access=data["workspace_access"],
            shell=data["shell"],
            view=SandboxView(mounts_of(sandbox_argv)),
            meta_keep=tuple(data["meta_keep"]),
            meta_refuse=dict(data["meta_refuse"]),
            refuse_modes=dict(data["refuse_modes"]),
            session_mcp=None if mcp is None else tuple(mcp),
        )

    # -- initialize --------------------------------------------------------------------------------------------
    def client_capabilities(self, offered: dict | None) -> dict:
        """What the agent is told the client can do: the client's offer, narrowed by the intent."""
        offered = offered if isinstance(offered, dict) else {}
        offered_fs = offered.get("fs")
        fs = offered_fs if isinstance(offered_fs, dict) else {}
        return {
            "fs": {
                "readTextFile": bool(fs.get("readTextFile")) and self.workspace_access != "none",
                "writeTextFile": bool(fs.get("writeTextFile")) and self.workspace_access == "read_write",
            },
            # served by the endpoint inside the sandbox, so it needs no client support; offered only where the
            # client showed it renders terminals
            "terminal": bool(offered.get("terminal")) and self.shell != "deny",
        }

    @staticmethod
    def agent_answer(result: Any) -> Any:
        """The agent's initialize answer, without auth methods that make the client run a command on the host."""
        if not isinstance(result, dict):
            return result
        methods = result.get("authMethods")
        if isinstance(methods, list):
            result = {
                **result,
                "authMethods": [
                    m
                    for m in methods
                    if isinstance(m, dict)
                    and m.get("type") != "terminal"
                    and "terminal-auth" not in (m.get("_meta") or {})
                ],
            }
        return result

    # -- the agent asks the client -------------------------------------------------------------------------
    def check_read(self, path: Any) -> str:
        """The resolved path the client may read, or Refusal."""
        real = resolve(path)
        if real is None:
            raise Refusal(f"fs/read_text_file {path!r}: not an absolute path")
        if self.workspace_access == "none" and _within(real, self.workspace):
            raise Refusal(f"fs/read_text_file {path}: workspace access is none")
        if not self.view.shows_host(real):
            raise Refusal(
                f"fs/read_text_file {path}: the sandbox hides it from the agent "
                f"({_what(self.view, real)}), so the client may not read it either"
            )
        for link, target in self._planted(path):
            if not self.view.shows_host(target) or (
                self.workspace_access == "none" and _within(target, self.workspace)
            ):
                raise Refusal(
                    f"fs/read_text_file {path}: {link} is a symlink to {target}, which the agent may not "
                    "read, on the way"
                )
        return real

    def check_write(self, path: Any) -> str:
        """The resolved path the client may write, or Refusal."""
        real = resolve(path)
        if real is None:
            raise Refusal(f"fs/write_text_file {path!r}: not an absolute path")
        if self.workspace_access != "read_write":
            raise Refusal(
                f"fs/write_text_file {path}: workspace access is {self.workspace_access}, "
                "so the client may not write for the agent"
            )
        if not _within(real, self.workspace):
            raise Refusal(f"fs/write_text_file {path}: outside the workspace {self.workspace}")
        if not self.view.writable_host(real):
            raise Refusal(
                f"fs/write_text_file {path}: the sandbox does not let the agent write there ({_what(self.view, real)})"
            )
        for link, target in self._planted(path):
            if not (_within(target, self.workspace) and self.view.writable_host(target)):
                raise Refusal(
                    f"fs/write_text_file {path}: {link} is a symlink to {target}, outside what the agent "
                    "may write, on the way"
                )
        return real

    def _planted(self, path: str) -> list[tuple[str, str]]:
        """The symlinks on the way to `path` that the agent could have made: those in a folder the sandbox lets it
        write (the host's own links elsewhere, a symlinked home or /var for one, it sees and follows the same)."""
        return [(link, target) for link, target in symlinks_on(path) if self.view.writable_host(os.path.dirname(link))]

    def terminal(self) -> Literal["run", "ask"]:
        """How a terminal/create is served: in the sandbox at once, or after the client approves; Refusal under deny."""
        if self.shell == "deny":
            raise Refusal("terminal/create: shell access is deny")
        return "ask" if self.shell == "ask" else "run"

    def permission(self, params: dict) -> PermissionDecision:
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        tool_call = params.get("toolCall")
        call = tool_call if isinstance(tool_call, dict) else {}
        shell = call.get("kind") == "execute"
        reject = next((o["optionId"] for k in _REJECT for o in options if o.get("kind") == k), "")
        if shell and self.shell == "deny":
            return PermissionDecision(answer=reject, note="a shell action under shell: deny, rejected without asking")
        kept = [
            o
            for o in options
            if o.get("optionId") not in self.refuse_modes
            and not (shell and self.shell == "ask" and o.get("kind") == _ALLOW_ALWAYS)
        ]
        dropped = [o.get("optionId") for o in options if o not in kept]
        return PermissionDecision(
            options=tuple(kept), note=f"options not offered: {', '.join(map(str, dropped))}" if dropped else ""
        )

    # -- the client asks the agent ----------------------------------------------------------------------------
    def session_params(self, method: str, params: dict) -> tuple[dict, list[str]]:
        """The session request as the agent may see it, and notes on what was stripped; Refusal when it widens."""
        out = dict(params)
        notes: list[str] = []
        cwd = resolve(params.get("cwd"))
        if method in SESSION_METHODS and (cwd is None or not _within(cwd, self.workspace)):
            raise Refusal(
                f"{method}: cwd {params.get('cwd')!r} is outside the workspace {self.workspace} the plan "
                "was compiled for (start agent-box acp with --cwd there)"
            )
        extra = params.get("additionalDirectories") or []
        outside = [d for d in extra if not (isinstance(d, str) and (r := resolve(d)) and _within(r, self.workspace))]
        if outside:
            raise Refusal(f"{method}: additionalDirectories {', '.join(map(str, outside))} lie outside the workspace")
        if "mcpServers" in params or method in SESSION_METHODS:
            given = params.get("mcpServers") or []
            if given:
                names = ", ".join(str(s.get("name")) for s in given if isinstance(s, dict))
                notes.append(f"the client's MCP servers ({names}) are not passed on: the profile names the servers")
            out["mcpServers"] = list(self.session_mcp or ())
        meta, meta_notes = self.meta(method, params.get("_meta"))
        notes += meta_notes
        if meta:
            out["_meta"] = meta
        else:
            out.pop("_meta", None)
        return out, notes

    def meta(self, method: str, meta: Any) -> tuple[dict, list[str]]:
        """`_meta` of a client request: refused keys raise, kept keys stay, the rest is stripped."""
        if not isinstance(meta, dict) or not meta:
            return {}, []
        flat = dict(_flatten(meta))
        if method in SESSION_METHODS:
            for key, why in self.meta_refuse.items():
                # the options themselves (`claudeCode.options.env`), else the key
                hit = sorted(k for k in flat if k.startswith(key + ".") and "." not in k[len(key) + 1 :]) or [
                    k for k in flat if k == key
                ]
                if hit:
                    keys = ", ".join(f"_meta.{k}" for k in hit)
                    raise Refusal(f"{method}: {keys} would widen the plan ({why}); refused")
            kept = {k: v for k, v in meta.items() if k in self.meta_keep}
        else:
            kept = {}
        stripped = sorted(k for k in meta if k not in kept)
        return kept, [f"_meta keys not passed on: {', '.join(stripped)}"] if stripped else []

    def mode(self, method: str, mode_id: Any) -> None:
        if mode_id in self.refuse_modes:
            raise Refusal(f"{method}: mode {mode_id} would widen the plan ({self.refuse_modes[mode_id]}); refused")

    def config_option(self, params: dict) -> None:
        if params.get("configId") == "mode":
            self.mode("session/set_config_option", params.get("value"))


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _flatten(value: dict, prefix: str = ""):
    for k, v in value.items():
        key = f"{prefix}{k}"
        yield key, v
        if isinstance(v, dict):
            yield from _flatten(v, key + ".")


def _what(view: SandboxView, path: str) -> str:
    m = view.at(path)
    if m is None:
        return "not mounted"
    if m.kind == "private":
        return f"{m.target} is private to the sandbox"
    if not m.host_as_is:
        return f"{m.target} shows the profile's own copy"
    return f"{m.target} is read-only"
