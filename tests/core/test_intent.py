import pytest
from pydantic import ValidationError

from agentbox.core.intent import PermissionIntent, strength


def test_an_item_the_profile_states_is_required_unless_it_says_otherwise():
    intent = PermissionIntent.model_validate({"workspace": {"access": "read_only"}})
    assert intent.workspace.requirement == "required"
    assert intent.shell.requirement == "advisory"
    assert intent.provenance()["workspace"] == "intent"
    assert intent.provenance()["shell"] == "default"


def test_unknown_fields_are_rejected_at_every_level():
    with pytest.raises(ValidationError, match="bogus"):
        PermissionIntent.model_validate({"workspace": {"access": "read_only", "bogus": 1}})
    with pytest.raises(ValidationError, match="bogus"):
        PermissionIntent.model_validate({"bogus": {}})


def test_a_bad_enum_value_is_rejected():
    with pytest.raises(ValidationError):
        PermissionIntent.model_validate({"shell": {"access": "sometimes"}})


def test_restricted_network_needs_domains_and_other_modes_refuse_them():
    with pytest.raises(ValidationError, match="needs at least one"):
        PermissionIntent.model_validate({"command_network": {"access": "restricted"}})
    with pytest.raises(ValidationError, match="only applies"):
        PermissionIntent.model_validate({"command_network": {"access": "none", "allow_domains": ["a.com"]}})


@pytest.mark.parametrize(
    "domain",
    [
        "api.github.com",
        "api.github.com:443",
        "*.example.com",
        "localhost",
        "*.example.com:8443",
        "10.0.0.5",
        "127.0.0.2:8080",
        "[::1]",
        "[2001:db8::1]:443",
    ],
)
def test_hosts_host_ports_and_wildcards_are_accepted_domains(domain):
    intent = PermissionIntent.model_validate({"command_network": {"access": "restricted", "allow_domains": [domain]}})
    assert intent.command_network.allow_domains == (domain,)


@pytest.mark.parametrize(
    "domain",
    [
        "https://a.com",
        "a.com/path",
        "a.com:0",
        "a.com:70000",
        "*",
        "a..com",
        "-a.com",
        "2130706433",
        "127.1",
        "0x7f.0.0.1",
        "*.10.0.0.5",
        "[::1]x",
    ],
)
def test_urls_paths_and_bad_ports_are_not_domains(domain):
    with pytest.raises(ValidationError):
        PermissionIntent.model_validate({"command_network": {"access": "restricted", "allow_domains": [domain]}})


def test_mcp_tools_may_only_name_allowed_servers():
    with pytest.raises(ValidationError, match="not in servers"):
        PermissionIntent.model_validate({"mcp": {"servers": ["a"], "tools": {"b": ["t"]}}})


def test_host_home_takes_a_bare_value_as_shorthand():
    intent = PermissionIntent.model_validate({"host_home": "visible"})
    assert intent.host_home.access == "visible" and intent.host_home.requirement == "required"


def test_environment_allow_takes_only_variable_names():
    with pytest.raises(ValidationError):
        PermissionIntent.model_validate({"environment": {"allow": ["NOT A NAME"]}})


def test_strength_orders_values_from_most_to_least_restrictive():
    assert strength("workspace", "read_only", "read_write") == -1
    assert strength("shell", "allow", "deny") == 1
    assert strength("command_network", "none", "none") == 0
