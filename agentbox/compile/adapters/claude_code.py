"""Claude Code (npm `@anthropic-ai/claude-code`): intent -> settings.json + mcp.json + launch flags.

What this adapter compiles, all of it in the private config home (CLAUDE_CONFIG_DIR):
- `settings.json`, loaded twice on purpose: as the user settings of CLAUDE_CONFIG_DIR and as
  `--settings` (flag settings, which 2.1.332 needs for some sandbox keys to beat project settings);
  `--setting-sources user` keeps a repository's .claude/settings*.json out.
  * `permissions`: defaultMode "default" (set explicitly: interactive 2.1.332 otherwise starts in
    auto mode), bypass and auto mode disabled, and allow/ask/deny tool rules. A denied tool is
    removed from the tool list sent to the model.
  * `sandbox`: Claude Code's own bubblewrap sandbox for Bash and Monitor (filesystem and network
    rules), with `failIfUnavailable` when a required item relies on it and
    `allowUnsandboxedCommands: false` always (else the model escapes with dangerouslyDisableSandbox).
- `mcp.json` with only the allowlisted servers, passed with `--mcp-config ... --strict-mcp-config`.
- `.claude.json` (onboarding done, the workspace trusted), writable in the run: Claude Code saves its answers
  there, and a launch keeps the ones on KEPT_STATE for the profile's next launch.
- The model through ANTHROPIC_BASE_URL and the key variable (apiKeyHelper for another name).
Claude Code silently ignores a settings file that fails validation in `-p` mode, so every shape
compiled here was loaded by the real binaries (docs/harnesses/claude-code.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from agentbox.egress.policy import DEFAULT_PORTS, parse_entry
from agentbox.core.plan import CompileResult, KeyApproval, Placeholder, StateFile
from agentbox.compile.adapters.base import Compilation, HarnessAdapter
from agentbox.compile.adapters.native import artifact

__all__ = ["ClaudeCodeAdapter", "ADAPTER", "KEPT_STATE", "SANDBOX_V1", "SANDBOX_V2", "mcp_tool_name"]

SETTINGS = "settings.json"
MCP_CONFIG = "mcp.json"
STATE = ".claude.json"
# Dialects (agentbox/data/capabilities/claude-code.yaml). v1, seen on 2.1.197: the Bash sandbox
# breaks every command when the workspace is read-only (by denyWrite or by an outer sandbox), and
# it has no network.strictAllowlist. v2, seen on 2.1.332: denyWrite on the workspace works, the
# sandbox needs enableWeakerNestedSandbox inside another bubblewrap, strictAllowlist exists.
SANDBOX_V1 = "sandbox-v1"
SANDBOX_V2 = "sandbox-v2"

# `.claude.json` is where Claude Code keeps its answers and counters (first-run dialogs, tips, release notes) next
# to per-project grants. It is writable in the run, and what a launch keeps of it for the next launch of the
# profile is this list; every other key is dropped and named (seen in the file after TUI runs of 2.1.332;
# docs/harnesses/claude-code.md). The plan's own keys (onboarding done, the workspace trusted) are compiled
# every time and win over the kept ones.
KEPT_STATE = StateFile(
    path=STATE,
    keep={
        "hasCompletedOnboarding": "the first-run onboarding was finished (the plan sets it too)",
        "numStartups": "a start counter: tips and announcements are paced by it",
        "firstStartTime": "when this profile first started Claude Code",
        "firstStartVersion": "the version this profile first started",
        "tipsHistory": "which tips were shown, so they are not repeated",
        "tipLifetimeShownCounts": "how often each tip was shown",
        "tipsHistoryByCommand": "which command tips were shown",
        "lastReleaseNotesSeen": "the release notes already shown",
        "lastClawdEntranceVersion": "the welcome animation already shown for this version",
        "seenNotifications": "announcements already dismissed",
        "theme": "the colour theme (older versions keep it here; 2.1.332 keeps it in settings.json, the plan's)",
        "editorMode": "normal or vim key bindings in the prompt (older versions)",
        "autoCompactEnabled": "whether long conversations are compacted (older versions)",
        "userID": "an anonymous identifier of this config (telemetry, which the plan turns off, would send it)",
        "machineID": "an anonymous identifier of this config (telemetry, which the plan turns off, would send it)",
        "migrationVersion": "how far Claude Code migrated its own config (the plan's settings stay read-only to it)",
        "*MigrationComplete": "a migration of Claude Code's own config done (the plan's settings stay read-only to it)",
        "pluginUsage": "how often each built-in plugin was used (counters; plugins themselves are not kept)",
        "projects.*.projectOnboardingSeenCount": "how often a project's first-run tips were shown",
        "projects.*.hasCompletedProjectOnboarding": "a project's first-run tips were finished",
        "projects.*.last*": "statistics of the last session in a project (cost, durations, tokens, its id)",
    },
    widens={
        "projects.*.allowedTools": "could widen the permission rules: tools allowed without asking",
        "projects.*.mcpServers": "could widen mcp: servers the plan does not name",
        "projects.*.enabledMcpjsonServers": "could widen mcp: a project's .mcp.json servers approved",
        "projects.*.disabledMcpjsonServers": "could widen mcp: answers about a project's .mcp.json servers",
        "projects.*.mcpContextUris": "could widen mcp: resources attached to every prompt",
        "projects.*.hasTrustDialogAccepted": "could widen the workspace: trusts a project's own config; the plan "
        "trusts the launch's project alone, at every start",
        "projects.*.hasClaudeMdExternalIncludesApproved": "could widen the workspace: lets CLAUDE.md pull in files "
        "outside the project",
        "projects.*.pickedPermissionMode": "could widen the permission mode: a mode picked for a project",
        "projects.*.orgMemory*": "could widen what the model reads and writes: an organisation's shared memory",
        "mcpServers": "could widen mcp: user servers the plan does not name",
        "bypassPermissionsModeAccepted": "could widen every item: accepts the mode that skips permission checks",
        "customApiKeyResponses": "could widen the model key: approves keys; the launch answers for the profile's "
        "own key at every start",
        "primaryApiKey": "a credential: keys stay on the host",
        "oauthAccount": "a credential: the account signed in",
        "env": "could widen the environment: variables for every command",
        "apiKeyHelper": "could widen the environment: a command that prints the model key",
        "hasResetAutoModeOptIn*": "could widen the permission mode: a marker about auto mode's opt-in; the plan "
        "disables auto mode",
        "officialMarketplace*": "could widen what runs: the plugin marketplace's install state; plugins add "
        "commands, agents and MCP servers",
    },
)

SHELL_TOOLS = ("Bash", "Monitor")  # Monitor runs a shell command too (2.1.332)
FILE_WRITE_TOOLS = ("Edit", "NotebookEdit", "Write")
FILE_READ_TOOLS = ("Glob", "Grep", "Read")
WEB_TOOLS = ("WebFetch", "WebSearch")
MCP_RESOURCE_TOOLS = ("ListMcpResourcesTool", "ReadMcpResourceDirTool", "ReadMcpResourceTool")
KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")  # read by Claude Code itself
DEFAULT_KEY_VAR = "ANTHROPIC_API_KEY"
_PROVIDERS = ("default", "anthropic")
_RULE_UNSAFE = re.compile(r"[()\s]")


def mcp_tool_name(server: str, tool: str | None = None) -> str:
    """Claude Code's name for an MCP server's tools (characters outside [A-Za-z0-9_-] become '_')."""
    norm = lambda s: re.sub(r"[^A-Za-z0-9_-]", "_", s)  # noqa: E731
    return f"mcp__{norm(server)}" + (f"__{norm(tool)}" if tool is not None else "")


def _abs_rule(path: str) -> str:
    """A permission-rule path for an absolute path ('//' marks an absolute path in rule syntax)."""
    return "//" + path.strip("/")


def _within(child: str, parent: str) -> bool:
    child, parent = child.rstrip("/") or "/", parent.rstrip("/") or "/"
    return child == parent or child.startswith(parent + "/") or parent == "/"


@dataclass
class _Plan:
    """What the steps of one compile share: the permission rules and the Bash/Monitor sandbox they fill."""

    v2: bool
    cwd: str  # without a trailing slash, as the rules name it
    home: str
    shell_on: bool
    outer: bool  # an OS sandbox around the run in which Claude Code's own sandbox cannot start
    sandbox_on: bool
    unused: str  # why Claude Code's sandbox does not confine shell commands, when it does not
    rules: dict[str, set[str]] = field(default_factory=lambda: {"allow": set(), "ask": set(), "deny": set()})
    # rule kind -> the items that added rules of it, in order: the first required one owns the list
    contributors: dict[str, list[str]] = field(default_factory=lambda: {"deny": [], "allow": [], "ask": []})
    fs: dict[str, list[str]] = field(
        default_factory=lambda: {"allowWrite": [], "denyWrite": [], "denyRead": [], "allowRead": []}
    )
    network: dict[str, Any] = field(default_factory=dict)
    sandbox_items: list[str] = field(default_factory=list)  # the items the sandbox serves in this plan
    servers: dict[str, Any] = field(default_factory=dict)  # mcp.json's servers
    settings_model: dict[str, Any] = field(default_factory=dict)  # settings.json's model keys, first in the file

    def rule(self, kind: str, item: str, *names: str) -> None:
        self.rules[kind].update(names)
        if item not in self.contributors[kind]:
            self.contributors[kind].append(item)


class ClaudeCodeAdapter(HarnessAdapter):
    name = "claude-code"
    binary_name = "claude"
    # `claude --version` -> "2.1.332 (Claude Code)"
    version_pattern = r"(?P<version>[0-9]+\.[0-9]+\.[0-9]+) \(Claude Code\)"
    # ANTHROPIC_API_KEY goes out as x-api-key, ANTHROPIC_AUTH_TOKEN as a bearer token, an apiKeyHelper's key as
    # both (docs/harnesses/claude-code.md); the placeholder looks like an Anthropic API key
    key_headers = ("x-api-key: {value}", "Authorization: Bearer {value}")
    key_placeholder = Placeholder(prefix="sk-ant-api03-agentbox-", length=48)

    # -- compile ---------------------------------------------------------------------------------
    # The model after the items: its error comes after theirs, and the settings' own keys are laid out in finish.
    compile_steps = ("workspace", "shell", "command_network", "host_home", "mcp", "model")

    def start(self, c: Compilation) -> None:
        ctx, intent = c.context, c.intent
        cwd, home = ctx.cwd.rstrip("/") or "/", ctx.home.rstrip("/") or "/"
        if _RULE_UNSAFE.search(cwd) or _RULE_UNSAFE.search(home):
            c.errors.append(
                f"claude-code: the workspace {cwd!r} or home {home!r} holds a space or parenthesis, "
                "which Claude Code's path rules cannot express"
            )
        # Which items Claude's own sandbox serves: it confines Bash and Monitor, so only with a shell.
        # v1 cannot use it for a read-only or hidden workspace (every sandboxed command fails).
        # Inside an OS sandbox that enforces the command network (Agent-Box's, which refuses every process
        # new unix sockets), Claude's sandbox cannot start: it listens on unix sockets for its proxy bridges
        # and then refuses every command ("Sandbox is required but failed to initialize: EACCES ... listen
        # srt-mux-*.sock", 2.1.332). That OS layer confines the workspace, the network and the home of
        # every process, so Claude's sandbox is left off there.
        # Its sandbox is bubblewrap too, which needs a user namespace: inside an OS sandbox that refuses them it
        # cannot start at all, so there it is left off whatever the network.
        v2 = c.dialect == SANDBOX_V2
        shell_on = intent.shell.access != "deny"
        no_userns = not ctx.user_namespaces
        outer = "command_network" in ctx.sandbox_enforces or no_userns
        unused = (
            "Claude Code's sandbox is left off inside the OS sandbox, which refuses it the user namespace it needs"
            if no_userns
            else "Claude Code's sandbox is left off inside the OS sandbox, which refuses it the unix sockets it needs"
            if outer
            else "Claude Code's sandbox is not used in this plan"
        )
        c.native = _Plan(
            v2=v2,
            cwd=cwd,
            home=home,
            shell_on=shell_on,
            outer=outer,
            sandbox_on=shell_on and (v2 or intent.workspace.access == "read_write") and not outer,
            unused=unused,
        )

    def compile_workspace(self, c: Compilation) -> None:
        p: _Plan = c.native
        access, cwd = c.intent.workspace.access, p.cwd
        if access == "none":
            # The sandbox cannot hide the working directory: denyRead alone leaves it readable and
            # writable (it stays in the write allowlist), denyRead + denyWrite fails every command.
            p.rule("deny", "workspace", *FILE_READ_TOOLS, *FILE_WRITE_TOOLS)
            c.mechanisms["workspace"] = "file tools denied (Read, Glob, Grep, Edit, Write, NotebookEdit)"
        elif access == "read_only":
            p.rule("deny", "workspace", *FILE_WRITE_TOOLS)
            if p.sandbox_on:
                p.fs["denyWrite"].append(cwd)
            c.mechanisms["workspace"] = "Edit/Write/NotebookEdit denied" + (
                "; Bash/Monitor sandbox denies writing the workspace" if p.sandbox_on else ""
            )
        else:
            p.rule("allow", "workspace", f"Edit({_abs_rule(cwd)}/**)")
            c.mechanisms["workspace"] = (
                f"Edit({_abs_rule(cwd)}/**) allowed; file-tool writes elsewhere ask"
                + ("; blockWritesOutsideWorkingDirectories" if p.v2 else "")
                + ("; Bash/Monitor sandbox writes only the workspace and temp" if p.sandbox_on else "")
            )
        if p.sandbox_on and access != "none":
            p.sandbox_items.append("workspace")
        elif p.shell_on and access != "none":
            c.degrade(
                "workspace",
                (p.unused if p.outer else "Claude Code's sandbox is not used for this workspace access in this dialect")
                + ", so shell commands are not confined",
                SHELL_TOOLS,
            )

    def compile_shell(self, c: Compilation) -> None:
        p: _Plan = c.native
        shell = c.intent.shell.access
        p.rule({"deny": "deny", "ask": "ask", "allow": "allow"}[shell], "shell", *SHELL_TOOLS)
        c.mechanisms["shell"] = {
            "deny": "Bash and Monitor denied (removed from the tool list)",
            "ask": "Bash and Monitor in ask rules (headless: refused); sandbox auto-allow off",
            "allow": "Bash and Monitor allowed",
        }[shell]

    def compile_command_network(self, c: Compilation) -> None:
        p: _Plan = c.native
        net, network = c.intent.command_network.access, p.network
        if net == "unrestricted":
            p.rule("allow", "command_network", *WEB_TOOLS)
            # The sandbox always isolates the network: without an allowlist it asks about every host
            # (refused in headless runs), so an unrestricted plan allows every domain through its proxy.
            network.update({"allowedDomains": ["*"], "deniedDomains": []})
            c.mechanisms["command_network"] = "WebFetch/WebSearch allowed" + (
                "; Bash/Monitor sandbox proxy allows every domain ('*')" if p.sandbox_on else ""
            )
            return
        hosts: list[str] = []
        if net == "restricted":
            for entry in c.intent.command_network.allow_domains:
                parsed = parse_entry(entry)
                host = ("*." if parsed.wildcard else "") + parsed.host
                if parsed.ports != DEFAULT_PORTS and not p.outer:  # the OS layer's proxy checks ports
                    c.warnings.append(
                        f"command_network: Claude Code allows domains, not ports: {entry} allows every port of {host}"
                    )
                if host not in hosts:
                    hosts.append(host)
            p.rule("allow", "command_network", *(f"WebFetch(domain:{h})" for h in hosts))
            p.rule("deny", "command_network", "WebSearch")
        else:
            p.rule("deny", "command_network", *WEB_TOOLS)
        network["allowedDomains"] = hosts
        network["deniedDomains"] = []
        if p.v2:
            network["strictAllowlist"] = True
        network["allowAllUnixSockets"] = False
        network["allowLocalBinding"] = False
        what = "no domains" if net == "none" else ", ".join(hosts)
        web = "WebFetch/WebSearch denied" if net == "none" else "WebFetch allowed for those domains, WebSearch denied"
        c.mechanisms["command_network"] = (
            f"{web}; Bash/Monitor sandbox proxy allows {what}" + (" (strictAllowlist)" if p.v2 else "")
            if p.sandbox_on
            else web
        )
        if p.sandbox_on:
            p.sandbox_items.append("command_network")
            if not p.v2:
                c.degrade(
                    "command_network",
                    "this dialect has no network.strictAllowlist: the sandbox asks "
                    "the user about other hosts in an interactive session",
                )
        elif p.shell_on:
            c.degrade("command_network", f"{p.unused}, so shell commands reach the network", SHELL_TOOLS)

    def compile_host_home(self, c: Compilation) -> None:
        p: _Plan = c.native
        if c.intent.host_home.access != "hidden":
            c.mechanisms["host_home"] = "none"
            return
        cwd, home = p.cwd, p.home
        cwd_in_home = _within(cwd, home)
        if not cwd_in_home:
            p.rule("deny", "host_home", f"Read({_abs_rule(home)}/**)", f"Edit({_abs_rule(home)}/**)")
        else:
            c.warnings.append(
                "host_home: the workspace lies inside the home, so the file tools' home rules "
                "are left out (a deny rule would also hide the workspace)"
            )
            c.degrade("host_home", "the workspace lies inside the home: no file-tool rule hides the home", ("Read",))
        if p.sandbox_on:
            p.fs["denyRead"].append(home)
            if cwd_in_home:
                p.fs["allowRead"].append(cwd)
            p.sandbox_items.append("host_home")
        elif p.shell_on:
            c.degrade("host_home", f"{p.unused}, so shell commands read the home", SHELL_TOOLS)
        c.mechanisms["host_home"] = (
            ", ".join(
                part
                for part in (
                    "Read/Edit denied under the home" if not cwd_in_home else "",
                    "Bash/Monitor sandbox denies reading the home" if p.sandbox_on else "",
                )
                if part
            )
            or "none"
        )

    def compile_mcp(self, c: Compilation) -> None:
        p: _Plan = c.native
        intent, servers = c.intent, p.servers
        inventory: dict[str, tuple[str, ...]] = dict(getattr(c.context, "mcp_tools", None) or {})
        limited = False
        seen_names: dict[str, str] = {}
        for server in intent.mcp.servers:
            spec = c.profile.mcp_servers[server]
            native = mcp_tool_name(server)
            if native in seen_names:
                c.errors.append(
                    f"mcp: servers {seen_names[native]!r} and {server!r} both become {native} in Claude Code"
                )
            seen_names[native] = server
            server_entry: dict[str, Any] = {"type": "stdio", "command": spec.command, "args": list(spec.args)}
            server_entry["env"] = dict(sorted(spec.env.items()))
            servers[server] = server_entry
            tools = intent.mcp.allowed_tools(server)
            if tools is None:
                p.rule("allow", "mcp", native)
                continue
            limited = True
            p.rule("allow", "mcp", *(mcp_tool_name(server, t) for t in tools))
            if server in inventory:
                unlisted = sorted(set(inventory[server]) - set(tools))
                p.rule("deny", "mcp", *(mcp_tool_name(server, t) for t in unlisted))
            elif not tools:
                p.rule("deny", "mcp", native)
            else:
                problem = c.context.mcp_problems.get(server)
                why = f" (asking server {server!r} for its tools failed: {problem})" if problem else ""
                c.warnings.append(
                    f"mcp: the tools of server {server!r} are not known at compile time{why}, so its "
                    f"tools outside {', '.join(tools)} cannot be denied: they are offered to the model "
                    "and need approval (refused in headless runs)"
                )
                c.degrade(
                    "mcp",
                    f"a tool allowlist without the server's tool inventory{why}: unlisted tools are "
                    "offered and only need approval",
                )
        if limited:
            p.rule("deny", "mcp", *MCP_RESOURCE_TOOLS)  # resources are not tools on any allowlist
        c.mechanisms["mcp"] = (
            (
                f"--strict-mcp-config with only {', '.join(servers)}"
                if servers
                else "--strict-mcp-config with no servers"
            )
            + ("; listed tools allowed, MCP resource tools denied" if limited else "")
            + ("; unlisted tools denied by name" if limited and "mcp" not in c.degraded else "")
        )

    def compile_model(self, c: Compilation) -> None:
        p: _Plan = c.native
        model = c.profile.model
        c.env.update(
            {
                "CLAUDE_CONFIG_DIR": c.context.config_home,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
                "DISABLE_TELEMETRY": "1",
                # Send every tool in the first request (2.1.332 otherwise defers some behind ToolSearch),
                # so the offered tool list is complete and checkable.
                "ENABLE_TOOL_SEARCH": "false",
                # Connect the MCP servers before the first request, for the same reason: 2.1.197 otherwise sends it
                # while a slow server is still connecting, and a call to that server's allowed tool fails ("No such
                # tool available ... is still connecting")
                "MCP_CONNECTION_NONBLOCKING": "0",
            }
        )
        if model.provider not in _PROVIDERS:
            c.errors.append(
                f"model: Claude Code speaks only the Anthropic Messages API; provider {model.provider!r} "
                "cannot be configured (use provider: default with a base_url)"
            )
        if model.base_url:
            base_url = self.base_url(c.profile, c.context)
            assert base_url is not None  # model.base_url is set: it is the fallback
            c.env["ANTHROPIC_BASE_URL"] = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
            if model.name:
                for tier in ("HAIKU", "OPUS", "SONNET"):  # subagents and background calls ask for a tier
                    c.env[f"ANTHROPIC_DEFAULT_{tier}_MODEL"] = model.name
        if model.name:
            p.settings_model["model"] = model.name
        key_var = model.api_key_env or DEFAULT_KEY_VAR
        if key_var not in KEY_VARS:
            p.settings_model["apiKeyHelper"] = f"printenv {key_var}"
        c.key_env = c.credential_env = key_var
        if key_var == DEFAULT_KEY_VAR:
            # the TUI asks "Detected a custom API key in your environment. Do you want to use this API key?"
            # and keeps the answer in .claude.json (a "yes" it could not save went on "ANTHROPIC_API_KEY not used
            # here"). The profile named the key: answer it at every start, for the run's own placeholder (an
            # answer kept from an earlier run would name another placeholder, so it is not kept: KEPT_STATE).
            c.key_approvals = (
                KeyApproval(
                    file=STATE,
                    key="customApiKeyResponses",
                    variable=key_var,
                    last=20,
                    template={"approved": ["{key_suffix}"], "rejected": []},
                ),
            )

    def finish(self, c: Compilation) -> None:
        # settings.json's permissions and sandbox serve several items at once: each key is owned by the first
        # required item among those that contributed to it.
        p: _Plan = c.native
        intent, owners, v2, sandbox_on = c.intent, c.owners, p.v2, p.sandbox_on
        access, shell, net = intent.workspace.access, intent.shell.access, intent.command_network.access
        mode_owner = c.primary(["workspace", "shell", "command_network", "mcp", "host_home"])
        permissions: dict[str, Any] = {
            "defaultMode": "default",
            "disableBypassPermissionsMode": "disable",
            "disableAutoMode": "disable",
            "allow": sorted(p.rules["allow"]),
            "ask": sorted(p.rules["ask"]),
            "deny": sorted(p.rules["deny"]),
            "additionalDirectories": [],
        }
        if v2 and access != "none":
            permissions["blockWritesOutsideWorkingDirectories"] = True
            owners["permissions.blockWritesOutsideWorkingDirectories"] = "workspace"
        for key in ("defaultMode", "disableBypassPermissionsMode", "disableAutoMode", "additionalDirectories"):
            owners[f"permissions.{key}"] = mode_owner
        for kind in ("allow", "ask", "deny"):
            owners[f"permissions.{kind}"] = c.primary(p.contributors[kind] or [mode_owner])

        required_on_sandbox = [i for i in p.sandbox_items if intent.item(i).requirement == "required"]
        sandbox: dict[str, Any] = {"enabled": sandbox_on}
        if sandbox_on:
            sandbox["failIfUnavailable"] = bool(required_on_sandbox)
            sandbox["allowUnsandboxedCommands"] = False
            sandbox["autoAllowBashIfSandboxed"] = shell == "allow"
            sandbox["excludedCommands"] = []
            sandbox["enableWeakerNestedSandbox"] = v2  # 2.1.332 cannot mount /proc inside Agent-Box's bwrap
            if v2:
                sandbox["allowNestedUserNamespaces"] = False
            if p.network:
                sandbox["network"] = p.network
            sandbox["filesystem"] = {k: v for k, v in p.fs.items() if v or k in ("allowWrite", "denyWrite")}
            if not required_on_sandbox:
                c.warnings.append(
                    "sandbox: no required item relies on Claude Code's sandbox, so failIfUnavailable is "
                    "off: where it cannot start, commands run unsandboxed"
                )
            sb_owner = c.primary(p.sandbox_items or ["shell"])
            for key in (
                "enabled",
                "failIfUnavailable",
                "allowUnsandboxedCommands",
                "excludedCommands",
                "enableWeakerNestedSandbox",
                "allowNestedUserNamespaces",
            ):
                if key in sandbox:
                    owners[f"sandbox.{key}"] = sb_owner
            owners["sandbox.autoAllowBashIfSandboxed"] = "shell"
            for key in p.network:
                owners[f"sandbox.network.{key}"] = "command_network"
            for key in sandbox["filesystem"]:
                owners[f"sandbox.filesystem.{key}"] = "host_home" if key.endswith("Read") else "workspace"
        else:
            owners["sandbox.enabled"] = c.primary(["workspace", "command_network", "host_home"])
        settings: dict[str, Any] = {
            **p.settings_model,
            "permissions": permissions,
            "sandbox": sandbox,
            "disableAllHooks": True,  # no hook (nor a plugin's) runs commands outside the rules
            "enableAllProjectMcpServers": False,
        }
        owners["disableAllHooks"] = mode_owner
        owners["enableAllProjectMcpServers"] = "mcp"
        base_url = c.profile.model.base_url
        own_api = not base_url or urlsplit(base_url).hostname == "api.anthropic.com"
        if (p.outer and net != "unrestricted") or not own_api:
            # WebFetch first asks claude.ai whether a host is safe. Inside the OS layer's egress proxy that lookup
            # could only fail (the proxy allows the profile's hosts alone, and decides instead); with a model
            # served elsewhere (a gateway, a local model) claude.ai is often out of reach too, and the fetch then
            # fails on the lookup rather than on the rules under test (anthropics/claude-code#24921).
            settings["skipWebFetchPreflight"] = True
            owners["skipWebFetchPreflight"] = "command_network"
        owners["apiKeyHelper"] = "environment"

        state = {
            "hasCompletedOnboarding": True,
            "projects": {p.cwd: {"hasTrustDialogAccepted": True}},
        }
        c.artifacts = (
            artifact(
                SETTINGS,
                settings,
                dict(sorted((k, v) for k, v in owners.items() if k != "apiKeyHelper" or "apiKeyHelper" in settings)),
            ),
            artifact(MCP_CONFIG, {"mcpServers": p.servers}, {"mcpServers": "mcp"}),
            artifact(STATE, state),
        )
        cfg = c.context.config_home
        c.argv = (
            "--settings",
            f"{cfg}/{SETTINGS}",
            "--setting-sources",
            "user",
            "--mcp-config",
            f"{cfg}/{MCP_CONFIG}",
            "--strict-mcp-config",
        )
        c.state_files = (KEPT_STATE,)

    # -- run -------------------------------------------------------------------------------------
    def headless_argv(self, result: CompileResult, prompt: str) -> list[str]:
        # `--` keeps a prompt that starts with '-' from being read as an option.
        return [*result.argv, "-p", "--output-format", "stream-json", "--verbose", "--", prompt]

    def verify_init(self, result: CompileResult, event: dict[str, Any]) -> list[str]:
        """Problems showing the harness did not load this plan, from the `system/init` event of stream-json.

        Claude Code silently drops a settings file that fails validation under `-p`, so a launch
        should check that what it compiled is what runs: the mode, the denied tools, the MCP servers.
        """
        import json

        problems: list[str] = []
        settings = json.loads(result.artifacts[0].content)
        if event.get("permissionMode") != settings["permissions"]["defaultMode"]:
            problems.append(
                f"permission mode is {event.get('permissionMode')!r}, not {settings['permissions']['defaultMode']!r}"
            )
        tools = set(event.get("tools") or ())
        leaked = sorted(t for t in settings["permissions"]["deny"] if "(" not in t and t in tools)
        if leaked:
            problems.append(f"denied tools are offered: {', '.join(leaked)}")
        wanted = set(json.loads(result.artifacts[1].content)["mcpServers"])
        running = {s.get("name") for s in event.get("mcp_servers") or ()}
        if running != wanted:
            problems.append(f"MCP servers are {sorted(running)}, not {sorted(wanted)}")
        if "sandbox_enabled" in event and bool(event["sandbox_enabled"]) != settings["sandbox"]["enabled"]:
            problems.append(f"sandbox_enabled is {event['sandbox_enabled']}, not {settings['sandbox']['enabled']}")
        return problems


ADAPTER = ClaudeCodeAdapter()
