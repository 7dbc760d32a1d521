"""Secrets smokes: every installed harness, in its compiled plan inside bubblewrap, uses a secret bound to a
host (the profile's `secrets:`) from its shell, over plain HTTP and over TLS. The bound listeners must get the
real value, and only from the egress proxy (the sandbox holds a placeholder); an allowed host the secret is not
bound to must never get it. The listeners are the suite's own (the TLS one with the suite's own CA), reached
through the proxy's resolver override: nothing reaches a real host."""

from __future__ import annotations

import os
import secrets as random
from pathlib import Path

import pytest

import agentbox
from agentbox.testing.fixtures import scripted_key_env, scripted_profile
from agentbox.testing.targets import LOOPBACK, Listener, suite_tls

pytestmark = [pytest.mark.smoke, pytest.mark.harness]

TOKEN = "AGENTBOX_SERVICE_TOKEN"
PACKAGE_ROOT = str(Path(agentbox.__file__).resolve().parents[1])  # the canary MCP server imports it in the sandbox


def test_a_bound_secret_reaches_its_host_over_http_and_tls_only_through_the_proxy(
    harness, harness_probe, scripted_model, agentbox_workspace, request
):
    from agentbox.run.harness_run import RunRequest, run_harness
    from agentbox.core.profile import LoadedProfile, Profile
    from agentbox.testing.session import session_key

    value = f"agentbox-smoke-token-{random.token_hex(8)}"
    tls_context, suite_ca = suite_tls(agentbox_workspace.root, ["bound.test"])
    plain, other, secure = Listener("tcp"), Listener("tcp2"), Listener("tls", tls=tls_context)
    try:
        sent = f'-H "Authorization: Bearer ${TOKEN}"'
        command = (
            f"curl -s -m 5 {sent} http://bound.test:{plain.address}/plain; "
            f"curl -s -m 5 {sent} https://bound.test:{secure.address}/tls; "
            f"curl -s -m 5 {sent} http://other.test:{other.address}/other; printenv {TOKEN} | rev"
        )
        scripted_model.load({"steps": [{"shell": {"command": command}}]}, harness.vocabulary())
        hosts = [f"bound.test:{plain.address}", f"bound.test:{secure.address}"]
        intent = {
            "workspace": {"access": "read_write"},
            "shell": {"access": "allow"},
            "command_network": {"access": "restricted", "allow_domains": [*hosts, f"other.test:{other.address}"]},
            "environment": {"allow": [TOKEN]},
        }  # allowed by name: a harness that filters would hide it
        profile = scripted_profile(harness, scripted_model, intent, secrets={TOKEN: {"hosts": hosts}})
        loaded = LoadedProfile(profile=Profile.model_validate(profile), source="<test>", digest="test")
        out = run_harness(
            RunRequest(
                loaded=loaded,
                probe=harness_probe,
                workspace=str(agentbox_workspace.project),
                home=str(agentbox_workspace.home),
                prompt="use the token",
                timeout=request.config.stash[session_key].timeout,
                extra_env=scripted_key_env(harness),
                host_env={**os.environ, TOKEN: value},
                resolve={"bound.test": LOOPBACK, "other.test": LOOPBACK},
                upstream_ca=suite_ca,
            )
        )
        assert out.ok, f"exit {out.exit_code}\n{out.stderr[-2000:]}"
        assert plain.saw(value), "the bound host got the real value over plain HTTP"
        assert secure.saw(value), (
            f"the bound host got the real value over TLS (the proxy's own, to the suite's CA): "
            f"{scripted_model.tool_results()[-1].text[:600]} {out.egress}"
        )
        assert not other.saw(value) and other.hits() == 0, "the unbound host got nothing, not even the placeholder"
        printed = scripted_model.tool_results()[-1].text
        assert value not in printed and value[::-1] not in printed, "the command never held the real value"
        assert "agentbox-"[::-1] in printed, f"the command held the placeholder: {printed[:300]}"
        swapped = [(d["method"], d["port"]) for d in out.egress if d.get("credentials") == [TOKEN]]
        assert sorted(swapped) == sorted([("GET", plain.address), ("CONNECT", secure.address)]), out.egress
        assert [d["reason"] for d in out.egress if d.get("port") == other.address] == ["credential_replay"]
    finally:
        for listener in (plain, other, secure):
            listener.close()


def test_an_mcp_server_that_needs_the_token_gets_its_work_done_through_the_swap(
    harness, harness_probe, scripted_model, agentbox_workspace, canary_mcp, request
):
    from agentbox.run.harness_run import RunRequest, run_harness
    from agentbox.core.profile import LoadedProfile, Profile
    from agentbox.testing.session import session_key

    value = f"agentbox-mcp-token-{random.token_hex(8)}"
    api = Listener("tcp")
    try:
        url = f"http://api.test:{api.address}/user"
        scripted_model.load(
            {
                "steps": [
                    {
                        "mcp_call": {
                            "server": "canary",
                            "tool": "call_api",
                            "arguments": {"url": url, "token_env": TOKEN},
                        }
                    }
                ]
            },
            harness.vocabulary(),
        )
        intent = {
            "workspace": {"access": "read_write"},
            "mcp": {"servers": ["canary"], "tools": {"canary": ["call_api"]}},
            "command_network": {"access": "restricted", "allow_domains": [f"api.test:{api.address}"]},
            "environment": {"allow": [TOKEN]},
        }
        profile = scripted_profile(
            harness,
            scripted_model,
            intent,
            mcp_servers={"canary": canary_mcp.server_spec()},
            secrets={TOKEN: {"hosts": [f"api.test:{api.address}"]}},
        )
        loaded = LoadedProfile(profile=Profile.model_validate(profile), source="<test>", digest="test")
        out = run_harness(
            RunRequest(
                loaded=loaded,
                probe=harness_probe,
                workspace=str(agentbox_workspace.project),
                home=str(agentbox_workspace.home),
                prompt="call the api",
                timeout=request.config.stash[session_key].timeout,
                extra_env=scripted_key_env(harness),
                host_env={**os.environ, TOKEN: value},
                resolve={"api.test": LOOPBACK},
                ro_binds=(PACKAGE_ROOT,),
                rw_binds=canary_mcp.binds,
            )
        )
        assert out.ok, f"exit {out.exit_code}\n{out.stderr[-2000:]}"
        assert [c["tool"] for c in canary_mcp.invocations()] == ["call_api"], (
            f"{sorted(scripted_model.offered_tools())} {[r.text[:300] for r in scripted_model.tool_results()]}"
        )
        result = scripted_model.tool_results()[-1].text
        assert "204" in result, f"the server's call succeeded: {result[:300]}"
        assert api.saw(value), "the API got the real token, swapped in by the proxy"
        assert value not in result and [d["method"] for d in out.egress if d.get("credentials") == [TOKEN]] == ["GET"]
    finally:
        api.close()
