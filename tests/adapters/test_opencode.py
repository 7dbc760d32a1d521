"""OpenCode adapter: version parsing, dialects, V1 permission rendering, MCP allowlists, provider, owners."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentbox.compile.adapters import get_adapter
from agentbox.compile.adapters.opencode import ADAPTER, CONFIG, tool_id
from agentbox.core.plan import CompileContext
from agentbox.core.profile import Profile

CTX = CompileContext(cwd="/work/project", home="/home/agent", harness_version="1.18.33")
MODEL = {"base_url": "http://127.0.0.1:8787/v1", "name": "scripted-model", "api_key_env": "AGENTBOX_MODEL_KEY"}
SERVERS = {
    "canary": {"command": "python3", "args": ["-m", "agentbox.canary_mcp", "--log", "/w/canary.log"]},
    "other": {"command": "other-mcp", "env": {"MODE": "x"}},
}


def profile(intent: dict | None = None, model: dict | None = MODEL, servers: dict | None = None) -> Profile:
    data = {"name": "t", "harness": "opencode", "permission_intent": intent or {}, "mcp_servers": servers or SERVERS}
    if model is not None:
        data["model"] = model
    return Profile.model_validate(data)


def compile_(intent: dict | None = None, version: str | None = "1.18.33", **kw):
    return ADAPTER.compile(profile(intent, **kw), CTX.model_copy(update={"harness_version": version}))


def config(result) -> dict:
    assert result.artifacts[0].path == CONFIG
    return json.loads(result.artifacts[0].content)


# -- probe and dialects ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "output, version", [("1.18.33", "1.18.33"), ("1.18.16\n", "1.18.16"), ("  1.18.25  \n", "1.18.25")]
)
def test_the_version_is_read_from_the_real_version_output(output, version):
    assert ADAPTER.parse_version(output) == version


def test_an_error_message_is_not_mistaken_for_a_version():
    assert ADAPTER.parse_version("error: unknown option --version 1.18.33x") is None


def test_the_registry_finds_the_adapter_by_harness_name():
    assert get_adapter("opencode") is ADAPTER


@pytest.mark.parametrize(
    "version, dialect",
    [
        ("1.18.16", "v1-ignores-v2"),
        ("1.18.23", "v1-ignores-v2"),
        ("1.18.25", "v1-rejects-v2"),
        ("1.18.33", "v1-rejects-v2"),
        ("1.19.0", "v1-rejects-v2"),
    ],
)
def test_the_dialect_follows_how_the_version_treats_a_v2_permissions_key(version, dialect):
    assert compile_(version=version).dialect == dialect


def test_no_dialect_ever_emits_the_v2_permissions_array():
    for version in ("1.18.16", "1.18.33"):
        cfg = config(compile_({"shell": {"access": "deny"}}, version=version))
        assert "permissions" not in cfg and isinstance(cfg["permission"], dict)


# -- determinism -----------------------------------------------------------------------------------
intents = st.fixed_dictionaries(
    {
        "workspace": st.sampled_from(["none", "read_only", "read_write"]).map(lambda a: {"access": a}),
        "shell": st.sampled_from(["deny", "ask", "allow"]).map(lambda a: {"access": a}),
        "command_network": st.sampled_from(
            [
                {"access": "none"},
                {"access": "unrestricted"},
                {"access": "restricted", "allow_domains": ["api.github.com", "*.x.org"]},
            ]
        ),
        "mcp": st.sampled_from(
            [{}, {"servers": ["canary"]}, {"servers": ["canary", "other"], "tools": {"canary": ["allowed_echo"]}}]
        ),
    }
)


@settings(max_examples=40, deadline=None)
@given(intents)
def test_compiling_twice_gives_the_same_bytes(intent):
    a, b = compile_(intent), compile_(intent)
    assert a == b
    assert a.artifacts[0].content == b.artifacts[0].content


# -- permission rendering --------------------------------------------------------------------------
def test_the_permission_object_opens_with_deny_all_so_unnamed_tools_are_not_offered():
    perm = config(compile_())["permission"]
    assert next(iter(perm.items())) == ("*", "deny")


@pytest.mark.parametrize("shell", ["deny", "ask", "allow"])
def test_the_shell_intent_is_the_bash_rule(shell):
    assert config(compile_({"shell": {"access": shell}}))["permission"]["bash"] == shell


def test_a_read_only_workspace_denies_edit_and_keeps_read():
    perm = config(compile_({"workspace": {"access": "read_only"}}))["permission"]
    assert perm["edit"] == "deny" and perm["read"]["*"] == "allow" and perm["external_directory"] == "deny"


def test_no_workspace_denies_every_file_tool():
    perm = config(compile_({"workspace": {"access": "none"}}))["permission"]
    assert [perm[t] for t in ("read", "glob", "grep", "list", "edit")] == ["deny"] * 5


def test_network_none_denies_the_fetch_tools():
    perm = config(compile_({"command_network": {"access": "none"}}))["permission"]
    assert [perm[t] for t in ("webfetch", "websearch", "codesearch")] == ["deny"] * 3


def test_restricted_network_denies_webfetch_alone_and_leaves_it_to_the_egress_proxy_inside_the_sandbox():
    # webfetch takes an action only (a per-URL object makes OpenCode refuse to start), so alone it is denied
    intent = {"command_network": {"access": "restricted", "allow_domains": ["api.github.com", "*.example.com"]}}
    alone = compile_(intent)
    assert config(alone)["permission"]["webfetch"] == "deny"
    assert any("no per-host rule" in w for w in alone.warnings)
    inside = ADAPTER.compile(profile(intent), CTX.model_copy(update={"sandbox_enforces": ("command_network",)}))
    assert config(inside)["permission"]["webfetch"] == "allow" and not inside.warnings
    assert [config(r)["permission"]["websearch"] for r in (alone, inside)] == ["deny", "deny"]


def test_headless_ask_is_never_turned_into_auto_approval():
    result = compile_({"shell": {"access": "ask"}})
    argv = ADAPTER.headless_argv(result, "p")
    assert not {"--auto", "--yolo", "--dangerously-skip-permissions"} & set(argv)


# -- MCP -------------------------------------------------------------------------------------------
def test_only_allowlisted_servers_reach_the_mcp_block():
    cfg = config(compile_({"mcp": {"servers": ["canary"]}}))
    assert list(cfg["mcp"]) == ["canary"]
    assert cfg["mcp"]["canary"] == {
        "type": "local",
        "command": ["python3", "-m", "agentbox.canary_mcp", "--log", "/w/canary.log"],
        "enabled": True,
    }


def test_no_allowlisted_server_means_no_mcp_block():
    assert "mcp" not in config(compile_())


def test_a_tool_allowlist_becomes_allow_rules_named_server_underscore_tool():
    cfg = config(compile_({"mcp": {"servers": ["canary"], "tools": {"canary": ["allowed_echo"]}}}))
    perm = cfg["permission"]
    assert perm["canary_allowed_echo"] == "allow"
    assert not any(k.startswith("canary_") and k != "canary_allowed_echo" for k in perm)
    assert perm["read"]["mcp:*"] == "deny" and "mcp:canary:*" not in perm["read"]


def test_a_whole_server_allowlist_is_a_wildcard_placed_before_every_builtin_rule():
    perm = config(compile_({"mcp": {"servers": ["canary"]}}))["permission"]
    keys = list(perm)
    assert perm["canary_*"] == "allow" and perm["read"]["mcp:canary:*"] == "allow"
    assert keys.index("canary_*") < min(keys.index(k) for k in ("read", "bash", "external_directory", "plan_enter"))


def test_server_environment_is_carried_into_the_mcp_entry():
    cfg = config(compile_({"mcp": {"servers": ["other"]}}))
    assert cfg["mcp"]["other"]["environment"] == {"MODE": "x"}


def test_mcp_tool_ids_replace_characters_opencode_does_not_keep():
    assert tool_id("my.server", "do-it.now") == "my_server_do-it_now"


def test_a_server_allowing_no_tools_is_left_out_with_a_warning():
    result = compile_({"mcp": {"servers": ["canary"], "tools": {"canary": []}}})
    assert "mcp" not in config(result) and any("allows no tools" in w for w in result.warnings)


def overlap_servers():
    return {"a": {"command": "a"}, "a_b": {"command": "ab"}}


def test_a_wildcard_that_reaches_another_servers_tools_is_an_error_when_mcp_is_required():
    result = compile_({"mcp": {"servers": ["a", "a_b"], "tools": {"a": ["t1"]}}}, servers=overlap_servers())
    assert any("'a_b_*'" in e and "'a'" in e for e in result.errors)


def test_the_same_overlap_only_warns_when_mcp_is_advisory():
    result = compile_(
        {"mcp": {"servers": ["a", "a_b"], "tools": {"a": ["t1"]}, "requirement": "advisory"}}, servers=overlap_servers()
    )
    assert not result.errors and any("'a_b_*'" in w for w in result.warnings)


def test_servers_with_distinct_prefixes_do_not_overlap():
    result = compile_({"mcp": {"servers": ["canary", "other"], "tools": {"canary": ["allowed_echo"]}}})
    assert not result.errors and not result.warnings


# -- model provider --------------------------------------------------------------------------------
def test_a_base_url_becomes_an_openai_compatible_provider_with_the_key_named_not_inlined():
    result = compile_()
    cfg = config(result)
    provider = cfg["provider"]["agentbox"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {"baseURL": "http://127.0.0.1:8787/v1", "apiKey": "{env:AGENTBOX_MODEL_KEY}"}
    assert cfg["model"] == cfg["small_model"] == "agentbox/scripted-model"
    assert cfg["enabled_providers"] == ["agentbox"]
    assert result.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"


def test_the_key_variable_is_allowed_into_the_sandbox_and_the_endpoint_is_host_and_port():
    req = compile_({"environment": {"allow": ["LANG"]}}).requirements
    assert req.env_allow == ("AGENTBOX_MODEL_KEY", "LANG")
    assert req.model_endpoint == "127.0.0.1:8787"


def test_an_https_base_url_without_a_port_uses_443():
    req = compile_(model={"base_url": "https://models.example.com/v1", "name": "m"}).requirements
    assert req.model_endpoint == "models.example.com:443"


def test_a_base_url_without_a_model_name_cannot_compile():
    assert any("model.name" in e for e in compile_(model={"base_url": "http://127.0.0.1:1/v1"}).errors)


def test_without_model_settings_the_default_provider_is_left_alone():
    result = compile_(model=None)
    cfg = config(result)
    assert not {"provider", "model", "enabled_providers"} & set(cfg)
    assert "OPENCODE_DISABLE_MODELS_FETCH" not in result.env and result.requirements.model_endpoint is None


def test_a_named_builtin_provider_gets_the_model_and_key_variable():
    cfg = config(compile_(model={"provider": "anthropic", "name": "claude-x", "api_key_env": "ANTHROPIC_API_KEY"}))
    assert cfg["model"] == "anthropic/claude-x"
    assert cfg["provider"] == {"anthropic": {"options": {"apiKey": "{env:ANTHROPIC_API_KEY}"}}}


# -- environment and argv --------------------------------------------------------------------------
def test_config_and_every_xdg_dir_point_into_the_private_config_home():
    env = compile_().env
    assert env["OPENCODE_CONFIG"] == "/tmp/agentbox/config/opencode.json"
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        assert env[var].startswith("/tmp/agentbox/config/xdg/")
    assert env["TMPDIR"] == "/tmp/agentbox/tmp"


def test_project_config_and_external_plugins_are_switched_off():
    env = compile_().env
    assert env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1" and env["OPENCODE_PURE"] == "1"


def test_the_env_reaches_the_sandbox_as_variables_to_set():
    result = compile_()
    assert result.requirements.env_set == result.env
    assert result.requirements.surfaces == ADAPTER.surfaces


def test_passing_an_opencode_variable_through_warns():
    result = compile_({"environment": {"allow": ["OPENCODE_PERMISSION"]}})
    assert any("OPENCODE_PERMISSION" in w for w in result.warnings)


def test_headless_argv_runs_json_with_the_model_and_the_prompt_as_words_after_a_double_dash():
    argv = ADAPTER.headless_argv(compile_(), "-x  two words")
    assert argv[:6] == ["run", "--format", "json", "-m", "agentbox/scripted-model", "--"]
    assert " ".join(argv[6:]) == "-x  two words" and not any(" " in w for w in argv[6:])


def test_interactive_argv_passes_the_model_and_the_users_extra_arguments():
    assert ADAPTER.interactive_argv(compile_(), ["--agent", "plan"]) == [
        "-m",
        "agentbox/scripted-model",
        "--agent",
        "plan",
    ]


def test_without_a_model_the_argv_names_none():
    assert "-m" not in ADAPTER.headless_argv(compile_(model=None), "p")


# -- owners and overrides --------------------------------------------------------------------------
def test_security_keys_have_owners():
    owners = compile_({"mcp": {"servers": ["canary"], "tools": {"canary": ["allowed_echo"]}}}).artifacts[0].owners
    assert owners["permission.bash"] == "shell"
    assert (
        owners["permission.edit"] == owners["permission.read"] == owners["permission.external_directory"] == "workspace"
    )
    assert owners["permission.webfetch"] == "command_network"
    assert owners["permission.*"] == owners["permission.canary_allowed_echo"] == owners["mcp"] == "mcp"


def test_an_agent_level_bash_rule_in_a_patch_counts_as_a_change_of_the_bash_rule():
    _, changed = ADAPTER.apply_patch(compile_(), {"agent": {"build": {"permission": {"bash": "allow"}}}})
    assert "permission.bash" in changed


def test_an_extra_rule_for_an_unnamed_tool_counts_against_the_deny_default():
    _, changed = ADAPTER.apply_patch(compile_(), {"permission": {"canary_denied_write": "allow"}})
    assert "permission.*" in changed and "permission.canary_denied_write" in changed


def test_a_harmless_patch_reports_only_its_own_key():
    patched, changed = ADAPTER.apply_patch(compile_(), {"autoupdate": True})
    assert changed == ["autoupdate"] and config(patched)["autoupdate"] is True


@pytest.mark.parametrize("version, words", [("1.18.16", "silently ignores"), ("1.18.33", "refuses to start")])
def test_a_v2_permissions_patch_warns_what_this_version_does_with_it(version, words):
    patched, _ = ADAPTER.apply_patch(
        compile_(version=version), {"permissions": [{"action": "*", "resource": "*", "effect": "allow"}]}
    )
    assert any(words in w for w in patched.warnings)


# -- coverage ---------------------------------------------------------------------------------------
def coverage(intent, version="1.18.33"):
    return {k: v.support for k, v in compile_(intent, version=version).coverage.items()}


def test_shell_deny_and_the_mcp_allowlist_are_exact_inside_the_tested_range():
    cov = coverage({"shell": {"access": "deny"}, "mcp": {"servers": ["canary"]}})
    assert cov["shell"] == "exact" and cov["mcp"] == "exact"


def test_file_and_network_rules_are_partial_with_the_shell_named_as_bypass():
    result = compile_({"workspace": {"access": "read_only"}, "command_network": {"access": "none"}})
    for item in ("workspace", "command_network"):
        assert result.coverage[item].support == "partial" and "shell" in result.coverage[item].bypass_surfaces


def test_the_environment_allowlist_is_left_to_the_sandbox():
    assert coverage({"environment": {"allow": ["LANG"]}})["environment"] == "unsupported"


@pytest.mark.parametrize("version", ["1.18.15", "1.18.34", "1.19.0", None])
def test_a_version_outside_the_tested_range_downgrades_exact_to_partial(version):
    result = compile_({"shell": {"access": "deny"}}, version=version)
    assert result.coverage["shell"].support == "partial"
    assert "outside the tested range" in result.coverage["shell"].reason


# -- vocabulary ---------------------------------------------------------------------------------------
def test_the_vocabulary_uses_opencodes_tool_names_and_argument_shapes():
    vocab = ADAPTER.tool_vocabulary
    assert vocab.wire_api == "openai-chat"
    assert (
        vocab.shell.tool,
        vocab.write_file.tool,
        vocab.edit_file.tool,
        vocab.read_file.tool,
        vocab.fetch_url.tool,
    ) == ("bash", "write", "edit", "read", "webfetch")
    assert set(vocab.edit_file.arguments) == {"filePath", "oldString", "newString"}
    assert vocab.mcp_call.tool.format(server="canary", tool="allowed_echo") == tool_id("canary", "allowed_echo")


def test_an_mcp_tool_named_like_a_builtin_rule_cannot_compile_when_mcp_is_required():
    servers = {"external": {"command": "x"}}
    result = compile_({"mcp": {"servers": ["external"], "tools": {"external": ["directory"]}}}, servers=servers)
    assert any("'external_directory'" in e for e in result.errors)


# -- start-up ---------------------------------------------------------------------------------------


def test_the_global_config_folder_is_marked_as_holding_the_plugin_sdk_so_no_start_installs_it():
    files = {a.path: a.content for a in compile_().artifacts}
    folder = "xdg/config/opencode"
    wanted = set(json.loads(files[f"{folder}/package.json"])["dependencies"])
    locked = set(json.loads(files[f"{folder}/package-lock.json"])["packages"][""]["dependencies"])
    # OpenCode (Npm.install) installs when node_modules/ is missing or the lock's root lacks a wanted package
    assert "@opencode-ai/plugin" in wanted and wanted <= locked
    assert f"{folder}/node_modules/.package-lock.json" in files, "node_modules/ exists"
    assert CTX.harness_version in files[f"{folder}/package.json"]
