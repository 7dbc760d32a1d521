"""Hermes Agent (pip `hermes-agent`): intent -> $HERMES_HOME/config.yaml + environment.

Hermes has no OS sandbox of its own. What it does have, and what this adapter compiles:
- toolsets: `platform_toolsets.cli` (an explicit allowlist, so new default toolsets cannot drift in)
  and `agent.disabled_toolsets` (subtracted last). Leaving out `terminal` and `code_execution` takes
  the shell away; `file` the file tools; `web`/`browser` Hermes's own fetch tools.
- `approvals`: mode, timeout, cron_mode and, from 0.18.1, `deny` globs that hold even when Hermes
  would auto-approve (`hermes -z`, mode off).
- `HERMES_WRITE_SAFE_ROOT` (environment): write_file and patch refuse paths outside one root.
- `mcp_servers` with `tools.include`; server names in the platform toolset list are the allowlist.
Hermes never confines its terminal: every file or network rule is partial at this layer and relies
on the OS sandbox. docs/harnesses/hermes.md records what was verified on the real binaries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentbox.harnesses.build_identity import BuildFiles, python_distribution
from agentbox.harnesses.packages import PACKAGES
from agentbox.core.intent import PermissionIntent
from agentbox.core.plan import Artifact, CompileResult
from agentbox.core.profile import Profile
from agentbox.compile.adapters.base import Compilation, HarnessAdapter, ToolCall, ToolVocabulary
from agentbox.compile.adapters.native import artifact, ordered, parse

__all__ = ["HermesAdapter", "ADAPTER", "BASE_TOOLSETS", "PROVIDER_NAME"]

CONFIG = "config.yaml"
PROVIDER_NAME = "agentbox"  # the `providers:` entry a custom base_url compiles to
DENY_RULES = "deny-rules"  # dialect from 0.18.1: approvals.deny, MCP tools named mcp__<server>__<tool>

# The toolsets a plan starts from: a coding agent's tools. Left out on purpose: browser (spawns a
# browser, reaches the network), tts (lazy pip installs, network), vision/image_gen (auxiliary
# model routing), cronjob (scheduled runs outside this one), messaging and smart-home toolsets.
BASE_TOOLSETS = (
    "clarify",
    "code_execution",
    "delegation",
    "file",
    "memory",
    "session_search",
    "skills",
    "terminal",
    "todo",
    "web",
)
# What each restrictive intent value takes away (left out of the list and disabled).
_REMOVED = {
    "shell": ("code_execution", "terminal"),  # execute_code runs arbitrary Python: a shell by another name
    "workspace": ("file",),
    "command_network": ("browser", "web"),
}
# Names Hermes resolves as toolsets; an MCP server called like one would switch that toolset on.
_RESERVED = frozenset(
    {
        *BASE_TOOLSETS,
        "browser",
        "vision",
        "video",
        "image_gen",
        "video_gen",
        "x_search",
        "tts",
        "context_engine",
        "cronjob",
        "homeassistant",
        "spotify",
        "discord",
        "discord_admin",
        "yuanbao",
        "computer_use",
        "kanban",
        "project",
        "search",
        "safe",
        "debugging",
        "coding",
        "moa",
        "rl",
        "messaging",
        "all",
        "no_mcp",
    }
)
APPROVAL_TIMEOUT = 60  # seconds a prompt waits (Hermes's default, set explicitly); then: denied
# `chat -Q -q` draws no prompt and reads no key (HermesCLI._approval_callback waits on a queue only its
# prompt_toolkit bindings fill), so a headless run's dangerous command waits the whole timeout for nobody and is
# then denied with the same answer: a headless run denies after 1 s instead (0.19.0)
HEADLESS_APPROVAL_TIMEOUT = 1
MCP_DISCOVERY_TIMEOUT = 30  # seconds; 0.19 stops waiting the instant discovery completes
# config.yaml's top-level keys, in the order the file has always had
_CONFIG_ORDER = (
    "model",
    "providers",
    "platform_toolsets",
    "agent",
    "approvals",
    "command_allowlist",
    "hooks",
    "hooks_auto_accept",
    "terminal",
    "mcp_servers",
    "mcp",
    "mcp_discovery_timeout",
    "security",
)


class HermesAdapter(HarnessAdapter):
    name = "hermes"
    binary_name = "hermes"
    # `hermes --version` -> "Hermes Agent v0.19.0 (2026.7.20)\nInstall directory: ..."
    version_pattern = r"Hermes Agent v(?P<version>[0-9]+(?:\.[0-9]+)+)"

    # -- compile ---------------------------------------------------------------------------------
    # The MCP servers first: their warnings and errors come before the model's, and the shell's last.
    compile_steps = ("mcp", "model", "shell", "workspace", "command_network")

    def start(self, c: Compilation) -> None:
        c.env["HERMES_HOME"] = c.context.config_home

    def compile_mcp(self, c: Compilation) -> None:
        servers = self._mcp_servers(c.profile, c.warnings, c.errors, c.context.sandbox_env)
        c.config["mcp_servers"] = servers
        c.config["mcp"] = {"auto_reload_on_config_change": False}
        if servers:
            # 0.19 discovers MCP servers in the background and snapshots the tools after this wait
            # (default 1.5 s): a slower stdio server would silently be missing.
            c.config["mcp_discovery_timeout"] = MCP_DISCOVERY_TIMEOUT
        c.owners["mcp.auto_reload_on_config_change"] = "mcp"
        c.mechanisms["mcp"] = (
            f"mcp_servers holds only {', '.join(servers)}; tools.include where tools are listed"
            if servers
            else "no mcp_servers; platform toolsets carry no_mcp"
        )

    def compile_model(self, c: Compilation) -> None:
        c.config.update(self._model(c.profile, c.warnings, self.base_url(c.profile, c.context)))

    def compile_shell(self, c: Compilation) -> None:
        shell, deny_rules = c.intent.shell.access, c.dialect == DENY_RULES
        approvals: dict[str, Any] = {
            "mode": "off" if shell == "allow" else "manual",
            "timeout": APPROVAL_TIMEOUT,
            "cron_mode": "deny",
        }
        if deny_rules:
            approvals["deny"] = ["*"] if shell == "deny" else []
        c.config["approvals"] = approvals
        c.config["command_allowlist"] = []
        c.config["hooks"] = {}  # shell hooks run commands on agent events: a shell nobody has to call
        c.config["hooks_auto_accept"] = False
        c.owners.update({f"approvals.{k}": "shell" for k in approvals})
        c.owners.update({"command_allowlist": "shell", "hooks": "shell", "hooks_auto_accept": "shell"})
        if shell == "ask":
            c.warnings.append(
                "shell ask: Hermes asks only for commands on its dangerous-pattern list; other commands "
                "run unasked, and a headless run denies a dangerous one after approvals.timeout"
            )
        c.mechanisms["shell"] = {
            "deny": "terminal and code_execution toolsets left out and disabled"
            + (", approvals.deny ['*']" if deny_rules else ""),
            "ask": "approvals.mode manual (asks only for commands on Hermes's dangerous-pattern list)",
            "allow": "approvals.mode off",
        }[shell]

    def compile_workspace(self, c: Compilation) -> None:
        c.config["terminal"] = {"backend": "local", "cwd": c.context.cwd}  # docker/ssh would run commands elsewhere
        c.owners.update({"terminal.backend": "workspace", "terminal.cwd": "workspace"})
        # Lazy installs pip-install into Hermes's own venv at run time (seen: edge-tts on a first run);
        # tirith downloads a binary from GitHub into $HERMES_HOME/bin. Neither belongs in a plan.
        c.config["security"] = {"allow_lazy_installs": False, "tirith_enabled": False}
        c.owners["security.allow_lazy_installs"] = "workspace"
        # One root only: before 0.18 Hermes read HERMES_WRITE_SAFE_ROOT as a single path.
        access = c.intent.workspace.access
        c.env["HERMES_WRITE_SAFE_ROOT"] = c.context.cwd if access == "read_write" else c.context.tmpdir
        c.mechanisms["workspace"] = {
            "none": "file toolset removed; HERMES_WRITE_SAFE_ROOT is the temp dir",
            "read_only": "HERMES_WRITE_SAFE_ROOT (the temp dir) refuses write_file/patch in the workspace",
            "read_write": "HERMES_WRITE_SAFE_ROOT confines write_file/patch to the workspace",
        }[access]

    def compile_command_network(self, c: Compilation) -> None:
        c.mechanisms["command_network"] = (
            "none" if c.intent.command_network.access == "unrestricted" else "web and browser toolsets removed"
        )

    def finish(self, c: Compilation) -> None:
        # The toolset lists serve several items at once: each restrictive value takes its toolsets away, and
        # the allowlisted MCP servers are toolsets too.
        intent, servers = c.intent, c.config["mcp_servers"]
        removed = {item: ts for item, ts in _REMOVED.items() if self._restricts(intent, item)}
        disabled = sorted({t for ts in removed.values() for t in ts})
        toolsets = [*(t for t in BASE_TOOLSETS if t not in disabled), *(sorted(servers) or ["no_mcp"])]
        c.config["platform_toolsets"] = {"cli": list(toolsets), "acp": list(toolsets)}
        # coding_context "focus" swaps toolsets. environment_probe runs python3, python and `python3 -m pip` at
        # every start to describe the host's Python in the system prompt: programs nobody asked for, and about a
        # tenth of a start's CPU (docs/harnesses/hermes.md).
        c.config["agent"] = {"disabled_toolsets": disabled, "coding_context": "off", "environment_probe": False}
        toolset_owner = c.primary([*removed, "mcp"])
        c.owners.update(
            {
                "platform_toolsets.cli": toolset_owner,
                "platform_toolsets.acp": toolset_owner,
                "agent.coding_context": toolset_owner,
            }
        )
        if disabled:
            c.owners["agent.disabled_toolsets"] = c.primary(list(removed))
        # A stdio MCP server is a command Hermes starts: with the shell denied, adding one is a shell.
        c.owners["mcp_servers"] = c.primary(["mcp", "shell"] if "shell" in removed else ["mcp"])
        config = ordered(c.config, _CONFIG_ORDER)
        c.artifacts = (artifact(CONFIG, config, dict(sorted(c.owners.items()))),)

    @staticmethod
    def _restricts(intent: PermissionIntent, item: str) -> bool:
        if item == "shell":
            return intent.shell.access == "deny"
        if item == "workspace":
            return intent.workspace.access == "none"
        return intent.command_network.access != "unrestricted"

    @staticmethod
    def _mcp_servers(
        profile: Profile, warnings: list[str], errors: list[str], sandbox_env: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """Only allowlisted servers; of those, only allowlisted tools."""
        intent = profile.permission_intent.mcp
        servers: dict[str, Any] = {}
        for name in intent.servers:
            if name in _RESERVED:
                errors.append(f"mcp: server name {name!r} is also a Hermes toolset name; rename the server")
                continue
            tools = intent.allowed_tools(name)
            if tools is not None and not tools:
                # Hermes reads an empty tools.include as "every tool": leave the server out instead.
                warnings.append(f"mcp: server {name!r} allows no tools, so it is not configured")
                continue
            spec = profile.mcp_servers[name]
            entry: dict[str, Any] = {"command": spec.command, "args": list(spec.args)}
            # Hermes starts MCP servers with a few safe variables only: hand on, through its ${VAR} interpolation,
            # the OS sandbox's (the egress proxy's, the run CA's) and the profile's secrets (placeholders)
            forwarded = {v: f"${{{v}}}" for v in sorted({*sandbox_env, *profile.secrets} - set(spec.env))}
            if spec.env or forwarded:
                entry["env"] = dict(sorted({**spec.env, **forwarded}.items()))
            entry["enabled"] = True
            if tools is not None:
                # resources/prompts would add read_resource/get_prompt tools nobody allowlisted
                entry["tools"] = {"include": list(tools), "resources": False, "prompts": False}
            entry["sampling"] = {"enabled": False}  # no model calls on the server's behalf
            servers[name] = entry
        return servers

    @staticmethod
    def _model(profile: Profile, warnings: list[str], base_url: str | None = None) -> dict[str, Any]:
        """`model:` (plus `providers:` for a custom endpoint). The key is named by key_env, never inlined."""
        m = profile.model
        model: dict[str, Any] = {}
        if m.base_url:
            # A bare `provider: custom` reads its key only from config; a named provider has key_env.
            provider: dict[str, Any] = {
                "base_url": (base_url or m.base_url).rstrip("/"),
                "api_mode": "chat_completions",
            }
            if m.api_key_env:
                provider["key_env"] = m.api_key_env
            if m.name:
                provider["default_model"] = m.name
            else:
                warnings.append("model: base_url is set without a model name; Hermes needs one to send requests")
            model["provider"] = f"custom:{PROVIDER_NAME}"
            if m.name:
                model["default"] = m.name
            return {"model": model, "providers": {PROVIDER_NAME: provider}}
        if m.provider != "default":
            model["provider"] = m.provider
        if m.name:
            model["default"] = m.name
        return {"model": model} if model else {}

    # -- run -------------------------------------------------------------------------------------
    def headless_argv(self, result: CompileResult, prompt: str) -> list[str]:
        # `chat -Q -q`: stdout is the final answer only (session_id goes to stderr), exit 0/1, no banner.
        # Not `-z`: it approves every command, and in 0.19 it snapshots the tools without waiting for
        # MCP discovery, so a stdio server that needs more than a moment to start is silently missing.
        return [*result.argv, "chat", "-Q", "-q", prompt]

    def headless_artifacts(self, result: CompileResult) -> tuple[Artifact, ...]:
        out = []
        for a in result.artifacts:
            config = parse(a.path, a.content) if a.path == CONFIG else None
            if isinstance(config, dict) and isinstance(config.get("approvals"), dict):
                config["approvals"]["timeout"] = HEADLESS_APPROVAL_TIMEOUT
                a = artifact(CONFIG, config, a.owners)
            out.append(a)
        return tuple(out)

    def build_files(self, binary: str) -> BuildFiles:
        """The console script only imports `hermes_cli`: the build is the installed distribution (every file
        its RECORD lists), the venv's Python version and the versions of what else the venv holds."""
        return python_distribution(binary, PACKAGES()[self.name].package) or super().build_files(binary)

    def install_roots(self, binary: str) -> tuple[str, ...]:
        """The venv's folder plus the prefix of the interpreter its bin/python symlinks to.

        That interpreter (pyvenv.cfg `home`, here /root/.pyenv/versions/...) usually lives in the host
        home, which the sandbox hides unless it is bound back.
        """
        roots = list(super().install_roots(binary))
        for parent in Path(binary).absolute().parents:
            cfg = parent / "pyvenv.cfg"
            if not cfg.is_file():
                continue
            candidates = [_pyvenv_home(cfg.read_text())]
            python = parent / "bin" / "python"
            if python.exists():
                candidates.append(str(python.resolve().parent))
            for home in filter(None, candidates):
                prefix = Path(home).parent if Path(home).name == "bin" else Path(home)
                # its bin/ and lib/, not the prefix: a Python in ~/.local would bind back AGENTBOX_HOME with it
                for part in (prefix / "bin", prefix / "lib"):
                    if str(part) not in roots:
                        roots.append(str(part))
            break
        return tuple(roots)

    def vocabulary_for(self, version: str | None) -> ToolVocabulary:
        """The tool vocabulary of one version: before 0.18.1 MCP tools were named mcp_<server>_<tool>."""
        vocab = self.tool_vocabulary
        if self.declarations.dialect_for(version) == DENY_RULES or vocab.mcp_call is None:
            return vocab
        legacy = ToolCall(tool="mcp_{server}_{tool}", arguments=vocab.mcp_call.arguments)
        return vocab.model_copy(update={"mcp_call": legacy})


def _pyvenv_home(text: str) -> str | None:
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home":
            return value.strip() or None
    return None


ADAPTER = HermesAdapter()
