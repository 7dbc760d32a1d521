"""Launch smokes: every installed harness version, through its compiled plan inside bubblewrap,
driven by the scripted model. Each assertion reads a real side effect."""

from __future__ import annotations

import os

import pytest

from agentbox.testing.fixtures import READ_WRITE, greeting_run, scripted_key_env, scripted_profile

pytestmark = [pytest.mark.smoke, pytest.mark.harness]


def test_a_read_write_profile_writes_a_file_and_reads_one_back(
    harness, scripted_model, agentbox_workspace, run_harness
):
    ws = agentbox_workspace
    (ws.project / "input.txt").write_text("canary-input-7f3a\n")
    scripted_model.load(
        {
            "steps": [
                {"write_file": {"path": str(ws.project / "made.txt"), "content": "made-by-harness\n"}},
                {"read_file": {"path": str(ws.project / "input.txt")}},
            ]
        },
        harness.vocabulary(),
    )
    out = run_harness(
        harness,
        scripted_profile(harness, scripted_model, READ_WRITE),
        ws,
        "write then read",
        extra_env=scripted_key_env(harness),
    )
    assert out.ok, f"exit {out.exit_code}\n{out.stderr[-2000:]}"
    assert (ws.project / "made.txt").read_text().strip() == "made-by-harness"
    results = " ".join(r.text for r in scripted_model.tool_results())
    assert "canary-input-7f3a" in results, "the read came back to the model"
    assert out.leftovers == [], "no process of the run survived it"


def test_a_profile_allowing_one_mcp_tool_reaches_exactly_that_call(
    harness, scripted_model, agentbox_workspace, canary_mcp, run_harness
):
    intent = {
        **READ_WRITE,
        "mcp": {"servers": ["canary"], "tools": {"canary": ["allowed_echo"]}, "requirement": "required"},
    }
    scripted_model.load(
        {"steps": [{"mcp_call": {"server": "canary", "tool": "allowed_echo", "arguments": {"text": "hello-mcp"}}}]},
        harness.vocabulary(),
    )
    profile = scripted_profile(harness, scripted_model, intent, mcp_servers={"canary": canary_mcp.server_spec()})
    out = run_harness(
        harness,
        profile,
        agentbox_workspace,
        "call the tool",
        extra_env=scripted_key_env(harness),
        binds=canary_mcp.binds,
    )
    assert out.ok, f"exit {out.exit_code}\n{out.stderr[-2000:]}"
    calls = canary_mcp.invocations()
    assert [(c["tool"], c["arguments"]) for c in calls] == [("allowed_echo", {"text": "hello-mcp"})]
    offered = scripted_model.offered_tools()
    assert not any("denied_write" in t or "secret_read" in t for t in offered), sorted(offered)


def test_the_private_config_is_removed_after_the_run(harness, scripted_model, agentbox_workspace, run_harness):
    out = greeting_run(harness, scripted_model, agentbox_workspace, run_harness)
    assert out.artifacts and not any(os.path.exists(a) for a in out.artifacts)
    assert not os.path.exists(out.run_dir)
    assert scripted_model.transcript, "the harness talked to the scripted model through the relay"


# Where a harness would download packages from at start-up (OpenCode installed its plugin SDK from npm at every
# start until its config folder was marked as holding it): each such start is slower, and under `none` one more
# denial. pypi.org itself is not listed: Hermes asks its JSON API for a newer release (an update check in a daemon
# thread, docs/harnesses/hermes.md), which downloads no package.
PACKAGE_REGISTRIES = ("registry.npmjs.org", "registry.yarnpkg.com", "files.pythonhosted.org")


def test_a_run_downloads_no_package_at_start_up(harness, scripted_model, agentbox_workspace, run_harness):
    out = greeting_run(harness, scripted_model, agentbox_workspace, run_harness)
    asked = [f"{d.get('method')} {d.get('host')}" for d in out.egress if d.get("host") in PACKAGE_REGISTRIES]
    assert asked == [], f"the harness reached for a package registry at start-up: {asked}"


def test_the_harness_holds_a_placeholder_and_the_model_gets_the_real_key_only_from_the_proxy(
    harness, scripted_model, agentbox_workspace, run_harness
):
    from agentbox.testing.fixtures import MODEL_KEY

    [(variable, key)] = scripted_key_env(harness).items()
    scripted_model.load({"steps": [{"shell": {"command": f"printenv {variable} | rev"}}]}, harness.vocabulary())
    # allowed by name, so that a harness that filters its commands' environment (Codex) hands it on: still a placeholder
    intent = {**READ_WRITE, "shell": {"access": "allow"}, "environment": {"allow": [variable]}}
    out = run_harness(
        harness,
        scripted_profile(harness, scripted_model, intent),
        agentbox_workspace,
        "print it",
        extra_env=scripted_key_env(harness),
    )
    assert out.ok, f"exit {out.exit_code}\n{out.stderr[-2000:]}"
    assert scripted_model.transcript.credentials() == {"real"}, "every request the model answered carried the real key"
    seen = scripted_model.tool_results()[-1].text
    assert key not in seen and key[::-1] not in seen, "the command read no real key"
    placeholder = harness.adapter().key_placeholder.prefix
    assert placeholder[::-1] in seen, f"the command read the placeholder: {seen[:300]}"
    swapped = [d for d in out.egress if d.get("route") == "model" and d.get("credentials") == [variable]]
    assert swapped and key == MODEL_KEY, "the egress proxy swapped the key in on the model route"
