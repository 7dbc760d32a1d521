"""Hermes adapter: version parsing, dialects, compiled config.yaml, ownership, coverage, run arguments."""

from __future__ import annotations

import pytest
import yaml

from agentbox.compile.adapters import get_adapter
from agentbox.core.capability import capability_id
from agentbox.core.intent import ITEMS
from agentbox.core.plan import CompileContext
from agentbox.core.profile import Profile

ADAPTER = get_adapter("hermes")

# Real `hermes --version` outputs (first lines; the rest is install path and an update check).
OUT_0_19 = (
    "Hermes Agent v0.19.0 (2026.7.20)\nInstall directory: /x/venv/lib/python3.11/site-packages\n"
    "Install method: pip\nPython: 3.11.7\nOpenAI SDK: 2.24.0\nUp to date"
)
OUT_0_13 = (
    "Hermes Agent v0.13.0 (2026.5.7)\nProject: /x/venv/lib/python3.11/site-packages\n"
    "Python: 3.11.7\nOpenAI SDK: 2.24.0\nUp to date"
)

MCP_SERVERS = {
    "canary": {"command": "python", "args": ["-m", "agentbox.canary_mcp", "--log", "/l"], "env": {"B": "2", "A": "1"}},
    "other": {"command": "other-server"},
}


def profile(intent=None, model=None, **kw) -> Profile:
    return Profile.model_validate(
        {
            "name": "p",
            "harness": "hermes",
            "permission_intent": intent or {},
            "model": model or {},
            "mcp_servers": MCP_SERVERS,
            **kw,
        }
    )


def compile_(intent=None, model=None, version="0.19.0"):
    ctx = CompileContext(cwd="/w/proj", home="/home/u", harness_version=version)
    return ADAPTER.compile(profile(intent, model), ctx)


def config(result) -> dict:
    return yaml.safe_load(result.artifacts[0].content)


# -- probe -------------------------------------------------------------------------------------
@pytest.mark.parametrize("output,version", [(OUT_0_19, "0.19.0"), (OUT_0_13, "0.13.0")])
def test_the_version_is_read_from_the_real_version_output(output, version):
    assert ADAPTER.parse_version(output) == version


def test_an_output_without_the_banner_gives_no_version():
    assert ADAPTER.parse_version("hermes: command not found") is None


@pytest.mark.parametrize(
    "version,dialect",
    [
        ("0.13.0", "toolsets"),
        ("0.17.0", "toolsets"),
        ("0.18.0", "toolsets"),
        ("0.18.1", "deny-rules"),
        ("0.18.2", "deny-rules"),
        ("0.19.0", "deny-rules"),
        ("0.21.3", "deny-rules"),
    ],
)
def test_approvals_deny_arrived_in_0_18_1_and_selects_the_newer_dialect(version, dialect):
    assert ADAPTER.declarations.dialect_for(version) == dialect


def test_an_unknown_version_compiles_the_dialect_every_version_accepts():
    assert compile_(version=None).dialect == "toolsets"


# -- determinism and shape -------------------------------------------------------------------
def test_compile_is_deterministic_to_the_byte():
    intent = {"shell": {"access": "deny"}, "mcp": {"servers": ["canary"], "tools": {"canary": ["allowed_echo"]}}}
    model = {"base_url": "http://127.0.0.1:9/v1", "name": "m", "api_key_env": "K"}
    assert compile_(intent, model).model_dump_json() == compile_(intent, model).model_dump_json()


def test_the_config_is_plain_yaml_without_anchors_at_the_config_home():
    result = compile_({"mcp": {"servers": ["canary"]}})
    assert [a.path for a in result.artifacts] == ["config.yaml"]
    assert "&id" not in result.artifacts[0].content and "*id" not in result.artifacts[0].content
    assert result.env["HERMES_HOME"] == "/tmp/agentbox/config"
    assert result.requirements.env_set == result.env


def test_every_security_mode_is_set_explicitly():
    cfg = config(compile_())
    assert cfg["approvals"]["mode"] == "off" and cfg["approvals"]["cron_mode"] == "deny"
    assert cfg["approvals"]["timeout"] == 60 and cfg["command_allowlist"] == []
    assert cfg["terminal"]["backend"] == "local" and cfg["agent"]["coding_context"] == "off"
    assert cfg["security"] == {"allow_lazy_installs": False, "tirith_enabled": False}
    assert cfg["hooks"] == {} and cfg["hooks_auto_accept"] is False
    assert cfg["mcp"]["auto_reload_on_config_change"] is False


# -- shell -------------------------------------------------------------------------------------
def test_shell_deny_leaves_out_and_disables_the_terminal_and_execute_code():
    cfg = config(compile_({"shell": {"access": "deny"}}))
    for toolsets in (cfg["platform_toolsets"]["cli"], cfg["platform_toolsets"]["acp"]):
        assert "terminal" not in toolsets and "code_execution" not in toolsets
    assert cfg["agent"]["disabled_toolsets"] == ["code_execution", "terminal"]


def test_shell_deny_adds_a_catch_all_deny_rule_only_where_hermes_reads_it():
    assert config(compile_({"shell": {"access": "deny"}}))["approvals"]["deny"] == ["*"]
    assert "deny" not in config(compile_({"shell": {"access": "deny"}}, version="0.18.0"))["approvals"]


def test_shell_allow_keeps_the_terminal_and_turns_prompts_off():
    cfg = config(compile_())
    assert "terminal" in cfg["platform_toolsets"]["cli"] and cfg["agent"]["disabled_toolsets"] == []
    assert cfg["approvals"]["deny"] == []


def test_shell_ask_asks_manually_and_warns_about_what_hermes_never_asks():
    result = compile_({"shell": {"access": "ask"}})
    assert config(result)["approvals"]["mode"] == "manual"
    assert any("dangerous-pattern" in w for w in result.warnings)
    assert result.coverage["shell"].support == "partial"


def test_a_headless_run_denies_a_dangerous_command_after_a_second_where_a_person_gets_a_minute():
    """`chat -Q -q` reads no key: its prompt waits the whole timeout for nobody, then denies as it would anyway."""
    result = compile_({"shell": {"access": "ask"}})
    headless = config(result.model_copy(update={"artifacts": ADAPTER.headless_artifacts(result)}))
    assert config(result)["approvals"]["timeout"] == 60
    assert headless["approvals"] == {**config(result)["approvals"], "timeout": 1}
    assert {k: v for k, v in headless.items() if k != "approvals"} == {
        k: v for k, v in config(result).items() if k != "approvals"
    }


# -- workspace and network ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "access,root", [("read_write", "/w/proj"), ("read_only", "/tmp/agentbox/tmp"), ("none", "/tmp/agentbox/tmp")]
)
def test_the_file_tools_may_write_only_under_the_safe_root(access, root):
    assert compile_({"workspace": {"access": access}}).env["HERMES_WRITE_SAFE_ROOT"] == root


def test_no_workspace_removes_the_file_tools():
    cfg = config(compile_({"workspace": {"access": "none"}}))
    assert "file" not in cfg["platform_toolsets"]["cli"] and "file" in cfg["agent"]["disabled_toolsets"]


@pytest.mark.parametrize("intent", [{"access": "none"}, {"access": "restricted", "allow_domains": ["a.example"]}])
def test_a_limited_network_removes_hermes_own_fetch_tools(intent):
    cfg = config(compile_({"command_network": intent}))
    assert "web" not in cfg["platform_toolsets"]["cli"]
    assert {"web", "browser"} <= set(cfg["agent"]["disabled_toolsets"])


def test_file_and_network_rules_are_partial_with_the_shell_named_as_bypass():
    result = compile_({"workspace": {"access": "read_only"}, "command_network": {"access": "none"}})
    for item in ("workspace", "command_network"):
        assert result.coverage[item].support == "partial"
        assert "shell" in result.coverage[item].bypass_surfaces


# -- MCP ---------------------------------------------------------------------------------------
def test_only_allowlisted_servers_and_tools_reach_hermes():
    cfg = config(compile_({"mcp": {"servers": ["canary"], "tools": {"canary": ["allowed_echo"]}}}))
    assert list(cfg["mcp_servers"]) == ["canary"]
    canary = cfg["mcp_servers"]["canary"]
    assert canary["tools"] == {"include": ["allowed_echo"], "resources": False, "prompts": False}
    assert canary["command"] == "python" and canary["env"] == {"A": "1", "B": "2"}
    assert cfg["platform_toolsets"]["cli"][-1] == "canary" and "no_mcp" not in cfg["platform_toolsets"]["cli"]
    assert cfg["mcp_discovery_timeout"] == 30


def test_a_server_without_a_tool_list_gets_every_tool():
    cfg = config(compile_({"mcp": {"servers": ["other"]}}))
    assert "tools" not in cfg["mcp_servers"]["other"]


def test_no_allowed_server_means_no_mcp_at_all():
    cfg = config(compile_())
    assert cfg["mcp_servers"] == {} and cfg["platform_toolsets"]["cli"][-1] == "no_mcp"
    assert "mcp_discovery_timeout" not in cfg


def test_an_empty_tool_list_leaves_the_server_out_because_hermes_reads_it_as_all():
    result = compile_({"mcp": {"servers": ["canary"], "tools": {"canary": []}}})
    assert config(result)["mcp_servers"] == {}
    assert any("allows no tools" in w for w in result.warnings)


def test_a_server_named_like_a_toolset_is_an_error():
    p = Profile.model_validate(
        {
            "name": "p",
            "harness": "hermes",
            "mcp_servers": {"terminal": {"command": "x"}},
            "permission_intent": {"shell": {"access": "deny"}, "mcp": {"servers": ["terminal"]}},
        }
    )
    result = ADAPTER.compile(p, CompileContext(cwd="/w", home="/h", harness_version="0.19.0"))
    assert result.errors and "terminal" not in yaml.safe_load(result.artifacts[0].content)["mcp_servers"]


@pytest.mark.parametrize(
    "version,tool",
    [
        ("0.13.0", "mcp_{server}_{tool}"),
        ("0.18.0", "mcp_{server}_{tool}"),
        ("0.18.1", "mcp__{server}__{tool}"),
        ("0.19.0", "mcp__{server}__{tool}"),
    ],
)
def test_mcp_tool_names_follow_the_version(version, tool):
    assert ADAPTER.vocabulary_for(version).mcp_call.tool == tool


# -- model ----------------------------------------------------------------------------------------
def test_a_base_url_compiles_a_named_custom_provider_that_reads_the_key_from_the_named_variable():
    result = compile_(model={"base_url": "http://127.0.0.1:8765/v1/", "name": "m1", "api_key_env": "MY_KEY"})
    cfg = config(result)
    assert cfg["model"] == {"provider": "custom:agentbox", "default": "m1"}
    assert cfg["providers"]["agentbox"] == {
        "base_url": "http://127.0.0.1:8765/v1",
        "api_mode": "chat_completions",
        "key_env": "MY_KEY",
        "default_model": "m1",
    }
    assert "MY_KEY" in result.requirements.env_allow
    assert result.requirements.model_endpoint == "127.0.0.1:8765"


def test_an_https_base_url_without_a_port_reaches_port_443():
    result = compile_(model={"base_url": "https://api.example.com/v1", "name": "m"})
    assert result.requirements.model_endpoint == "api.example.com:443"


def test_a_base_url_without_a_model_name_warns():
    assert any("model name" in w for w in compile_(model={"base_url": "http://h:1/v1"}).warnings)


def test_no_model_settings_keep_the_harness_default_provider():
    result = compile_()
    cfg = config(result)
    assert "model" not in cfg and "providers" not in cfg and result.requirements.model_endpoint is None


def test_a_named_provider_without_base_url_is_passed_through():
    assert config(compile_(model={"provider": "openrouter", "name": "x/y"}))["model"] == {
        "provider": "openrouter",
        "default": "x/y",
    }


def test_the_environment_allowlist_is_delegated_to_the_sandbox():
    result = compile_({"environment": {"allow": ["LANG", "FOO"]}}, {"base_url": "http://h:1/v1", "api_key_env": "K"})
    assert result.requirements.env_allow == ("FOO", "K", "LANG")


# -- ownership ------------------------------------------------------------------------------------
def test_security_keys_are_owned_by_the_items_they_enforce():
    owners = compile_({"shell": {"access": "deny"}}).artifacts[0].owners
    assert owners["approvals.mode"] == "shell" and owners["approvals.deny"] == "shell"
    assert owners["agent.disabled_toolsets"] == "shell" and owners["platform_toolsets.cli"] == "shell"
    assert owners["hooks"] == "shell" and owners["terminal.backend"] == "workspace"
    assert owners["mcp.auto_reload_on_config_change"] == "mcp"


def test_with_the_shell_denied_a_new_mcp_server_counts_as_a_shell():
    owners = compile_({"shell": {"access": "deny"}}).artifacts[0].owners
    assert owners["mcp_servers"] == "shell"
    assert compile_({"mcp": {"servers": ["canary"]}}).artifacts[0].owners["mcp_servers"] == "mcp"


def test_a_shared_key_is_owned_by_a_required_contributor_first():
    intent = {"shell": {"access": "deny", "requirement": "advisory"}, "command_network": {"access": "none"}}
    owners = compile_(intent).artifacts[0].owners
    assert owners["agent.disabled_toolsets"] == "command_network"


def test_a_config_patch_that_brings_the_terminal_back_is_refused(tmp_path):
    from agentbox.compile.compiler import compile_plan
    from agentbox.errors import PolicyError
    from agentbox.core.profile import load_profile

    path = tmp_path / "p.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "p",
                "harness": "hermes",
                "permission_intent": {"shell": {"access": "deny"}},
                "native_overrides": {"hermes": {"config_patch": {"agent": {"disabled_toolsets": []}}}},
            }
        )
    )
    (tmp_path / "w").mkdir()
    with pytest.raises(PolicyError, match="shell"):
        compile_plan(load_profile(str(path)), str(tmp_path / "w"), harness_version="0.19.0", home=str(tmp_path))


# -- coverage and declarations ------------------------------------------------------------------
def test_every_restrictive_capability_is_declared():
    declared = set(ADAPTER.declarations.capabilities)
    wanted = {
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
    }
    assert wanted <= declared


def test_only_tool_removal_is_claimed_exact():
    exact = {
        c for c, entries in ADAPTER.declarations.capabilities.items() if any(e.support == "exact" for e in entries)
    }
    assert exact == {"shell.deny", "mcp.allowlist"}


def test_coverage_names_a_mechanism_for_every_item():
    result = compile_({"shell": {"access": "deny"}, "workspace": {"access": "read_only"}})
    assert set(result.coverage) == set(ITEMS)
    assert result.coverage["shell"].support == "exact" and "approvals.deny" in result.coverage["shell"].mechanism


@pytest.mark.parametrize("version", ["0.12.0", "0.20.0", None])
def test_a_version_outside_the_tested_range_is_at_most_partial(version):
    result = compile_({"shell": {"access": "deny"}, "mcp": {"servers": ["canary"]}}, version=version)
    for item in ("shell", "mcp"):
        assert result.coverage[item].support == "partial"
        assert "outside the tested range" in result.coverage[item].reason


def test_a_tested_version_keeps_its_exact_claims():
    cap = capability_id("shell", {"access": "deny"})
    assert ADAPTER.declarations.report(cap, "0.13.0").support == "exact"


# -- run ------------------------------------------------------------------------------------------
def test_a_headless_run_is_a_quiet_single_query_chat():
    assert ADAPTER.headless_argv(compile_(), "hi there") == ["chat", "-Q", "-q", "hi there"]
    assert ADAPTER.interactive_argv(compile_(), ["--resume", "x"]) == ["--resume", "x"]


def test_install_roots_add_the_interpreter_prefix_a_venv_links_to(tmp_path):
    base = tmp_path / "pyenv" / "3.11.7"
    (base / "bin").mkdir(parents=True)
    (base / "bin" / "python3").write_text("")
    venv = tmp_path / "hermes" / "0.19.0" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "hermes").write_text("#!/bin/sh\n")
    (venv / "bin" / "python").symlink_to(base / "bin" / "python3")
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\nversion = 3.11.7\n")
    # the venv and the interpreter's bin/ and lib/, never a prefix above them (~/.local would hold AGENTBOX_HOME)
    roots = (str(venv), str(base / "bin"), str(base / "lib"))
    assert ADAPTER.install_roots(str(venv / "bin" / "hermes")) == roots


def test_the_vocabulary_speaks_chat_completions_with_hermes_tool_names():
    vocab = ADAPTER.tool_vocabulary
    assert vocab.wire_api == "openai-chat"
    assert (vocab.shell.tool, vocab.write_file.tool, vocab.edit_file.tool, vocab.read_file.tool) == (
        "terminal",
        "write_file",
        "patch",
        "read_file",
    )
    assert vocab.edit_file.arguments["mode"] == "replace"
