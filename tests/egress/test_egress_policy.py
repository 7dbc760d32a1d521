"""EgressPolicy.decide as a table: wildcards, ports, IP literal spellings, case, trailing dots, IDNA."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentbox.egress import EgressPolicy, Endpoint, policy_for
from agentbox.egress.hostnames import is_internal, kind, normalize
from agentbox.egress.policy import parse_entry

POLICY = EgressPolicy(
    model_endpoint=Endpoint(host="api.model.com", port=443),
    allow_domains=(
        "pypi.org",
        "files.example.net:8443",
        "*.example.com",
        "*.corp.test:8080",
        "10.0.0.5",
        "[2001:db8::1]:443",
        "bücher.de",
    ),
)


@pytest.mark.parametrize(
    "host, port, allowed, reason",
    [
        ("api.model.com", 443, True, "model_endpoint"),
        ("API.Model.COM.", 443, True, "model_endpoint"),
        ("api.model.com", 80, False, "port_not_allowed"),  # only that host:port, not the host
        ("model.com", 443, False, "not_allowed"),
        ("pypi.org", 443, True, "allow_domains:pypi.org"),
        ("pypi.org", 80, True, "allow_domains:pypi.org"),
        ("pypi.org", 22, False, "port_not_allowed"),
        ("PyPI.Org.", 443, True, "allow_domains:pypi.org"),
        ("www.pypi.org", 443, False, "not_allowed"),
        ("files.example.net", 8443, True, "allow_domains:files.example.net:8443"),
        ("files.example.net", 443, False, "port_not_allowed"),
        ("a.example.com", 443, True, "allow_domains:*.example.com"),
        ("a.b.example.com", 80, True, "allow_domains:*.example.com"),
        ("A.B.Example.Com.", 80, True, "allow_domains:*.example.com"),
        ("example.com", 443, False, "not_allowed"),
        ("badexample.com", 443, False, "not_allowed"),
        ("a.badexample.com", 443, False, "not_allowed"),
        ("example.com.evil.org", 443, False, "not_allowed"),
        ("a.example.com", 8443, False, "port_not_allowed"),
        ("x.corp.test", 8080, True, "allow_domains:*.corp.test:8080"),
        ("x.corp.test", 443, False, "port_not_allowed"),
        ("10.0.0.5", 443, True, "allow_domains:10.0.0.5"),
        ("10.0.0.5", 22, False, "port_not_allowed"),
        ("[2001:db8::1]", 443, True, "allow_domains:[2001:db8::1]:443"),
        ("2001:DB8:0:0::1", 443, True, "allow_domains:[2001:db8::1]:443"),
        ("xn--bcher-kva.de", 443, True, "allow_domains:bücher.de"),
        ("BÜCHER.de", 443, True, "allow_domains:bücher.de"),
        ("ｐｙｐｉ．ｏｒｇ", 443, True, "allow_domains:pypi.org"),  # fullwidth letters and dot fold by IDNA
    ],
)
def test_names_ports_and_spellings(host, port, allowed, reason):
    decision = POLICY.decide(host, port)
    assert (decision.allowed, decision.reason) == (allowed, reason)


@pytest.mark.parametrize(
    "host, reason",
    [
        ("127.0.0.1", "ip_literal"),
        ("10.0.0.6", "ip_literal"),
        ("[::1]", "ip_literal"),
        ("::ffff:127.0.0.1", "ip_literal"),
        ("[::ffff:10.0.0.5]", "ip_literal"),  # the listed address, but not as it was listed
        ("2130706433", "ip_literal_nonstandard"),
        ("0x7f.1", "ip_literal_nonstandard"),
        ("0x7f000001", "ip_literal_nonstandard"),
        ("0177.0.0.1", "ip_literal_nonstandard"),
        ("127.1", "ip_literal_nonstandard"),
        ("010.0.0.5", "ip_literal_nonstandard"),
        ("1.2.3.4.5", "ip_literal_nonstandard"),
        ("example.123", "ip_literal_nonstandard"),
        ("a.example.0x1", "ip_literal_nonstandard"),  # numeric last label: never a name, even under a wildcard
    ],
)
def test_ip_literals_are_refused_unless_listed(host, reason):
    decision = POLICY.decide(host, 443)
    assert (decision.allowed, decision.reason) == (False, reason)


@pytest.mark.parametrize(
    "host",
    [
        "",
        ".",
        "a..b",
        "-a.com",
        "a b.com",
        "exa%6dple.com",
        "user@pypi.org",
        "fe80::1%eth0",
        "[::1",
        "x" * 64 + ".com",
        "a/b.com",
    ],
)
def test_unparsable_hosts_are_refused(host):
    assert POLICY.decide(host, 443) == (False, "invalid_host", None)


@pytest.mark.parametrize("port", [0, -1, 65536])
def test_ports_outside_the_range_are_refused(port):
    assert POLICY.decide("pypi.org", port).reason == "invalid_port"


def test_network_none_allows_only_the_model_endpoint():
    policy = policy_for("none", "https://api.openai.com/v1")
    assert policy.decide("api.openai.com", 443).allowed
    assert not policy.decide("api.openai.com", 80).allowed
    assert not policy.decide("pypi.org", 443).allowed
    assert policy_for("none", None).decide("api.openai.com", 443) == (False, "not_allowed", "api.openai.com")


def test_policy_for_reads_plan_endpoints_and_base_urls():
    assert policy_for("none", "api.openai.com:443").model_endpoint == Endpoint(host="api.openai.com", port=443)
    assert policy_for("none", "[::1]:8080").model_endpoint == Endpoint(host="::1", port=8080)
    assert policy_for("none", "http://127.0.0.1:9/v1").model_endpoint == Endpoint(host="127.0.0.1", port=9)
    restricted = policy_for("restricted", "https://api.anthropic.com", ("*.github.com",))
    assert restricted.decide("api.github.com", 443).allowed and not restricted.decide("github.com", 443).allowed
    assert policy_for("unrestricted", "https://api.openai.com/v1") is None
    with pytest.raises(ValueError, match="only applies to command_network: restricted"):
        policy_for("none", None, ("pypi.org",))


def test_the_policy_file_round_trips_and_forbids_unknown_keys():
    text = POLICY.model_dump_json()
    again = EgressPolicy.model_validate_json(text)
    assert again == POLICY and again.decide("a.example.com", 443).allowed
    with pytest.raises(ValidationError, match="extra"):
        EgressPolicy.model_validate({"allow_domains": [], "allowed_everything": True})


@pytest.mark.parametrize(
    "entry, message",
    [
        ("*.10.0.0.5", "wildcard needs a domain name"),
        ("0x7f.1", "dotted quad"),
        ("pypi.org:0", "port"),
        ("pypi.org:http", "port"),
        ("[::1]x", "address"),
        ("*", "bad label"),
    ],
)
def test_bad_allow_entries_are_refused_with_the_entry_named(entry, message):
    with pytest.raises(ValidationError, match=message):
        EgressPolicy(allow_domains=(entry,))


def test_overrides_are_normalized_and_must_be_addresses():
    policy = EgressPolicy(resolver_overrides={"Allowed.Test.": "127.0.0.1"})
    assert policy.resolver_overrides == {"allowed.test": "127.0.0.1"}
    with pytest.raises(ValidationError, match="allowed.test"):
        EgressPolicy(resolver_overrides={"allowed.test": "localhost"})


def test_entries_parse_to_hosts_and_default_ports():
    assert parse_entry("pypi.org")[1:] == ("pypi.org", False, (80, 443))
    assert parse_entry("*.Example.com:8443")[1:] == ("example.com", True, (8443,))
    assert parse_entry("[2001:db8::1]")[1:] == ("2001:db8::1", False, (80, 443))


def test_hostnames_helpers():
    assert normalize("[0:0::1]") == "::1" and kind("::1") == "ip"
    assert kind("0x7f.1") == "numeric" and kind("example.com") == "name"
    assert all(
        is_internal(a)
        for a in (
            "127.0.0.2",
            "10.1.2.3",
            "169.254.169.254",
            "::1",
            "::ffff:127.0.0.1",
            "fc00::1",
            "0.0.0.0",
            "224.0.0.1",
        )
    )
    assert not any(is_internal(a) for a in ("8.8.8.8", "2606:4700::1111"))
