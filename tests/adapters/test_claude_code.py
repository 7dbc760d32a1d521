"""Claude Code adapter: version parsing, dialects, settings.json/mcp.json, ownership, coverage, run arguments."""

from __future__ import annotations

import json

import pytest

from agentbox.compile.adapters import get_adapter
from agentbox.compile.adapters.claude_code import SANDBOX_V1, SANDBOX_V2, mcp_tool_name
from agentbox.compile.adapters.native import flatten
from agentbox.core.capability import capability_id
from agentbox.core.intent import ITEMS
from agentbox.core.plan import CompileContext
from agentbox.core.profile import Profile

ADAPTER = get_adapter("claude-code")
CWD, HOME, CFG = "/w/proj", "/home/u", "/tmp/agentbox/config"

MCP_SERVERS = {
    "canary": {"command": "python", "args": ["-m", "agentbox.canary_mcp", "--log", "/l"], "env": {"B": "2", "A": "1"}},
    "other": {"command": "other-server"},
    "my.srv": {"command": "x"},
}
RO_SHELL_NONE = {
    "workspace": {"access": "read_only"},
    "shell": {"access": "allow"},
    "command_network": {"access": "none"},
    "host_home": "hidden",
}
# The system/init event of `claude -p --output-format stream-json --verbose` 2.1.332 for a
# read_only + shell allow + network none plan with the canary server (trimmed to what is checked).
INIT_2_1_332 = {
    "type": "system",
    "subtype": "init",
    "permissionMode": "default",
    "claude_code_version": "2.1.332",
    "sandbox_enabled": True,
    "mcp_servers": [{"name": "canary", "status": "connected", "source": "dynamic"}],
    "tools": [
        "Task",
        "Bash",
        "CronCreate",
        "CronDelete",
        "CronList",
        "ListAgents",
        "ListMcpResourcesTool",
        "Monitor",
        "Read",
        "ReadMcpResourceDirTool",
        "ReadMcpResourceTool",
        "ReportFindings",
        "ScheduleWakeup",
        "SendMessage",
        "Skill",
        "TaskStop",
        "Workflow",
        "mcp__canary__allowed_echo",
        "mcp__canary__denied_write",
        "mcp__canary__secret_read",
    ],
}


def profile(intent=None, model=None) -> Profile:
    return Profile.model_validate(
        {
            "name": "p",
            "harness": "claude-code",
            "permission_intent": intent or {},
            "model": model or {},
            "mcp_servers": MCP_SERVERS,
        }
    )


def compile_(intent=None, model=None, version="2.1.332", cwd=CWD, home=HOME):
    return ADAPTER.compile(profile(intent, model), CompileContext(cwd=cwd, home=home, harness_version=version))


def settings(result) -> dict:
    assert result.artifacts[0].path == "settings.json"
    return json.loads(result.artifacts[0].content)


def mcp_config(result) -> dict:
    assert result.artifacts[1].path == "mcp.json"
    return json.loads(result.artifacts[1].content)


# -- probe -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "output,version", [("2.1.197 (Claude Code)", "2.1.197"), ("2.1.332 (Claude Code)\n", "2.1.332")]
)
def test_the_version_is_read_from_the_real_version_output(output, version):
    assert ADAPTER.parse_version(output) == version


def test_an_output_that_is_not_claude_code_gives_no_version():
    assert ADAPTER.parse_version("codex-cli 0.171.0") is None


@pytest.mark.parametrize(
    "version,dialect",
    [
        ("2.1.100", SANDBOX_V1),
        ("2.1.197", SANDBOX_V1),
        ("2.1.331", SANDBOX_V1),
        ("2.1.332", SANDBOX_V2),
        ("2.2.0", SANDBOX_V2),
    ],
)
def test_the_sandbox_dialect_changes_at_2_1_332(version, dialect):
    assert ADAPTER.declarations.dialect_for(version) == dialect


def test_an_unknown_version_compiles_the_older_dialect():
    assert compile_(version=None).dialect == SANDBOX_V1


def test_every_intent_value_has_a_declaration_in_every_dialect():
    for cap in (
        "workspace.none",
        "workspace.read_only",
        "workspace.read_write",
        "shell.deny",
        "shell.ask",
        "command_network.none",
        "command_network.restricted",
        "mcp.allowlist",
        "host_home.hidden",
        "environment.allowlist",
    ):
        for version in ("2.1.197", "2.1.332"):
            assert not ADAPTER.declarations.report(cap, version).reason.startswith("claude-code has no mechanism")


def test_a_version_outside_the_tested_range_is_at_most_partial():
    inside = ADAPTER.declarations.report("shell.deny", "2.1.332")
    outside = ADAPTER.declarations.report("shell.deny", "2.1.400")
    assert inside.support == "exact"
    assert outside.support == "partial" and "outside the tested range" in outside.reason


def test_file_and_network_rules_are_partial_with_their_bypass_named():
    for cap in ("workspace.read_only", "command_network.none", "host_home.hidden"):
        for version in ("2.1.197", "2.1.332"):
            report = ADAPTER.declarations.report(cap, version)
            assert report.support == "partial" and "mcp_server" in report.bypass_surfaces
    assert "shell" in ADAPTER.declarations.report("workspace.read_only", "2.1.197").bypass_surfaces


# -- determinism -------------------------------------------------------------------------------
def test_compile_is_deterministic_byte_for_byte():
    intent = {**RO_SHELL_NONE, "mcp": {"servers": ["other", "canary"]}}
    a, b = compile_(intent), compile_(intent)
    assert a == b
    assert [x.content for x in a.artifacts] == [x.content for x in b.artifacts]


# -- permission modes --------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["2.1.197", "2.1.332"])
def test_every_mode_that_could_drift_is_set_explicitly(version):
    perms = settings(compile_(version=version))["permissions"]
    assert perms["defaultMode"] == "default"  # interactive 2.1.332 otherwise starts in auto mode
    assert perms["disableBypassPermissionsMode"] == "disable"
    assert perms["disableAutoMode"] == "disable"
    assert settings(compile_(version=version))["disableAllHooks"] is True


def test_a_denied_shell_denies_bash_and_monitor_and_leaves_the_sandbox_off():
    s = settings(compile_({"shell": {"access": "deny"}}))
    assert {"Bash", "Monitor"} <= set(s["permissions"]["deny"])
    assert s["sandbox"] == {"enabled": False}


def test_an_asked_shell_puts_bash_in_ask_rules_and_turns_sandbox_auto_allow_off():
    s = settings(compile_({"shell": {"access": "ask"}}))
    assert {"Bash", "Monitor"} <= set(s["permissions"]["ask"])
    assert "Bash" not in s["permissions"]["allow"]
    assert s["sandbox"]["autoAllowBashIfSandboxed"] is False


# -- sandbox block per dialect -----------------------------------------------------------------
def test_a_required_item_on_the_sandbox_makes_it_fail_closed():
    sb = settings(compile_(RO_SHELL_NONE))["sandbox"]
    assert sb["enabled"] and sb["failIfUnavailable"] is True and sb["allowUnsandboxedCommands"] is False
    assert sb["network"]["allowedDomains"] == [] and sb["network"]["strictAllowlist"] is True
    assert sb["filesystem"]["denyWrite"] == [CWD] and sb["filesystem"]["denyRead"] == [HOME]
    assert sb["enableWeakerNestedSandbox"] is True  # 2.1.332 inside Agent-Box's bwrap


def test_an_advisory_only_sandbox_warns_that_it_may_run_unsandboxed():
    result = compile_({"workspace": {"access": "read_write", "requirement": "advisory"}})
    sb = settings(result)["sandbox"]
    assert sb["failIfUnavailable"] is False and sb["allowUnsandboxedCommands"] is False
    assert any("failIfUnavailable is off" in w for w in result.warnings)


def test_the_older_dialect_keeps_its_sandbox_off_a_read_only_workspace():
    result = compile_(RO_SHELL_NONE, version="2.1.197")
    assert settings(result)["sandbox"] == {"enabled": False}
    assert "Edit" in settings(result)["permissions"]["deny"]
    assert result.coverage["workspace"].support == "partial"
    assert {"Bash", "Monitor"} <= set(result.coverage["command_network"].bypass_surfaces)


def test_the_older_dialect_uses_its_sandbox_for_a_read_write_workspace_without_v2_keys():
    sb = settings(compile_({**RO_SHELL_NONE, "workspace": {"access": "read_write"}}, version="2.1.197"))["sandbox"]
    assert sb["enabled"] and sb["enableWeakerNestedSandbox"] is False
    assert "strictAllowlist" not in sb["network"] and "allowNestedUserNamespaces" not in sb


def test_an_unrestricted_network_under_the_sandbox_allows_every_domain():
    sb = settings(compile_({"command_network": {"access": "unrestricted"}}))["sandbox"]
    assert sb["network"]["allowedDomains"] == ["*"] and "strictAllowlist" not in sb["network"]


def test_a_restricted_network_allows_its_hosts_and_warns_that_ports_are_dropped():
    result = compile_({"command_network": {"access": "restricted", "allow_domains": ["api.x.org:8443", "*.y.com"]}})
    s = settings(result)
    assert s["sandbox"]["network"]["allowedDomains"] == ["*.y.com", "api.x.org"]
    assert "WebFetch(domain:api.x.org)" in s["permissions"]["allow"] and "WebSearch" in s["permissions"]["deny"]
    assert any("api.x.org:8443" in w for w in result.warnings)


def test_a_workspace_inside_the_home_is_re_allowed_for_reading():
    result = compile_({"host_home": "hidden"}, cwd="/home/u/proj")
    fs = settings(result)["sandbox"]["filesystem"]
    assert fs["denyRead"] == ["/home/u"] and fs["allowRead"] == ["/home/u/proj"]
    assert not any(r.startswith("Read(") for r in settings(result)["permissions"]["deny"])
    assert result.coverage["host_home"].support == "partial"


def test_a_path_rules_cannot_express_is_an_error():
    assert compile_(cwd="/w/my project").errors


# -- MCP ---------------------------------------------------------------------------------------
def test_only_allowlisted_servers_reach_the_mcp_config_and_the_config_is_strict():
    result = compile_({"mcp": {"servers": ["canary"]}})
    assert set(mcp_config(result)["mcpServers"]) == {"canary"}
    assert mcp_config(result)["mcpServers"]["canary"] == {
        "type": "stdio",
        "command": "python",
        "args": ["-m", "agentbox.canary_mcp", "--log", "/l"],
        "env": {"A": "1", "B": "2"},
    }
    assert result.argv[-3:] == ("--mcp-config", f"{CFG}/mcp.json", "--strict-mcp-config")
    assert "mcp__canary" in settings(result)["permissions"]["allow"]


def test_no_server_still_compiles_a_strict_empty_config():
    result = compile_()
    assert mcp_config(result) == {"mcpServers": {}} and "--strict-mcp-config" in result.argv


def test_a_tool_allowlist_allows_the_listed_tools_and_denies_mcp_resources():
    result = compile_({"mcp": {"servers": ["canary"], "tools": {"canary": ["allowed_echo"]}}})
    perms = settings(result)["permissions"]
    assert "mcp__canary__allowed_echo" in perms["allow"] and "mcp__canary" not in perms["allow"]
    assert {"ListMcpResourcesTool", "ReadMcpResourceTool"} <= set(perms["deny"])


def test_a_tool_allowlist_without_the_servers_inventory_is_partial_and_says_why():
    result = compile_({"mcp": {"servers": ["canary"], "tools": {"canary": ["allowed_echo"]}}})
    assert result.coverage["mcp"].support == "partial"
    assert any("cannot be denied" in w for w in result.warnings)


def test_a_known_tool_inventory_denies_every_unlisted_tool_by_name():
    class Ctx(CompileContext):
        mcp_tools: dict[str, tuple[str, ...]] = {}

    ctx = Ctx(
        cwd=CWD,
        home=HOME,
        harness_version="2.1.332",
        mcp_tools={"canary": ("allowed_echo", "denied_write", "secret_read")},
    )
    result = ADAPTER.compile(profile({"mcp": {"servers": ["canary"], "tools": {"canary": ["allowed_echo"]}}}), ctx)
    deny = settings(result)["permissions"]["deny"]
    assert {"mcp__canary__denied_write", "mcp__canary__secret_read"} <= set(deny)
    assert "mcp__canary__allowed_echo" not in deny
    assert result.coverage["mcp"].support == "exact"


def test_an_empty_tool_allowlist_denies_the_whole_server():
    perms = settings(compile_({"mcp": {"servers": ["canary"], "tools": {"canary": []}}}))["permissions"]
    assert "mcp__canary" in perms["deny"]


def test_mcp_names_are_normalized_as_claude_code_does():
    assert mcp_tool_name("my.srv", "a-b.c") == "mcp__my_srv__a-b_c"


# -- model -------------------------------------------------------------------------------------
def test_a_custom_endpoint_goes_to_anthropic_base_url_and_its_host_to_the_requirements():
    result = compile_(model={"base_url": "http://127.0.0.1:8080/v1", "name": "m1"})
    assert result.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8080"  # Claude Code adds /v1/messages
    assert result.env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "m1" and settings(result)["model"] == "m1"
    assert result.requirements.model_endpoint == "127.0.0.1:8080"
    assert result.requirements.env_allow == ("ANTHROPIC_API_KEY",)


def test_the_default_provider_sets_no_endpoint_and_passes_the_standard_key_name():
    result = compile_()
    assert "ANTHROPIC_BASE_URL" not in result.env and result.requirements.model_endpoint is None
    assert "ANTHROPIC_API_KEY" in result.requirements.env_allow and "apiKeyHelper" not in settings(result)


def test_another_key_variable_is_read_by_an_api_key_helper_never_inlined():
    result = compile_({"environment": {"allow": ["FOO"]}}, model={"api_key_env": "MY_KEY"})
    assert settings(result)["apiKeyHelper"] == "printenv MY_KEY"
    assert result.requirements.env_allow == ("FOO", "MY_KEY")


def test_a_provider_claude_code_cannot_speak_is_an_error():
    assert compile_(model={"provider": "openai"}).errors


def test_the_environment_points_claude_code_at_the_private_config_home_and_stays_quiet():
    env = compile_().env
    assert env["CLAUDE_CONFIG_DIR"] == CFG and env["ENABLE_TOOL_SEARCH"] == "false"
    for key in ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER"):
        assert env[key] == "1"
    assert "IS_SANDBOX" not in env


def test_the_first_request_waits_for_every_mcp_server_to_connect():
    # 2.1.197 sent it while a slow allowed server was still connecting, and the call to its tool failed
    assert compile_().env["MCP_CONNECTION_NONBLOCKING"] == "0"


# -- owners and overrides ----------------------------------------------------------------------
def test_security_keys_are_owned_by_the_items_they_enforce():
    owners = compile_(RO_SHELL_NONE).artifacts[0].owners
    assert owners["permissions.defaultMode"] == "workspace"
    assert owners["sandbox.filesystem.denyWrite"] == "workspace"
    assert owners["sandbox.network.allowedDomains"] == "command_network"
    assert owners["sandbox.filesystem.denyRead"] == "host_home"
    assert owners["sandbox.autoAllowBashIfSandboxed"] == "shell"


def test_every_owned_key_exists_in_the_compiled_settings():
    result = compile_({**RO_SHELL_NONE, "mcp": {"servers": ["canary"]}}, model={"api_key_env": "K"})
    flat = flatten(settings(result))
    assert set(result.artifacts[0].owners) <= set(flat)


def test_a_patch_that_bypasses_permissions_changes_an_owned_key():
    result = compile_(RO_SHELL_NONE)
    _, changed = ADAPTER.apply_patch(result, {"permissions": {"defaultMode": "bypassPermissions"}})
    assert changed == ["permissions.defaultMode"]
    assert result.artifacts[0].owners[changed[0]] == "workspace"


# -- coverage and run --------------------------------------------------------------------------
def test_coverage_names_a_mechanism_for_every_item():
    result = compile_(RO_SHELL_NONE)
    assert set(result.coverage) == set(ITEMS)
    assert result.coverage["shell"].support == "exact"
    assert result.coverage["environment"].support == "unsupported"
    cap = capability_id("workspace", {"access": "read_only"})
    assert result.coverage["workspace"].support == ADAPTER.declarations.report(cap, "2.1.332").support


def test_headless_argv_prints_stream_json_and_guards_the_prompt():
    result = compile_()
    argv = ADAPTER.headless_argv(result, "-rf everything")
    assert argv[:2] == ["--settings", f"{CFG}/settings.json"] and ["--setting-sources", "user"] == argv[2:4]
    assert argv[-6:] == ["-p", "--output-format", "stream-json", "--verbose", "--", "-rf everything"]
    assert "--dangerously-skip-permissions" not in argv and "--permission-mode" not in argv


def test_the_state_file_skips_first_run_dialogs_for_this_workspace_only():
    state = json.loads(compile_().artifacts[2].content)
    assert state == {"hasCompletedOnboarding": True, "projects": {CWD: {"hasTrustDialogAccepted": True}}}


def test_the_init_event_of_a_loaded_plan_shows_no_problem():
    result = compile_({**RO_SHELL_NONE, "mcp": {"servers": ["canary"]}})
    assert ADAPTER.verify_init(result, INIT_2_1_332) == []


def test_an_init_event_from_an_ignored_settings_file_is_caught():
    result = compile_({**RO_SHELL_NONE, "mcp": {"servers": ["canary"]}})
    dropped = {**INIT_2_1_332, "permissionMode": "auto", "tools": [*INIT_2_1_332["tools"], "Write"], "mcp_servers": []}
    problems = ADAPTER.verify_init(result, dropped)
    assert len(problems) == 3 and any("Write" in p for p in problems)


def test_the_vocabulary_uses_the_native_tool_names_and_argument_shapes():
    vocab = ADAPTER.tool_vocabulary
    assert vocab.wire_api == "anthropic-messages"
    assert (vocab.shell.tool, vocab.write_file.tool, vocab.edit_file.tool) == ("Bash", "Write", "Edit")
    assert set(vocab.edit_file.arguments) == {"file_path", "old_string", "new_string"}
    assert set(vocab.fetch_url.arguments) == {"url", "prompt"}  # WebFetch requires both
    assert vocab.mcp_call.tool == "mcp__{server}__{tool}" and vocab.mcp_call.arguments == "{arguments}"


# -- inside Agent-Box's sandbox ------------------------------------------------------------------
INSIDE = {"sandbox_enforces": ("workspace", "command_network", "host_home"), "sandbox_env": ("HTTP_PROXY",)}


@pytest.mark.parametrize("version", ["2.1.197", "2.1.332"])
@pytest.mark.parametrize("net", [{"access": "none"}, {"access": "restricted", "allow_domains": ["pypi.org:8443"]}])
def test_inside_an_os_sandbox_that_enforces_the_network_claudes_own_sandbox_is_left_off(version, net):
    """It needs unix sockets, which that sandbox refuses (seen: "Sandbox is required but failed to initialize")."""
    intent = {"workspace": {"access": "read_write"}, "command_network": net}
    context = CompileContext(cwd=CWD, home=HOME, harness_version=version, **INSIDE)
    result = ADAPTER.compile(profile(intent), context)
    assert settings(result)["sandbox"] == {"enabled": False}
    assert "left off inside the OS sandbox" in result.coverage["command_network"].reason
    assert not any("not ports" in w for w in result.warnings)  # the OS layer's proxy checks ports
    assert settings(compile_(intent, version=version))["sandbox"]["enabled"] is True  # alone: still on


def test_inside_the_os_sandbox_restricted_skips_the_webfetch_preflight_the_proxy_would_refuse():
    intent = {"command_network": {"access": "restricted", "allow_domains": ["pypi.org"]}}
    inside = ADAPTER.compile(profile(intent), CompileContext(cwd=CWD, home=HOME, harness_version="2.1.332", **INSIDE))
    assert settings(inside)["skipWebFetchPreflight"] is True
    assert inside.artifacts[0].owners["skipWebFetchPreflight"] == "command_network"
    assert "WebFetch(domain:pypi.org)" in settings(inside)["permissions"]["allow"]
    assert "skipWebFetchPreflight" not in settings(compile_(intent))


def test_inside_the_os_sandbox_the_scope_names_what_the_plan_holds_not_claudes_own_sandbox():
    """Claude Code's sandbox is off inside Agent-Box's: `explain` must not say Bash runs in it."""
    inside = ADAPTER.compile(
        profile(RO_SHELL_NONE),
        CompileContext(
            cwd=CWD,
            home=HOME,
            harness_version="2.1.332",
            sandbox_enforces=("workspace", "command_network", "host_home"),
            user_namespaces=False,
        ),
    )
    for item in ("workspace", "command_network", "host_home"):
        cov = inside.coverage[item]
        assert "Claude Code's sandbox" not in cov.enforcement_scope
        assert cov.enforcement_scope == f"{cov.mechanism} only, in this plan"
    alone = compile_(RO_SHELL_NONE)
    assert "Claude Code's sandbox with the workspace in denyWrite" in alone.coverage["workspace"].enforcement_scope
