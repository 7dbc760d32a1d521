"""OpenAI Codex CLI: one `config.toml` in a private CODEX_HOME, and `codex exec` for headless runs.

Dialects (agentbox/data/capabilities/codex.yaml; evidence in docs/harnesses/codex.md):
- `legacy` (..0.132): `sandbox_mode` + `[sandbox_workspace_write]`. Their beta permission profiles
  refuse `"deny"` at load time (and before 0.131 spell the workspace `:project_roots`).
- `profiles` (0.133..0.148): a named permission profile (`default_permissions` +
  `[permissions.<name>]` with `:workspace_roots` and `"deny"`), which can also hide the workspace and
  the home from commands. Legacy keys must stay absent: Codex prefers them over the profile.
- `profiles_on_request` (0.149..): the same profile; `approval_policy = "untrusted"` is rejected at
  load time from 0.149, so `shell: ask` compiles to `on-request`.

Whatever the dialect, `codex exec` runs with approval `never`: a request for an unsandboxed command
(`sandbox_permissions: "require_escalated"`) comes back to the model as a refusal.
"""

from __future__ import annotations

import os
import platform
import shutil
from typing import Any, ClassVar

from agentbox.harnesses.build_identity import BuildFile, BuildFiles, tree
from agentbox.core.paths import is_within
from agentbox.core.plan import CompileResult
from agentbox.core.versions import Version
from agentbox.compile.adapters.base import Compilation, HarnessAdapter
from agentbox.compile.adapters.native import artifact, ordered

__all__ = ["CodexAdapter", "ADAPTER", "CONFIG_FILE", "PERMISSION_PROFILE", "PROVIDER_ID", "COMMAND_ENV"]

CONFIG_FILE = "config.toml"
PERMISSION_PROFILE = "agentbox"
PROVIDER_ID = "agentbox"
# Variables a command keeps whatever the intent says: the sandbox sets or keeps the same ones.
COMMAND_ENV = ("HOME", "LANG", "LC_ALL", "PATH", "TERM", "TMPDIR")

LEGACY, PROFILES, PROFILES_ON_REQUEST = "legacy", "profiles", "profiles_on_request"
_STRICT_CONFIG_FROM = Version.parse("0.131")  # `--strict-config` (TUI and exec); 0.130 has no such flag
_IGNORE_RULES_FROM = Version.parse("0.125")  # `codex exec --ignore-rules`
# `--no-daemon` (in 0.171.0's --help, not in 0.147.0's: "Run without the shared background server, even if it is
# already running"): the TUI then never attaches to a background app-server (`daemon_auto_start`, on in 0.171.0)
# that another codex may have started outside this run's sandbox. Whether it would attach from inside is not yet
# observed; the flag costs nothing
_NO_DAEMON_FROM = Version.parse("0.171")

_LEFT_TO_SANDBOX = (
    "network enabled for commands, which reach only the OS sandbox's egress proxy (its variables "
    "kept in their environment); Codex's network proxy off"
)
_NESTED_OFF = (
    "left to the OS sandbox: Codex's own sandbox needs a user namespace, which the OS sandbox refuses, "
    "so its permission profile restricts nothing"
)
# machine -> (the npm platform package, its target triple), as bin/codex.js picks them on Linux
_NPM_TARGETS = {
    "x86_64": ("codex-linux-x64", "x86_64-unknown-linux-musl"),
    "aarch64": ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
}
_WORKSPACE_ACCESS = {"none": "deny", "read_only": "read", "read_write": "write"}
_LEGACY_SANDBOX = {"none": "read-only", "read_only": "read-only", "read_write": "workspace-write"}

# Surfaces that would hand the model tools or run code outside what the intent lists: ChatGPT apps
# (connectors, an MCP surface), plugins (bundle MCP servers and skills), hooks (commands outside the
# sandbox), and the desktop/browser/image surfaces that reach the network on their own.
_FEATURES_OFF: dict[str, str] = {
    "apps": "mcp",
    "plugins": "mcp",
    "remote_plugin": "mcp",
    "tool_suggest": "mcp",
    "skill_mcp_dependency_install": "mcp",
    "hooks": "shell",
    "browser_use": "command_network",
    "computer_use": "command_network",
    "in_app_browser": "command_network",
    "image_generation": "command_network",
}
# Keys this adapter never sets but which, added by a config_patch, would weaken an item.
_GUARDED = {
    "sandbox_mode": "workspace",  # any sandbox_mode makes Codex ignore the permission profile
    "sandbox_workspace_write": "workspace",
    "default_permissions": "workspace",
    "notify": "shell",  # runs a program after every turn, outside the sandbox
    "mcp_servers": "mcp",
}


# config.toml in the order the file has always had: its top-level keys, then its tables
_CONFIG_ORDER = (
    "model",
    "model_provider",
    "approval_policy",
    "approvals_reviewer",
    "sandbox_mode",
    "default_permissions",
    "project_doc_max_bytes",
    "web_search",
    "check_for_update_on_startup",
    "allow_login_shell",
    "model_providers",
    "sandbox_workspace_write",
    "permissions",
    "features",
    "shell_environment_policy",
    "mcp_servers",
    "projects",
    "analytics",
    "feedback",
    "otel",
)


def _proxied(c: Compilation) -> bool:
    """Inside Agent-Box's sandbox the egress proxy enforces `restricted` for every process; Codex's own network
    proxy resolves and dials by itself, which that sandbox's network has no route for (seen: "local/private
    network addresses are blocked"), so commands get the network and the proxy variables."""
    return (
        c.intent.command_network.access == "restricted"
        and "command_network" in c.context.sandbox_enforces
        and c.dialect != LEGACY
    )


def _nested_off(c: Compilation) -> bool:
    """Codex's own sandbox cannot start: the OS sandbox refuses it a user namespace (see compile_workspace)."""
    return not c.context.user_namespaces and c.dialect != LEGACY


def _version(version: str | None) -> Version | None:
    return Version.parse(version) if version is not None else None


def _at_least(version: str | None, floor: Version) -> bool:
    v = _version(version)
    return v is None or v >= floor  # an unknown version compiles for the newest dialect


class CodexAdapter(HarnessAdapter):
    name: ClassVar[str] = "codex"
    binary_name: ClassVar[str] = "codex"
    # `codex --version` -> "codex-cli 0.171.0"
    version_pattern: ClassVar[str] = r"codex-cli (?P<version>[0-9]+(?:\.[0-9]+)+)"

    # -- compile ---------------------------------------------------------------------------------
    # The network before the workspace (the legacy sandbox's warnings come in that order) and the home before
    # the workspace (its entry comes first in the permission profile's filesystem table).
    compile_steps = ("model", "shell", "command_network", "host_home", "workspace", "environment", "mcp")

    def start(self, c: Compilation) -> None:
        ctx = c.context
        if is_within(ctx.config_home, ctx.tmpdir):
            c.errors.append(
                f"CODEX_HOME {ctx.config_home} lies under TMPDIR {ctx.tmpdir}: Codex then refuses "
                "to create its sandbox helper (execvp codex-linux-sandbox fails); give the run a TMPDIR "
                "that is not a prefix of the config home"
            )
        c.owners.update(_GUARDED)
        c.env.update({"CODEX_HOME": ctx.config_home, "TMPDIR": ctx.tmpdir})
        c.argv = ("--strict-config",) if _at_least(c.version, _STRICT_CONFIG_FROM) else ()
        c.config["check_for_update_on_startup"] = False
        if c.dialect != LEGACY:
            # One permission profile serves the workspace, the home and the network: each step fills its part.
            # Without a user namespace it restricts nothing (_NESTED_OFF), so no step adds to its filesystem.
            root = "write" if _nested_off(c) else "read"
            c.config["default_permissions"] = PERMISSION_PROFILE
            c.config["permissions"] = {PERMISSION_PROFILE: {"filesystem": {":root": root}, "network": {}}}
            prefix = f"permissions.{PERMISSION_PROFILE}"
            c.owners[f"{prefix}.filesystem"] = "workspace"
            c.owners[f"{prefix}.network"] = "command_network"
            c.owners["permissions"] = "workspace"  # a second profile, or one that replaces ours

    def compile_model(self, c: Compilation) -> None:
        model = c.profile.model
        if model.name:
            c.config["model"] = model.name
        if model.base_url:
            c.config["model_provider"] = PROVIDER_ID
            provider: dict[str, Any] = {
                "name": model.provider if model.provider != "default" else PROVIDER_ID,
                "base_url": self.base_url(c.profile, c.context),
                "wire_api": "responses",
            }
            if model.api_key_env:
                provider["env_key"] = model.api_key_env
            c.config["model_providers"] = {PROVIDER_ID: provider}
        elif model.api_key_env and model.api_key_env != "CODEX_API_KEY":
            c.warnings.append(
                f"model.api_key_env {model.api_key_env}: Codex's built-in provider reads its key from "
                "its login or CODEX_API_KEY, not from this variable; set model.base_url to use it"
            )
        # only a custom provider reads its key from a named variable (the built-in one reads its login)
        c.credential_env = model.api_key_env if model.base_url else None

    def compile_shell(self, c: Compilation) -> None:
        shell = c.intent.shell.access
        if shell == "ask":
            approval = "untrusted" if c.dialect in (LEGACY, PROFILES) else "on-request"
            c.warnings.append(
                f"shell: ask compiles to approval_policy {approval!r}, which asks only in the interactive "
                "TUI; `codex exec` forces approval never and runs sandboxed commands without asking"
                + (
                    ""
                    if approval == "untrusted"
                    else "; on-request asks only when the model requests an unsandboxed command"
                )
            )
            c.mechanisms["shell"] = f"approval_policy = {approval} (TUI only; codex exec never asks)"
        else:
            approval = "never"
            c.mechanisms["shell"] = (
                "features.shell_tool = false: exec_command/write_stdin/shell are not offered "
                "and calls to them are refused"
                if shell == "deny"
                else "shell tool enabled"
            )
        c.config["approval_policy"] = approval
        c.owners["approval_policy"] = "shell"
        if c.dialect != LEGACY:
            c.config["approvals_reviewer"] = "user"  # never an automatic reviewer that may approve an escalation
            c.owners["approvals_reviewer"] = "shell"

    def compile_command_network(self, c: Compilation) -> None:
        network, workspace = c.intent.command_network.access, c.intent.workspace.access
        if c.dialect == LEGACY:
            # the legacy sandbox_mode decides the network too (compile_workspace writes it)
            if workspace != "read_write" and network != "none":
                c.warnings.append("codex legacy read-only sandbox also blocks the network of commands")
            c.mechanisms["command_network"] = (
                "sandbox_workspace_write.network_access = false"
                if workspace == "read_write" and network == "none"
                else "read-only sandbox: no network"
                if workspace != "read_write"
                else "sandbox_workspace_write.network_access = true"
            )
        else:
            proxied, nested_off = _proxied(c), _nested_off(c)
            net: dict[str, Any] = {"enabled": network != "none"}
            if network == "restricted" and not proxied:
                net["domains"] = {domain: "allow" for domain in c.intent.command_network.allow_domains}
                c.warnings.append(
                    "command_network: restricted relies on Codex's experimental network proxy "
                    "(features.network_proxy); its domain rules are not verified here"
                )
            if nested_off:
                net = {"enabled": True}
                c.delegate("command_network", _NESTED_OFF, enforcement_scope="")
            c.mechanisms["command_network"] = (
                "permission profile network.enabled = false"
                if network == "none"
                else _LEFT_TO_SANDBOX
                if proxied
                else "network proxy with a domain allowlist"
                if network == "restricted"
                else "network enabled"
            )
            if proxied:
                c.delegate(
                    "command_network",
                    "left to the OS sandbox's egress proxy, to which Codex's network proxy cannot chain",
                )
            c.config["permissions"][PERMISSION_PROFILE]["network"] = net
        if network != "unrestricted":
            c.config["web_search"] = "disabled"
            c.owners["web_search"] = "command_network"
            c.mechanisms["command_network"] += "; web_search = disabled"

    def compile_host_home(self, c: Compilation) -> None:
        home = c.context.home
        if c.dialect == LEGACY:
            c.mechanisms["host_home"] = "none (the legacy sandbox lets commands read the whole disk)"
            return
        hidden, nested_off = c.intent.host_home.access == "hidden", _nested_off(c)
        if hidden:
            if not nested_off:
                c.config["permissions"][PERMISSION_PROFILE]["filesystem"][home] = "deny"
            c.owners[f"permissions.{PERMISSION_PROFILE}.filesystem.{home}"] = "host_home"
        if nested_off:
            c.mechanisms["host_home"] = _NESTED_OFF
            c.delegate("host_home", _NESTED_OFF, enforcement_scope="")
        else:
            c.mechanisms["host_home"] = f"permission profile: {home} = deny" if hidden else "home readable"

    def compile_workspace(self, c: Compilation) -> None:
        workspace, network = c.intent.workspace.access, c.intent.command_network.access
        if c.dialect == LEGACY:
            c.config["sandbox_mode"] = _LEGACY_SANDBOX[workspace]
            if workspace == "read_write":
                c.config["sandbox_workspace_write"] = {
                    "writable_roots": [],
                    "network_access": network != "none",
                    "exclude_tmpdir_env_var": False,
                    "exclude_slash_tmp": True,
                }
                c.owners["sandbox_workspace_write.network_access"] = "command_network"
            if workspace == "none":
                c.warnings.append("codex legacy sandbox cannot hide the workspace from commands; compiled read-only")
            c.mechanisms["workspace"] = f"sandbox_mode = {c.config['sandbox_mode']}"
            return
        if _nested_off(c):
            # Codex's Linux sandbox is bubblewrap, which needs a user namespace: inside an OS sandbox that
            # refuses them every command fails ("bwrap: Creating new namespace failed ... ENOSPC"), and its
            # Landlock fallback refuses a restricted file system ("filesystem-restricted execution requires
            # bubblewrap", 0.171.0). A profile with nothing to restrict runs commands without it; the OS
            # sandbox holds the workspace, the home and the network for every process instead.
            c.delegate("workspace", _NESTED_OFF, enforcement_scope="")
        else:
            filesystem = c.config["permissions"][PERMISSION_PROFILE]["filesystem"]
            if workspace == "read_write":
                filesystem[":tmpdir"] = "write"
            filesystem[":workspace_roots"] = {".": _WORKSPACE_ACCESS[workspace]}
        # (the mechanism names the profile even when it restricts nothing; the coverage says so)
        c.mechanisms["workspace"] = (
            f"permission profile {PERMISSION_PROFILE}: :workspace_roots = {_WORKSPACE_ACCESS[workspace]}, :root = read"
        )
        if workspace == "none":
            # Codex reads AGENTS.md through the same profile and refuses to start on a denied cwd.
            c.config["project_doc_max_bytes"] = 0
            c.owners["project_doc_max_bytes"] = "workspace"

    def compile_environment(self, c: Compilation) -> None:
        if c.dialect != LEGACY:
            c.config["allow_login_shell"] = False  # a login shell re-reads profile files that can add variables
            c.owners["allow_login_shell"] = "environment"
        keep = sorted(set(COMMAND_ENV) | set(c.intent.environment.allow) | set(c.context.sandbox_env))
        c.config["shell_environment_policy"] = {"inherit": "all", "ignore_default_excludes": True, "include_only": keep}
        c.owners["shell_environment_policy"] = "environment"
        c.mechanisms["environment"] = "shell_environment_policy.include_only = " + ", ".join(keep)

    def compile_mcp(self, c: Compilation) -> None:
        servers: dict[str, Any] = {}
        for server in c.intent.mcp.servers:
            spec = c.profile.mcp_servers[server]
            entry: dict[str, Any] = {"command": spec.command, "required": True}  # fail loudly, never run without it
            if spec.args:
                entry["args"] = list(spec.args)
            if spec.env:
                entry["env"] = dict(sorted(spec.env.items()))
            # Codex starts MCP servers with a few safe variables only: hand on, by name, the OS sandbox's (the
            # egress proxy's, the run CA's) and the profile's secrets (placeholders, swapped in by the proxy)
            forwarded = sorted((set(c.context.sandbox_env) | set(c.profile.secrets)) - set(spec.env))
            if forwarded:
                entry["env_vars"] = forwarded
            tools = c.intent.mcp.allowed_tools(server)
            if tools is None:
                entry["default_tools_approval_mode"] = "approve"
            else:
                entry["enabled_tools"] = list(tools)
                entry["tools"] = {tool: {"approval_mode": "approve"} for tool in tools}
            servers[server] = entry
        if servers:
            c.config["mcp_servers"] = servers
        c.mechanisms["mcp"] = (
            "[mcp_servers] holds only " + ", ".join(servers) + " (enabled_tools where listed); "
            if servers
            else "no [mcp_servers]; "
        ) + "apps, plugins and tool suggestions off"

    def finish(self, c: Compilation) -> None:
        # One [features] table serves several items: the shell tool, surfaces that would add tools or run code
        # outside the intent (_FEATURES_OFF), and Codex's network proxy.
        features: dict[str, bool] = {"shell_tool": c.intent.shell.access != "deny"}
        c.owners["features.shell_tool"] = "shell"
        for feature, item in _FEATURES_OFF.items():
            features[feature] = False
            c.owners[f"features.{feature}"] = item
        if c.dialect != LEGACY:
            features["network_proxy"] = c.intent.command_network.access == "restricted" and not _proxied(c)
            c.owners["features.network_proxy"] = "command_network"
        c.config["features"] = features
        # An explicit "untrusted" keeps a repository's .codex config, hooks and exec policies unloaded
        # (the sandbox masks them too); the 0.171 TUI then opens with one "Open restricted" prompt.
        c.config["projects"] = {c.context.cwd: {"trust_level": "untrusted"}}
        c.owners["projects"] = "workspace"
        c.config["analytics"] = {"enabled": False}
        c.config["feedback"] = {"enabled": False}
        c.config["otel"] = {"exporter": "none"}
        # Owners name sections as well as leaves: core treats a changed key under an owned section as owned.
        c.artifacts = (artifact(CONFIG_FILE, ordered(c.config, _CONFIG_ORDER), dict(sorted(c.owners.items()))),)

    def interactive_argv(self, result: CompileResult, extra: list[str]) -> list[str]:
        own = ["--no-daemon"] if _at_least(result.version, _NO_DAEMON_FROM) else []
        return [*result.argv, *own, *extra]

    def headless_argv(self, result: CompileResult, prompt: str) -> list[str]:
        args = ["exec", "--skip-git-repo-check", *result.argv]
        if _at_least(result.version, _IGNORE_RULES_FROM):
            args.append("--ignore-rules")  # no execpolicy .rules from the user or the project
        # exec never asks anyway; pinning it keeps an escalation request a refusal if that default drifts.
        args += ["--json", "--color", "never", "-c", 'approval_policy="never"', "--", prompt]
        return args

    def build_files(self, binary: str) -> BuildFiles:
        """npm's `bin/codex.js` only starts the native binary of the platform package
        (`@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex`, as codex.js finds it): the
        launcher plus that package's whole `vendor/<target>` folder, which holds the binary and what it
        starts itself (its bundled bubblewrap, ripgrep, the code-mode host). A codex that is not the npm
        launcher (a native binary on PATH) is itself the build."""
        launcher = os.path.realpath(binary)
        target = _NPM_TARGETS.get(platform.machine())
        if not launcher.endswith(".js") or target is None:
            return super().build_files(binary)
        package_root = os.path.dirname(os.path.dirname(launcher))  # .../node_modules/@openai/codex
        package, triple = target
        # where codex.js looks: the platform package beside it, else the main package's own vendor folder
        for vendor in (
            os.path.join(os.path.dirname(package_root), package, "vendor", triple),
            os.path.join(package_root, "vendor", triple),
        ):
            if os.path.isdir(vendor):
                files, folders = tree(vendor, f"vendor/{triple}")
                return BuildFiles(files=(BuildFile("bin/codex.js", launcher), *files), watched=folders)
        return super().build_files(binary)

    def install_roots(self, binary: str) -> tuple[str, ...]:
        """The npm prefix, plus the folder of the `node` that `#!/usr/bin/env node` will find."""
        roots = list(super().install_roots(binary))
        node = shutil.which("node")
        if node:
            folder = os.path.dirname(os.path.realpath(node))
            if folder not in roots:
                roots.append(folder)
        return tuple(roots)


ADAPTER = CodexAdapter()
