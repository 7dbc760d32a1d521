"""Credentials in a compiled plan and at a run's start: the sandbox gets placeholders, the proxy the values,
and a secret that cannot be swapped in refuses the run before anything starts."""

from __future__ import annotations

import pytest

from agentbox.compile.compiler import compile_plan
from agentbox.errors import InputError, SandboxError
from agentbox.core.profile import LoadedProfile, Profile, load_profile
from agentbox.sandbox.credentials import issue, placeholder
from agentbox.sandbox.session import entry_from_plan
from agentbox.testing.weakened import weaken


def plan(
    tmp_path,
    network: dict,
    secrets: dict | None = None,
    harness: str = "opencode",
    version: str = "1.18.33",
    base_url: str | None = "https://api.example.com/v1",
):
    profile = Profile.model_validate(
        {
            "name": "p",
            "harness": harness,
            "model": {"name": "m", "api_key_env": "MODEL_KEY", **({"base_url": base_url} if base_url else {})},
            "permission_intent": {"command_network": network},
            "secrets": secrets or {},
        }
    )
    return compile_plan(
        LoadedProfile(profile=profile, source="<t>", digest="d"), str(tmp_path), harness_version=version, home="/home/u"
    )


GITHUB = {"GITHUB_TOKEN": {"hosts": ["api.github.com"], "header": "Authorization: token {value}"}}


def test_the_model_key_and_a_secret_enter_as_placeholders_never_as_themselves(tmp_path):
    p = plan(tmp_path, {"access": "restricted", "allow_domains": ["api.github.com"]}, GITHUB)
    entry = entry_from_plan(p, [])
    assert {"MODEL_KEY", "GITHUB_TOKEN"}.isdisjoint(entry["env_allow"])
    [model, token] = entry["credentials"]
    assert model["model"] and model["variable"] == "MODEL_KEY" and model["headers"] == ["Authorization: Bearer {value}"]
    assert token["hosts"] == ["api.github.com"] and token["source"] == "secrets.GITHUB_TOKEN"
    assert p.item("environment").effective == "exact"
    assert "http://127.0.0.1:3127/v1" in p.native.artifacts[0].content, "the harness is pointed at the model route"
    assert p.sandbox.egress.model_tls, "the route forwards to the https endpoint over TLS"


def test_a_profile_without_a_base_url_has_no_model_route_and_says_its_key_goes_in_as_it_is(tmp_path):
    p = plan(tmp_path, {"access": "none"}, harness="claude-code", version="2.1.332", base_url=None)
    assert not p.sandbox.credentials
    assert any("enters the sandbox as it is" in w for w in p.warnings)
    assert p.item("environment").effective == "partial"


def test_a_secret_bound_to_a_host_the_network_does_not_allow_refuses_the_compile(tmp_path):
    with pytest.raises(SandboxError) as refused:
        plan(tmp_path, {"access": "restricted", "allow_domains": ["pypi.org"]}, GITHUB)
    assert refused.value.exit_code == 4
    assert "secrets.GITHUB_TOKEN: bound host api.github.com is not allowed" in str(refused.value)
    with pytest.raises(SandboxError, match="secrets.GITHUB_TOKEN"):
        plan(tmp_path, {"access": "none"}, GITHUB)


def test_a_run_start_makes_fresh_placeholders_and_hands_the_values_to_the_proxy_alone(tmp_path):
    creds = entry_from_plan(plan(tmp_path, {"access": "restricted", "allow_domains": ["api.github.com"]}, GITHUB), [])[
        "credentials"
    ]
    source = {"MODEL_KEY": "real-key-1", "GITHUB_TOKEN": "real-token-2"}
    first, second = issue(creds, source), issue(creds, source)
    assert first.env["MODEL_KEY"].startswith("sk-agentbox-") and len(first.env["MODEL_KEY"]) == len("sk-agentbox-") + 48
    assert first.env["GITHUB_TOKEN"].startswith("agentbox-")
    assert first.env != second.env, "a placeholder is made anew for every run"
    assert set(source.values()).isdisjoint(first.env.values())
    assert {s["value"] for s in first.swaps} == set(source.values())


def test_a_secret_the_host_lacks_refuses_the_run_but_a_missing_model_key_only_leaves_it_out(tmp_path):
    creds = entry_from_plan(plan(tmp_path, {"access": "restricted", "allow_domains": ["api.github.com"]}, GITHUB), [])[
        "credentials"
    ]
    with pytest.raises(SandboxError) as refused:
        issue(creds, {"MODEL_KEY": "real-key-1"})
    assert refused.value.exit_code == 4 and str(refused.value).startswith(
        "secrets.GITHUB_TOKEN: GITHUB_TOKEN is not set"
    )
    assert issue(creds, {"GITHUB_TOKEN": "real-token-2"}).missing == ["MODEL_KEY"]


def test_a_placeholder_has_the_shape_it_is_given():
    assert placeholder({"prefix": "ghp_", "length": 36, "alphabet": "alphanumeric"})[:4] == "ghp_"
    assert set(placeholder({"length": 24, "alphabet": "hex"})) <= set("0123456789abcdef")


def test_a_control_without_the_swap_lets_the_real_values_in(tmp_path):
    entry = entry_from_plan(plan(tmp_path, {"access": "none"}), [])
    weak = weaken(entry, ["credentials"])
    assert weak["credentials"] == [] and "MODEL_KEY" in weak["env_allow"]


def test_a_bad_secrets_entry_names_its_file_and_field(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: p\nharness: codex\nsecrets:\n  GITHUB_TOKEN: {hosts: [api.github.com], header: 'Bearer'}\n")
    with pytest.raises(InputError) as bad:
        load_profile(path)
    assert "p.yaml:4: secrets.GITHUB_TOKEN.header" in str(bad.value)


def test_under_a_shared_network_a_bound_secret_brings_a_proxy_that_lets_everything_through_but_swaps_it(tmp_path):
    p = plan(tmp_path, {"access": "unrestricted"}, GITHUB)
    assert p.sandbox.proxy_tcp and p.sandbox.model_route == "tcp" and "--unshare-net" not in p.sandbox.argv
    assert p.sandbox.env["HTTPS_PROXY"] == "http://127.0.0.1:{agentbox_proxy_port}", "filled when the proxy listens"
    assert p.sandbox.egress.decide("anywhere.example", 443).reason == "unrestricted"
    assert not plan(tmp_path, {"access": "unrestricted"}).sandbox.proxy_tcp, "no bound secret: no proxy variables"


def test_only_a_proxy_on_a_shared_network_checks_who_answers_its_loopback_upstreams(tmp_path):
    # the run shares the host's loopback there, so a port nothing listens on could be the run's own listener
    assert plan(tmp_path, {"access": "unrestricted"}, GITHUB).sandbox.egress.shared_loopback
    assert plan(tmp_path, {"access": "unrestricted"}).sandbox.egress.shared_loopback, "the model route alone too"
    restricted = plan(tmp_path, {"access": "restricted", "allow_domains": ["api.github.com"]}, GITHUB)
    assert not restricted.sandbox.egress.shared_loopback, "a network of its own has a loopback of its own"
    entry = weaken(entry_from_plan(plan(tmp_path, {"access": "unrestricted"}, GITHUB), []), ["loopback_listeners"])
    assert entry["egress"]["shared_loopback"] is False, "the control's weakening takes the check out"
