"""How a compiled plan wires the egress proxy: which runs unshare the network, the proxy's policy, the inner
relay's ports and argv, the proxy variables, and what the adapters are told about the OS layer."""

from __future__ import annotations

import os

import pytest

from agentbox.egress.inside import MODEL_ROUTE_PORT, MODEL_SOCKET, SOCKET_NAME, proxy_env
from agentbox.core.plan import RuntimeRequirements
from agentbox.sandbox import relay, unix_filter
from agentbox.sandbox.bwrap import (
    SandboxRequest,
    compile_bwrap,
    coverage,
    enforced_items,
    model_route_url,
    sandbox_env_names,
)
from agentbox.sandbox.session import entry_from_plan
from agentbox.sandbox.syscall_filter import host_program


def plan_for(**req):
    base = {
        "workspace": "read_write",
        "network": "restricted",
        "allow_domains": ("pypi.org", "*.corp.test:8443"),
        "host_home": "hidden",
        "model_endpoint": "127.0.0.1:40123",
    }
    base.update(req)
    return compile_bwrap(SandboxRequest(requirements=RuntimeRequirements(**base), workspace="/w/p", home="/home/u"))


def test_restricted_unshares_the_network_and_its_policy_is_the_model_plus_exactly_the_allowlist():
    plan = plan_for()
    assert "--unshare-net" in plan.argv and ("ro-bind", "{run_dir}/relay", relay.RELAY_DIR) in plan.binds
    assert str(plan.egress.model_endpoint) == "127.0.0.1:40123"
    assert plan.egress.allow_domains == ("pypi.org", "*.corp.test:8443") and plan.egress.resolver_overrides == {}
    assert plan.egress.decide("pypi.org", 443).allowed and not plan.egress.decide("corp.test", 8443).allowed
    assert plan.relay == ((40123, MODEL_SOCKET), (3128, SOCKET_NAME))
    assert plan.unix_filter is unix_filter.supported()


def test_the_run_gets_the_proxy_variables_at_the_relay_port():
    env = plan_for().env
    assert {k: env[k] for k in proxy_env(3128)} == proxy_env(3128)
    assert env["NO_PROXY"] == "127.0.0.1,localhost,::1"


def test_a_model_on_the_proxy_port_moves_the_proxy():
    assert plan_for(model_endpoint="127.0.0.1:3128").relay == ((3128, MODEL_SOCKET), (3129, SOCKET_NAME))


def test_a_remote_model_is_reached_through_the_model_route_on_a_port_of_its_own():
    plan = plan_for(network="none", allow_domains=(), model_endpoint="api.example.com:443", model_tls=True)
    assert "--unshare-net" in plan.argv
    assert plan.relay == ((MODEL_ROUTE_PORT, MODEL_SOCKET), (3128, SOCKET_NAME)) and plan.model_route == "relay"
    assert plan.egress.model_tls, "the route forwards over TLS to an https endpoint"
    assert plan.egress.decide("api.example.com", 443).reason == "model_endpoint"
    assert not plan.egress.decide("api.example.com", 80).allowed
    assert (
        coverage(
            SandboxRequest(
                requirements=RuntimeRequirements(
                    workspace="read_write", network="none", host_home="hidden", model_endpoint="api.example.com:443"
                ),
                workspace="/w/p",
                home="/home/u",
            ),
            "0.8.0",
        )["command_network"].support
        == "exact"
    )


def test_network_none_without_a_model_has_no_proxy_and_no_relay_but_keeps_the_filter():
    plan = plan_for(network="none", allow_domains=(), model_endpoint=None)
    assert "--unshare-net" in plan.argv and plan.egress is None and plan.relay == ()
    assert not any(a.startswith("{run_dir}/relay") for a in plan.argv)
    assert "HTTP_PROXY" not in plan.env and plan.unix_filter is unix_filter.supported()


def test_network_none_with_a_loopback_model_allows_only_the_model():
    plan = plan_for(network="none", allow_domains=())
    assert plan.egress.allow_domains == () and plan.relay[0] == (40123, MODEL_SOCKET)
    assert not plan.egress.decide("pypi.org", 443).allowed


def test_unrestricted_shares_the_network_with_no_proxy_but_keeps_the_unix_socket_filter():
    # a host socket is reachable by path from a shared network namespace too, wherever it lives
    plan = plan_for(network="unrestricted", allow_domains=(), model_endpoint=None)
    assert "--unshare-net" not in plan.argv and plan.egress is None and plan.relay == ()
    assert plan.unix_filter and "HTTP_PROXY" not in plan.env and plan.model_route is None


def test_unrestricted_still_sends_the_model_through_the_model_route_on_a_loopback_port_of_the_host():
    plan = plan_for(network="unrestricted", allow_domains=())
    assert "--unshare-net" not in plan.argv and plan.relay == () and "HTTP_PROXY" not in plan.env
    assert plan.model_route == "tcp" and str(plan.egress.model_endpoint) == "127.0.0.1:40123"
    assert not plan.egress.decide("pypi.org", 443).allowed, "the route's policy allows the model alone"


@pytest.mark.parametrize(
    "network, url",
    [
        ("none", "http://127.0.0.1:40123/v1"),
        ("restricted", "http://127.0.0.1:40123/v1"),
        ("unrestricted", "http://127.0.0.1:{agentbox_model_port}/v1"),
    ],
)
def test_the_harness_is_given_the_model_route_as_its_base_url(network, url):
    req = RuntimeRequirements(
        workspace="read_only",
        network=network,
        host_home="hidden",
        allow_domains=("pypi.org",) if network == "restricted" else (),
        model_endpoint="127.0.0.1:40123",
    )
    assert model_route_url(req, "http://127.0.0.1:40123/v1") == url
    remote = req.model_copy(update={"model_endpoint": "api.example.com:443"})
    assert model_route_url(remote, "https://api.example.com/v1").endswith("/v1")
    assert model_route_url(req, None) is None


def test_the_entry_carries_the_policy_the_ports_and_the_filter():
    from types import SimpleNamespace

    sandbox = plan_for()
    req = RuntimeRequirements(
        workspace="read_write",
        network="restricted",
        allow_domains=("pypi.org",),
        host_home="hidden",
        model_endpoint="127.0.0.1:40123",
    )
    plan = SimpleNamespace(
        sandbox=sandbox, native=SimpleNamespace(requirements=req, artifacts=(), key_approvals=(), state_files=())
    )
    entry = entry_from_plan(plan, [])
    assert entry["relay"] == [[40123, MODEL_SOCKET], [3128, SOCKET_NAME]]
    assert entry["egress"]["allow_domains"] == ["pypi.org", "*.corp.test:8443"]
    assert entry["unix_filter"] is unix_filter.supported()


def test_the_relay_is_installed_with_its_filter_and_maps_each_port_to_its_socket(tmp_path):
    relay.install(str(tmp_path))
    assert sorted(os.listdir(tmp_path / "relay")) == ["command.bpf", "inner_relay.py", "unix_filter.py"]
    assert (tmp_path / "relay" / "command.bpf").read_bytes() == host_program(deny_unix=True)
    argv = relay.relay_argv("/usr/bin/python3", [(40123, MODEL_SOCKET), (3128, SOCKET_NAME)])
    assert argv == [
        "/usr/bin/python3",
        "-I",
        "-S",
        "/tmp/agentbox/relay/inner_relay.py",
        "40123=/tmp/agentbox/relay/model.sock",
        "3128=/tmp/agentbox/relay/egress.sock",
        "--",
    ]


@pytest.mark.parametrize("network, exact", [("none", True), ("restricted", True), ("unrestricted", False)])
def test_adapters_learn_what_the_os_layer_enforces_and_which_variables_it_sets(network, exact):
    req = RuntimeRequirements(
        workspace="read_only",
        network=network,
        host_home="hidden",
        allow_domains=("pypi.org",) if network == "restricted" else (),
    )
    assert ("command_network" in enforced_items(req)) is (exact and unix_filter.supported())
    assert {"workspace", "host_home"} <= set(enforced_items(req))
    assert set(sandbox_env_names(req)) == (set(proxy_env(1)) if exact else set())


def test_a_composed_compile_tells_the_adapter_and_a_harness_alone_compile_does_not(tmp_path, monkeypatch):
    from agentbox.compile import compiler
    from agentbox.compile.adapters.codex import ADAPTER
    from agentbox.core.profile import LoadedProfile, Profile

    seen = []
    real = ADAPTER.compile
    monkeypatch.setattr(ADAPTER, "compile", lambda profile, context: seen.append(context) or real(profile, context))
    profile = Profile.model_validate(
        {
            "name": "p",
            "harness": "codex",
            "permission_intent": {"command_network": {"access": "restricted", "allow_domains": ["pypi.org"]}},
        }
    )
    loaded = LoadedProfile(profile=profile, source="<t>", digest="d")
    compiler.compile_plan(loaded, str(tmp_path), harness_version="0.171.0", home="/home/u")
    compiler.compile_plan(loaded, str(tmp_path), harness_version="0.171.0", home="/home/u", sandboxed=False)
    assert "command_network" in seen[0].sandbox_enforces and "HTTP_PROXY" in seen[0].sandbox_env
    assert seen[1].sandbox_enforces == () and seen[1].sandbox_env == ()
