"""Codex adapter: version parsing, dialects, pure compile, and the keys that enforce each intent item."""

from __future__ import annotations

import itertools
import tomllib

import pytest

from agentbox.compile.adapters.codex import ADAPTER, COMMAND_ENV, CONFIG_FILE, PERMISSION_PROFILE, PROVIDER_ID
from agentbox.core.capability import load_declarations
from agentbox.core.plan import CompileContext
from agentbox.core.profile import Profile

NEWEST, OLDEST_TESTED = "0.171.0", "0.147.0"
CANARY = {"command": "/usr/bin/python3", "args": ["-m", "canary"], "env": {"CANARY_LOG": "/tmp/log"}}


def profile(intent: dict | None = None, model: dict | None = None, servers: dict | None = None, **extra) -> Profile:
    return Profile.model_validate(
        {
            "name": "p",
            "harness": "codex",
            "model": model or {},
            "permission_intent": intent or {},
            "mcp_servers": servers or {},
            **extra,
        }
    )


def context(version: str | None = NEWEST, **kw) -> CompileContext:
    return CompileContext(cwd="/work/project", home="/home/user", harness_version=version, **kw)


def compiled(intent: dict | None = None, version: str | None = NEWEST, **kw):
    return ADAPTER.compile(profile(intent, **kw), context(version))


def config(result) -> dict:
    (art,) = result.artifacts
    assert art.path == CONFIG_FILE
    return tomllib.loads(art.content)


# -- probe ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "output, version",
    [
        ("codex-cli 0.171.0", "0.171.0"),
        ("codex-cli 0.147.0\n", "0.147.0"),
        (
            "WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries "
            'under temporary dir "/tmp"\ncodex-cli 0.130.0',
            "0.130.0",
        ),
    ],
)
def test_version_is_read_from_the_real_version_output(output, version):
    assert ADAPTER.parse_version(output) == version


def test_an_unrelated_output_gives_no_version():
    assert ADAPTER.parse_version("error: unknown option --version") is None


# -- dialects ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "version, dialect",
    [
        ("0.120.0", "legacy"),
        ("0.132.0", "legacy"),
        ("0.133.0", "profiles"),
        ("0.147.0", "profiles"),
        ("0.148.0", "profiles"),
        ("0.149.0", "profiles_on_request"),
        ("0.171.0", "profiles_on_request"),
        (None, "profiles_on_request"),
    ],
)
def test_dialect_follows_the_boundaries_seen_on_real_binaries(version, dialect):
    assert ADAPTER.declarations.dialect_for(version) == dialect
    assert compiled(version=version).dialect == dialect


def test_profile_dialects_never_write_legacy_sandbox_keys_because_codex_would_prefer_them():
    for version in ("0.133.0", OLDEST_TESTED, NEWEST):
        data = config(compiled({"workspace": {"access": "read_write"}}, version))
        assert "sandbox_mode" not in data and "sandbox_workspace_write" not in data
        assert data["default_permissions"] == PERMISSION_PROFILE


def test_legacy_dialect_uses_sandbox_mode_and_the_workspace_write_table():
    data = config(compiled({"workspace": {"access": "read_write"}, "command_network": {"access": "none"}}, "0.130.0"))
    assert data["sandbox_mode"] == "workspace-write"
    assert data["sandbox_workspace_write"] == {
        "writable_roots": [],
        "network_access": False,
        "exclude_tmpdir_env_var": False,
        "exclude_slash_tmp": True,
    }
    assert "permissions" not in data and "default_permissions" not in data


def test_legacy_dialect_compiles_workspace_none_as_read_only_and_says_so():
    result = compiled({"workspace": {"access": "none"}}, "0.130.0")
    assert config(result)["sandbox_mode"] == "read-only"
    assert any("cannot hide the workspace" in w for w in result.warnings)


# -- purity --------------------------------------------------------------------------------------
INTENTS = [
    {"workspace": {"access": ws}, "shell": {"access": sh}, "command_network": {"access": net}, "host_home": home}
    for ws, sh, net, home in itertools.product(
        ("none", "read_only", "read_write"), ("deny", "ask", "allow"), ("none", "unrestricted"), ("hidden", "visible")
    )
]


@pytest.mark.parametrize("version", ["0.130.0", OLDEST_TESTED, "0.149.0", NEWEST, None])
def test_compile_is_deterministic_and_always_renders_valid_toml(version):
    for intent in INTENTS:
        first, second = compiled(intent, version), compiled(intent, version)
        assert first == second
        assert first.model_dump_json() == second.model_dump_json()
        data = config(first)
        assert data["approval_policy"] in ("never", "untrusted", "on-request")
        assert first.errors == ()


# -- workspace, home, network --------------------------------------------------------------------
@pytest.mark.parametrize("access, entry", [("none", "deny"), ("read_only", "read"), ("read_write", "write")])
def test_workspace_access_becomes_the_workspace_roots_entry_of_the_profile(access, entry):
    fs = config(compiled({"workspace": {"access": access}}))["permissions"][PERMISSION_PROFILE]["filesystem"]
    assert fs[":workspace_roots"] == {".": entry}
    assert fs[":root"] == "read"
    assert (":tmpdir" in fs) == (access == "read_write")


def test_workspace_none_turns_project_docs_off_so_codex_can_start_on_a_denied_cwd():
    assert config(compiled({"workspace": {"access": "none"}}))["project_doc_max_bytes"] == 0
    assert "project_doc_max_bytes" not in config(compiled({"workspace": {"access": "read_only"}}))


def test_hidden_home_is_denied_to_commands_by_the_profile():
    fs = config(compiled({"host_home": "hidden"}))["permissions"][PERMISSION_PROFILE]["filesystem"]
    assert fs["/home/user"] == "deny"
    fs = config(compiled({"host_home": "visible"}))["permissions"][PERMISSION_PROFILE]["filesystem"]
    assert "/home/user" not in fs


def test_network_none_disables_command_network_and_web_search():
    data = config(compiled({"command_network": {"access": "none"}}))
    assert data["permissions"][PERMISSION_PROFILE]["network"] == {"enabled": False}
    assert data["web_search"] == "disabled"
    assert data["features"]["network_proxy"] is False


def test_unrestricted_network_leaves_web_search_alone():
    data = config(compiled({"command_network": {"access": "unrestricted"}}))
    assert data["permissions"][PERMISSION_PROFILE]["network"] == {"enabled": True}
    assert "web_search" not in data


def test_restricted_network_runs_codex_proxy_with_the_domain_allowlist_and_warns():
    result = compiled({"command_network": {"access": "restricted", "allow_domains": ["pypi.org", "example.com"]}})
    data = config(result)
    assert data["features"]["network_proxy"] is True
    assert data["permissions"][PERMISSION_PROFILE]["network"] == {
        "enabled": True,
        "domains": {"example.com": "allow", "pypi.org": "allow"},
    }
    assert any("experimental network proxy" in w for w in result.warnings)
    assert result.requirements.allow_domains == ("example.com", "pypi.org")


def test_surfaces_that_reach_past_the_intent_are_always_off():
    features = config(compiled())["features"]
    for name in ("apps", "plugins", "remote_plugin", "hooks", "tool_suggest", "browser_use", "computer_use"):
        assert features[name] is False


# -- shell ---------------------------------------------------------------------------------------
def test_shell_deny_removes_the_shell_tool_and_never_asks():
    data = config(compiled({"shell": {"access": "deny"}}))
    assert data["features"]["shell_tool"] is False
    assert data["approval_policy"] == "never"


@pytest.mark.parametrize(
    "version, policy",
    [("0.130.0", "untrusted"), ("0.148.0", "untrusted"), ("0.149.0", "on-request"), (NEWEST, "on-request")],
)
def test_shell_ask_uses_the_approval_policy_each_version_accepts(version, policy):
    result = compiled({"shell": {"access": "ask"}}, version)
    assert config(result)["approval_policy"] == policy
    assert any("codex exec" in w for w in result.warnings)


def test_shell_allow_pins_approval_never_and_a_human_reviewer():
    data = config(compiled({"shell": {"access": "allow"}}))
    assert data["approval_policy"] == "never"
    assert data["approvals_reviewer"] == "user"
    assert data["features"]["shell_tool"] is True


# -- environment ---------------------------------------------------------------------------------
def test_commands_keep_only_the_base_and_allowed_variables_and_never_the_model_key():
    result = compiled(
        {"environment": {"allow": ["GITHUB_TOKEN"]}},
        model={"base_url": "http://127.0.0.1:9999/v1", "api_key_env": "MODEL_KEY"},
    )
    policy = config(result)["shell_environment_policy"]
    assert policy["inherit"] == "all" and policy["ignore_default_excludes"] is True
    assert policy["include_only"] == sorted({*COMMAND_ENV, "GITHUB_TOKEN"})
    assert "MODEL_KEY" not in policy["include_only"]
    assert result.requirements.env_allow == ("GITHUB_TOKEN", "MODEL_KEY")


def test_env_points_codex_home_and_tmpdir_at_the_private_folders():
    result = compiled()
    assert result.env == {"CODEX_HOME": "/tmp/agentbox/config", "TMPDIR": "/tmp/agentbox/tmp"}
    assert result.requirements.env_set == result.env


def test_a_config_home_under_tmpdir_is_refused_because_codex_cannot_start_its_sandbox_helper():
    result = ADAPTER.compile(profile(), context(config_home="/tmp/x/codex", tmpdir="/tmp/x"))
    assert result.errors and "TMPDIR" in result.errors[0]


# -- model ---------------------------------------------------------------------------------------
def test_a_base_url_becomes_a_responses_provider_that_reads_the_named_key():
    result = compiled(model={"base_url": "http://127.0.0.1:18431/v1", "name": "gpt-5.5", "api_key_env": "MOCK_KEY"})
    data = config(result)
    assert data["model"] == "gpt-5.5" and data["model_provider"] == PROVIDER_ID
    assert data["model_providers"][PROVIDER_ID] == {
        "name": PROVIDER_ID,
        "base_url": "http://127.0.0.1:18431/v1",
        "wire_api": "responses",
        "env_key": "MOCK_KEY",
    }
    assert result.requirements.model_endpoint == "127.0.0.1:18431"


@pytest.mark.parametrize(
    "url, endpoint",
    [
        ("https://api.example.com/v1", "api.example.com:443"),
        ("http://localhost/v1", "localhost:80"),
        ("http://[::1]:8080/v1", "[::1]:8080"),
    ],
)
def test_the_model_endpoint_names_host_and_port(url, endpoint):
    assert compiled(model={"base_url": url}).requirements.model_endpoint == endpoint


def test_without_a_base_url_codex_keeps_its_default_provider():
    result = compiled(model={"name": "gpt-5.5"})
    data = config(result)
    assert "model_provider" not in data and "model_providers" not in data
    assert result.requirements.model_endpoint is None


# -- MCP -----------------------------------------------------------------------------------------
def test_only_allowlisted_servers_and_tools_reach_codex():
    result = compiled(
        {"mcp": {"servers": ["canary"], "tools": {"canary": ["allowed_echo"]}}},
        servers={"canary": CANARY, "other": CANARY},
    )
    servers = config(result)["mcp_servers"]
    assert list(servers) == ["canary"]
    canary = servers["canary"]
    assert canary["command"] == "/usr/bin/python3" and canary["args"] == ["-m", "canary"]
    assert canary["env"] == {"CANARY_LOG": "/tmp/log"}
    assert canary["enabled_tools"] == ["allowed_echo"]
    assert canary["tools"] == {"allowed_echo": {"approval_mode": "approve"}}
    assert canary["required"] is True
    assert "default_tools_approval_mode" not in canary


def test_a_server_allowed_without_a_tool_list_gets_all_its_tools_approved():
    servers = config(compiled({"mcp": {"servers": ["canary"]}}, servers={"canary": CANARY}))["mcp_servers"]
    assert servers["canary"]["default_tools_approval_mode"] == "approve"
    assert "enabled_tools" not in servers["canary"]


def test_an_empty_tool_list_enables_no_tool():
    servers = config(compiled({"mcp": {"servers": ["canary"], "tools": {"canary": []}}}, servers={"canary": CANARY}))[
        "mcp_servers"
    ]
    assert servers["canary"]["enabled_tools"] == []


def test_no_allowed_server_means_no_mcp_table():
    assert "mcp_servers" not in config(compiled(servers={"canary": CANARY}))


# -- owners --------------------------------------------------------------------------------------
def test_security_keys_name_the_item_they_enforce():
    owners = compiled({"host_home": "hidden"}).artifacts[0].owners
    assert owners["sandbox_mode"] == "workspace"  # absent in profile dialects, guarded all the same
    assert owners["default_permissions"] == "workspace"
    assert owners[f"permissions.{PERMISSION_PROFILE}.filesystem"] == "workspace"
    assert owners[f"permissions.{PERMISSION_PROFILE}.filesystem./home/user"] == "host_home"
    assert owners[f"permissions.{PERMISSION_PROFILE}.network"] == "command_network"
    assert owners["approval_policy"] == "shell"
    assert owners["features.shell_tool"] == "shell"
    assert owners["features.apps"] == "mcp"
    assert owners["mcp_servers"] == "mcp"
    assert owners["shell_environment_policy"] == "environment"


def test_legacy_owners_cover_the_network_switch():
    owners = compiled({"workspace": {"access": "read_write"}}, "0.130.0").artifacts[0].owners
    assert owners["sandbox_workspace_write.network_access"] == "command_network"
    assert owners["sandbox_mode"] == "workspace"


def test_a_config_patch_that_brings_back_sandbox_mode_is_refused_for_a_required_workspace(tmp_path):
    from agentbox.compile.compiler import compile_plan
    from agentbox.errors import PolicyError
    from agentbox.core.profile import LoadedProfile

    prof = profile(
        {"workspace": {"access": "read_only"}},
        native_overrides={"codex": {"config_patch": {"sandbox_mode": "danger-full-access"}}},
    )
    loaded = LoadedProfile(profile=prof, source="p.yaml", digest="0" * 64)
    with pytest.raises(PolicyError, match="workspace"):
        compile_plan(loaded, str(tmp_path), harness_version=NEWEST, home="/home/user")


# -- coverage and declarations -------------------------------------------------------------------
def test_in_range_declarations_keep_exact_where_codex_enforces_for_every_tool():
    result = compiled({"shell": {"access": "deny"}, "mcp": {"servers": []}}, NEWEST)
    assert result.coverage["shell"].support == "exact"
    assert result.coverage["mcp"].support == "exact"
    assert result.coverage["workspace"].support == "partial"
    assert "mcp_server" in result.coverage["workspace"].bypass_surfaces


def test_an_out_of_range_version_downgrades_exact_to_partial_with_the_reason():
    result = compiled({"shell": {"access": "deny"}}, "0.130.0")
    assert result.coverage["shell"].support == "partial"
    assert "outside the tested range" in result.coverage["shell"].reason


def test_legacy_declares_no_harness_mechanism_for_a_hidden_home():
    assert compiled({"host_home": "hidden"}, "0.130.0").coverage["host_home"].support == "unsupported"


def test_the_declaration_file_covers_every_restrictive_capability():
    decl = load_declarations("codex")
    assert decl.tested_range == {"min": OLDEST_TESTED, "max": NEWEST}
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
        for dialect in ("legacy", "profiles", "profiles_on_request"):
            assert any(not e.dialects or dialect in e.dialects for e in decl.capabilities[cap]), (cap, dialect)


def test_requirements_copy_the_intent_for_the_sandbox():
    result = compiled(
        {"workspace": {"access": "read_only"}, "command_network": {"access": "none"}, "host_home": "hidden"}
    )
    req = result.requirements
    assert (req.workspace, req.network, req.host_home) == ("read_only", "none", "hidden")
    assert req.surfaces == ADAPTER.surfaces and any(s.path == ".codex" for s in req.surfaces)


# -- argv ----------------------------------------------------------------------------------------
def test_headless_argv_runs_exec_with_strict_config_and_the_prompt_last():
    argv = ADAPTER.headless_argv(compiled(), "-looks like a flag")
    assert argv[:3] == ["exec", "--skip-git-repo-check", "--strict-config"]
    assert "--ignore-rules" in argv and "--json" in argv
    assert argv[argv.index("-c") + 1] == 'approval_policy="never"'
    assert argv[-2:] == ["--", "-looks like a flag"]


def test_versions_without_strict_config_do_not_get_the_flag():
    result = compiled(version="0.130.0")
    assert result.argv == ()
    assert "--strict-config" not in ADAPTER.headless_argv(result, "hi")


def test_interactive_argv_keeps_strict_config_and_no_shared_server_before_the_users_arguments():
    assert ADAPTER.interactive_argv(compiled(version="0.171.0"), ["--no-alt-screen"]) == [
        "--strict-config",
        "--no-daemon",
        "--no-alt-screen",
    ]
    # 0.147.0 has no background server and no such flag
    assert ADAPTER.interactive_argv(compiled(version="0.147.0"), []) == ["--strict-config"]


# -- vocabulary ----------------------------------------------------------------------------------
def test_vocabulary_names_codex_native_tools():
    vocab = ADAPTER.tool_vocabulary
    assert vocab.wire_api == "openai-responses"
    assert vocab.shell.tool == "exec_command" and vocab.shell.arguments == {"cmd": "{command}"}
    assert vocab.write_file.tool == "apply_patch" and set(vocab.write_file.arguments) == {"input"}
    assert vocab.write_file.arguments["input"].startswith("*** Begin Patch\n*** Add File: {path}\n")
    assert vocab.mcp_call.tool == "mcp__{server}__{tool}" and vocab.mcp_call.arguments == "{arguments}"


# -- inside Agent-Box's sandbox ------------------------------------------------------------------
def test_inside_an_os_sandbox_whose_proxy_enforces_restricted_codexs_own_proxy_is_off():
    """Codex's proxy resolves names itself and cannot chain to the egress proxy (seen: "local/private network
    addresses are blocked" for an allowed name), so commands get the network and the proxy variables."""
    intent = {"command_network": {"access": "restricted", "allow_domains": ["pypi.org"]}}
    inside = ADAPTER.compile(
        profile(intent), context(sandbox_enforces=("command_network",), sandbox_env=("HTTP_PROXY", "https_proxy"))
    )
    cfg = config(inside)
    assert cfg["permissions"][PERMISSION_PROFILE]["network"] == {"enabled": True}
    assert cfg["features"]["network_proxy"] is False
    assert {"HTTP_PROXY", "https_proxy"} <= set(cfg["shell_environment_policy"]["include_only"])
    assert inside.coverage["command_network"].support == "unsupported"  # left to the OS layer
    alone = config(compiled(intent))
    assert alone["features"]["network_proxy"] is True and alone["permissions"][PERMISSION_PROFILE]["network"][
        "domains"
    ] == {"pypi.org": "allow"}


def test_inside_the_os_sandbox_network_none_stays_off_for_commands():
    inside = ADAPTER.compile(
        profile({"command_network": {"access": "none"}}),
        context(sandbox_enforces=("command_network",), sandbox_env=("HTTP_PROXY",)),
    )
    assert config(inside)["permissions"][PERMISSION_PROFILE]["network"] == {"enabled": False}
