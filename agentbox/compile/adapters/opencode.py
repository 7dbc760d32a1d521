"""OpenCode (npm `opencode-ai`): intent -> $OPENCODE_CONFIG (opencode.json) + environment.

OpenCode has no OS sandbox. What it does have, and what this adapter compiles (V1 config):
- `permission`: an object of tool -> allow|ask|deny (or, for file, shell and MCP-resource rules,
  pattern -> action; webfetch and websearch take an action only), last matching rule wins. A tool whose last matching rule is a blanket `deny` is removed from the tool list sent to
  the model (for MCP tools too), and a call to it is refused as an unavailable tool. The plan opens
  with `"*": "deny"`, so every tool not named here (including every MCP tool not allowlisted) is
  neither offered nor callable.
- `mcp`: only allowlisted servers are configured; their tools are `<server>_<tool>` (characters
  outside [A-Za-z0-9_-] become `_`). MCP resources are read through `read_mcp_resource`, which asks
  the `read` permission with the resource `mcp:<server>:<uri>`.
- `external_directory: deny`: file tools (and bash commands whose arguments OpenCode recognises as
  outside paths) are refused outside the workspace. A heuristic for bash, never a boundary.
- `opencode run` auto-rejects every `ask`; the TUI asks. `--auto` would approve them: never passed.
- Config precedence (1.18.33 source, verified): global XDG config < OPENCODE_CONFIG < project
  opencode.json(c) < .opencode/ < OPENCODE_CONFIG_CONTENT < /etc/opencode (managed) <
  OPENCODE_PERMISSION (env). Project files would widen the plan: OPENCODE_DISABLE_PROJECT_CONFIG=1
  skips them (and the sandbox masks them).
V2 (`permissions`, an ordered rule array with action/resource/effect) belongs to the separate
`opencode2` binary: `opencode` 1.18.16-1.18.23 silently ignores a `permissions` key, 1.18.25 and
later refuse to start with it. This adapter never emits it. See docs/harnesses/opencode.md.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from agentbox.core.intent import PermissionIntent
from agentbox.core.plan import Artifact, CompileResult
from agentbox.core.profile import Profile
from agentbox.compile.adapters.base import Compilation, HarnessAdapter
from agentbox.compile.adapters.native import artifact, ordered, merge_into_artifact

__all__ = ["OpenCodeAdapter", "ADAPTER", "CONFIG", "PROVIDER_ID", "tool_id"]

CONFIG = "opencode.json"
SCHEMA = "https://opencode.ai/config.json"  # without it OpenCode rewrites the file to add it
PROVIDER_ID = "agentbox"
IGNORES_V2 = "v1-ignores-v2"  # 1.18.16..1.18.23: a V2 `permissions` key is silently ignored
REJECTS_V2 = "v1-rejects-v2"  # 1.18.25..: a V2 `permissions` key stops OpenCode at start-up

# Every built-in rule is written after the MCP allows: last match wins, so an allow such as
# `external_*` (a server named "external") cannot reach `external_directory`, `plan_enter`, ...
# Built-in tools with an underscore (apply_patch, the MCP resource tools) are gated by `edit`/`read`.
_FILE_READ_TOOLS = ("glob", "grep", "list")
_NETWORK_TOOLS = ("webfetch", "websearch", "codesearch")
# Permission keys compiled from the intent (anything else under `permission.` is an extra rule).
_OWNED_BUILTINS = {
    "read": "workspace",
    "edit": "workspace",
    "external_directory": "workspace",
    **{t: "workspace" for t in _FILE_READ_TOOLS},
    "bash": "shell",
    **{t: "command_network" for t in _NETWORK_TOOLS},
}


_BUILTIN_KEYS = frozenset(
    {
        "read",
        *_FILE_READ_TOOLS,
        "edit",
        "external_directory",
        "bash",
        *_NETWORK_TOOLS,
        "task",
        "todowrite",
        "todoread",
        "question",
        "doom_loop",
        "plan_enter",
        "plan_exit",
    }
)


# Built-in rules no intent item decides, after every other rule.
_FIXED_RULES = {
    "task": "allow",  # subagents get the same top-level rules (checked per agent)
    "todowrite": "allow",
    "todoread": "allow",
    "question": "deny",
    "doom_loop": "ask",
    "plan_enter": "deny",
    "plan_exit": "deny",
}
# opencode.json's top-level keys, in the order the file has always had
_CONFIG_ORDER = (
    "$schema",
    "provider",
    "enabled_providers",
    "model",
    "small_model",
    "autoupdate",
    "share",
    "default_agent",
    "mcp",
    "permission",
)


def _v1(c: Compilation) -> str:
    """How the mechanisms name the config this dialect reads."""
    return f"V1 permission ({c.dialect})"


def _sanitize(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def tool_id(server: str, tool: str) -> str:
    """The name OpenCode gives an MCP tool (and the permission key that governs it)."""
    return f"{_sanitize(server)}_{_sanitize(tool)}"


class OpenCodeAdapter(HarnessAdapter):
    name = "opencode"
    binary_name = "opencode"
    # `opencode --version` -> "1.18.33"
    version_pattern = r"(?m)^\s*v?(?P<version>[0-9]+(?:\.[0-9]+)+)\s*$"

    # -- compile ---------------------------------------------------------------------------------
    # The MCP servers before the built-in rules: `read` carries their resource rules, and last match wins.
    compile_steps = ("model", "mcp", "workspace", "shell", "command_network", "host_home", "environment")

    def start(self, c: Compilation) -> None:
        c.config["$schema"] = SCHEMA
        # Sharing uploads the session to OpenCode's servers; updates download a new binary.
        c.config["autoupdate"] = False
        c.config["share"] = "disabled"
        c.owners["share"] = "command_network"
        c.config["default_agent"] = "build"
        home = c.context.config_home
        c.env.update(
            {
                "OPENCODE_CONFIG": posixpath.join(home, CONFIG),
                # every file OpenCode writes (sessions db, logs, tool output, locks, caches) stays private
                "XDG_CONFIG_HOME": posixpath.join(home, "xdg", "config"),
                "XDG_DATA_HOME": posixpath.join(home, "xdg", "data"),
                "XDG_CACHE_HOME": posixpath.join(home, "xdg", "cache"),
                "XDG_STATE_HOME": posixpath.join(home, "xdg", "state"),
                "TMPDIR": c.context.tmpdir,
                # project opencode.json(c) and .opencode/ would merge over OPENCODE_CONFIG
                "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
                "OPENCODE_PURE": "1",  # no external plugins (code run inside the harness)
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_SHARE": "1",
                "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                "OPENCODE_DISABLE_CLAUDE_CODE": "1",  # ~/.claude/CLAUDE.md and ~/.claude skills
                "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",  # ~/.agents skills
            }
        )

    def compile_model(self, c: Compilation) -> None:
        model_config, model_env = self._model(c.profile, c.warnings, c.errors, self.base_url(c.profile, c.context))
        c.config.update(model_config)
        c.env.update(model_env)

    def compile_mcp(self, c: Compilation) -> None:
        mcp, mcp_allow, mcp_read = self._mcp(c.profile, c.intent, c.warnings, c.errors)
        if mcp:
            c.config["mcp"] = mcp
        c.owners["mcp"] = "mcp"
        permission: dict[str, Any] = {"*": "deny"}  # the default that hides every tool not allowlisted
        permission.update(dict.fromkeys(mcp_allow, "allow"))
        # the resource rules, which the workspace's `read` rule extends (or drops with the file tools)
        permission["read"] = mcp_read
        c.config["permission"] = permission
        c.owners.update({f"permission.{key}": "mcp" for key in ("*", *mcp_allow)})
        c.mechanisms["mcp"] = (
            f"mcp block holds only allowlisted servers; permission '*': deny, allow {', '.join(mcp_allow)}; "
            "MCP resources readable only for wholly allowed servers"
            if mcp_allow
            else "no mcp servers; permission '*': deny"
        )

    def compile_workspace(self, c: Compilation) -> None:
        ws, rules = c.intent.workspace.access, c.config["permission"]
        if ws == "none":
            rules["read"] = "deny"
        else:
            # OpenCode's own defaults for .env files, kept (ask is refused by `opencode run`)
            rules["read"] = {"*": "allow", "*.env": "ask", "*.env.*": "ask", "*.env.example": "allow", **rules["read"]}
        for tool in _FILE_READ_TOOLS:
            rules[tool] = "deny" if ws == "none" else "allow"
        rules["edit"] = "allow" if ws == "read_write" else "deny"  # also write and apply_patch
        rules["external_directory"] = "deny"
        c.mechanisms["workspace"] = {
            "none": f"{_v1(c)}: read, glob, grep, list, edit denied (tools removed); external_directory deny",
            "read_only": f"{_v1(c)}: edit denied (edit, write, apply_patch removed); external_directory deny",
            "read_write": f"{_v1(c)}: read and edit allowed; external_directory deny",
        }[ws]

    def compile_shell(self, c: Compilation) -> None:
        c.config["permission"]["bash"] = c.intent.shell.access
        c.mechanisms["shell"] = {
            "deny": f"{_v1(c)}: bash denied (removed from every agent's tool list)",
            "ask": f"{_v1(c)}: bash ask (the TUI asks; `opencode run` auto-rejects)",
            "allow": f"{_v1(c)}: bash allow",
        }[c.intent.shell.access]

    def compile_command_network(self, c: Compilation) -> None:
        net, rules = c.intent.command_network.access, c.config["permission"]
        # webfetch takes only allow / ask / deny (1.18.16, 1.18.33 reject a per-URL object at start-up), so a
        # domain allowlist cannot be written for it; inside an OS sandbox whose egress proxy enforces the
        # allowlist for every process, webfetch is allowed and the proxy decides its hosts.
        proxied = net == "restricted" and "command_network" in c.context.sandbox_enforces
        rules["webfetch"] = "allow" if net == "unrestricted" or proxied else "deny"
        rules["websearch"] = "allow" if net == "unrestricted" else "deny"
        rules["codesearch"] = "allow" if net == "unrestricted" else "deny"
        if net == "restricted" and not proxied:
            c.warnings.append(
                "command_network: OpenCode's webfetch permission takes no per-host rule, so restricted "
                "leaves webfetch denied"
            )
        c.mechanisms["command_network"] = {
            "none": f"{_v1(c)}: webfetch, websearch, codesearch denied; share disabled",
            "restricted": (
                f"{_v1(c)}: webfetch allowed (the OS sandbox's egress proxy decides its hosts)"
                if proxied
                else f"{_v1(c)}: webfetch denied (no per-host rule exists)"
            )
            + "; websearch, codesearch denied",
            "unrestricted": f"{_v1(c)}: webfetch allow",
        }[net]

    def compile_host_home(self, c: Compilation) -> None:
        c.mechanisms["host_home"] = (
            f"{_v1(c)}: external_directory deny; OPENCODE_DISABLE_CLAUDE_CODE, OPENCODE_DISABLE_EXTERNAL_SKILLS"
        )

    def compile_environment(self, c: Compilation) -> None:
        for name in c.intent.environment.allow:
            if name.startswith("OPENCODE_"):
                c.warnings.append(
                    f"environment: {name} is passed through, and OpenCode reads OPENCODE_* variables as "
                    "configuration (OPENCODE_PERMISSION merges over every config file)"
                )

    def finish(self, c: Compilation) -> None:
        permission = c.config["permission"]
        # Every built-in rule is written after the MCP allows (last match wins); these serve no one item.
        permission.update(_FIXED_RULES)
        for key in permission:
            if key in _OWNED_BUILTINS:
                c.owners[f"permission.{key}"] = _OWNED_BUILTINS[key]
        config = ordered(c.config, _CONFIG_ORDER)
        c.artifacts = (
            artifact(CONFIG, config, dict(sorted(c.owners.items()))),
            *self._plugin_sdk_marked_installed(c.version),
        )

    @staticmethod
    def _plugin_sdk_marked_installed(version: str | None) -> tuple[Artifact, ...]:
        """The global config folder marked as holding OpenCode's plugin SDK, so no start installs it.

        At every start OpenCode (1.18.33 source, `Npm.install`) installs `@opencode-ai/plugin` into each config
        folder, in process, unless the folder has a `node_modules/` and a `package-lock.json` whose root lists
        every dependency of `package.json`. The private config home is new for each run, so each start paid an
        npm install from the registry (~64 MB, about a second of the harness's own CPU) or, in the sandbox, an
        egress denial. OPENCODE_PURE loads no plugin, and nothing else reads the SDK: an empty tree is enough.
        """
        folder = "xdg/config/opencode"
        deps = {"@opencode-ai/plugin": version or "latest"}
        return (
            artifact(f"{folder}/package.json", {"dependencies": deps}),
            artifact(
                f"{folder}/package-lock.json",
                {"lockfileVersion": 3, "requires": True, "packages": {"": {"dependencies": deps}}},
            ),
            artifact(
                f"{folder}/node_modules/.package-lock.json", {"lockfileVersion": 3, "requires": True, "packages": {}}
            ),
        )

    def _model(
        self, profile: Profile, warnings: list[str], errors: list[str], base_url: str | None = None
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """`provider`/`model` keys and the env they need. The key is named with {env:NAME}, never inlined."""
        m = profile.model
        key = {"apiKey": f"{{env:{m.api_key_env}}}"} if m.api_key_env else {}
        if m.base_url:
            if not m.name:
                errors.append(
                    "model: base_url is set but model.name is not; OpenCode needs a model id to send requests"
                )
                return {}, {}
            model = f"{PROVIDER_ID}/{m.name}"
            provider = {
                "npm": "@ai-sdk/openai-compatible",  # bundled in the binary: Chat Completions at {baseURL}/chat/completions
                "name": "Agent-Box",
                "options": {"baseURL": (base_url or m.base_url).rstrip("/"), **key},
                "models": {m.name: {"name": m.name}},
            }
            # Only this provider is loaded, and it also serves titles/summaries (small_model), so no
            # request goes to a default provider; the models.dev catalogue is not fetched.
            return (
                {
                    "provider": {PROVIDER_ID: provider},
                    "enabled_providers": [PROVIDER_ID],
                    "model": model,
                    "small_model": model,
                },
                {"OPENCODE_DISABLE_MODELS_FETCH": "1"},
            )
        out: dict[str, Any] = {}
        if m.provider != "default":
            if key:
                out["provider"] = {m.provider: {"options": key}}
            if m.name:
                out["model"] = f"{m.provider}/{m.name}"
        elif m.name:
            if "/" in m.name:
                out["model"] = m.name
            else:
                warnings.append(
                    f"model: {m.name!r} has no provider; OpenCode wants provider/model, left to its default"
                )
        if key and m.provider == "default":
            warnings.append(f"model: api_key_env {m.api_key_env} is passed through but no provider names it")
        return out, {}

    def _mcp(
        self, profile: Profile, intent: PermissionIntent, warnings: list[str], errors: list[str]
    ) -> tuple[dict[str, Any], list[str], dict[str, str]]:
        """The `mcp` block, the permission keys that allow MCP tools, and `read` rules for MCP resources."""
        mcp: dict[str, Any] = {}
        allow: list[str] = []
        read = {"mcp:*": "deny"}  # resources are not tools: only a wholly allowed server's are readable
        for server in intent.mcp.servers:
            spec = profile.mcp_servers[server]
            tools = intent.mcp.allowed_tools(server)
            if tools is not None and not tools:
                warnings.append(f"mcp: server {server!r} allows no tools, so it is not configured")
                continue
            entry: dict[str, Any] = {"type": "local", "command": [spec.command, *spec.args], "enabled": True}
            if spec.env:
                entry["environment"] = dict(sorted(spec.env.items()))
            mcp[server] = entry
            if tools is None:
                allow.append(f"{_sanitize(server)}_*")
                read[f"mcp:{server}:*"] = "allow"
            else:
                allow.extend(tool_id(server, t) for t in tools)
        problems = self._overlaps(intent, mcp, allow)
        problems += [
            f"mcp: tool id {key!r} is also the name of OpenCode's built-in rule"
            for key in allow
            if key in _BUILTIN_KEYS
        ]
        if problems:
            target = errors if intent.mcp.requirement == "required" else warnings
            target.extend(problems)
        return mcp, allow, read

    @staticmethod
    def _overlaps(intent: PermissionIntent, mcp: dict[str, Any], allow: list[str]) -> list[str]:
        """Allow keys that could match a tool nobody allowlisted (OpenCode's tool namespace is flat)."""
        problems = []
        for server in mcp:
            if intent.mcp.allowed_tools(server) is None:
                continue  # every tool of it is allowed anyway
            mine = {tool_id(server, t) for t in intent.mcp.allowed_tools(server) or ()}
            prefix = f"{_sanitize(server)}_"  # every tool of this server is named prefix + something
            for key in allow:
                if key in mine:
                    continue
                if key.endswith("*"):
                    head = key[:-1]
                    hit = prefix.startswith(head) or head.startswith(prefix)
                else:
                    hit = key.startswith(prefix)
                if hit:
                    problems.append(
                        f"mcp: allow rule {key!r} also matches tools of {server!r}, which allows only "
                        f"{', '.join(intent.mcp.allowed_tools(server) or ())} "
                        "(OpenCode names MCP tools <server>_<tool>)"
                    )
        return sorted(set(problems))

    # -- overrides -------------------------------------------------------------------------------
    def apply_patch(self, result: CompileResult, patch: dict[str, Any]) -> tuple[CompileResult, list[str]]:
        """Merge into opencode.json; report changed keys plus the top-level rules they amount to.

        Agent-level rules (`agent.<name>.permission.<tool>`, `agent.<name>.tools.<tool>`) are
        evaluated after the top-level `permission`, so they count as a change of `permission.<tool>`;
        an extra top-level rule for a tool the plan does not name changes what `"*": "deny"` hides.
        """
        patched, changed = merge_into_artifact(result, 0, patch)
        effective = set(changed)
        for key in changed:
            parts = key.split(".")
            if parts[0] in ("agent", "mode") and len(parts) >= 3 and parts[2] in ("permission", "tools"):
                if len(parts) == 3:
                    effective.add("permission")
                else:
                    tool = "edit" if parts[3] in ("write", "patch", "apply_patch") else parts[3]
                    effective.add(f"permission.{tool}")
                    if tool not in _OWNED_BUILTINS:
                        effective.add("permission.*")
            elif parts[0] == "permission" and len(parts) >= 2 and parts[1] not in _OWNED_BUILTINS:
                effective.add("permission.*")
        notes = []
        if "permissions" in patch or any(k.split(".")[-1] == "permissions" for k in changed):
            notes.append(
                "config_patch: `permissions` is the V2 (opencode2) rule array; "
                + (
                    "this version silently ignores it"
                    if result.dialect == IGNORES_V2
                    else "this version refuses to start with it"
                )
                + "; use V1 `permission`"
            )
        if notes:
            patched = patched.model_copy(update={"warnings": (*patched.warnings, *notes)})
        return patched, sorted(effective)

    # -- run -------------------------------------------------------------------------------------
    @staticmethod
    def _model_flag(result: CompileResult) -> list[str]:
        if not result.artifacts:
            return []
        try:
            model = json.loads(result.artifacts[0].content).get("model")
        except ValueError:
            return []
        return ["-m", model] if isinstance(model, str) and model else []

    def headless_argv(self, result: CompileResult, prompt: str) -> list[str]:
        """`opencode run --format json -m MODEL -- WORDS...` (one JSON event per line on stdout).

        `run` joins its message words with spaces but wraps any word holding a space in double
        quotes, so the prompt goes in as its space-separated words: they join back to the exact
        text. `--` keeps a word starting with `-` from being read as a flag.
        """
        return [*result.argv, "run", "--format", "json", *self._model_flag(result), "--", *prompt.split(" ")]

    def interactive_argv(self, result: CompileResult, extra: list[str]) -> list[str]:
        return [*result.argv, *self._model_flag(result), *extra]


ADAPTER = OpenCodeAdapter()
