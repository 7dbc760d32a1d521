"""The shipped example profiles work as the README says: `agent-box prove` of each records the evidence its
required items need on its installed harness, and `agent-box launch` of it then passes the gate. The Claude Code reviewer keeps its required MCP tool
allowlist, with the suite's canary server standing in for GitHub's (a real MCP server, asked for its
tools before the gate decides)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from agentbox.harnesses.installs import find_binary
from launch_helpers import cli, needs_bwrap

pytestmark = needs_bwrap

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "profiles"
INSTALLED = {name: find_binary(name) for name in ("claude-code", "codex", "opencode", "hermes")}


def example(tmp_path, file: str) -> tuple[Path, dict]:
    data = yaml.safe_load((EXAMPLES / file).read_text())
    if "github" in data.get("mcp_servers", {}):
        log = tmp_path / "mcp" / "canary.log"
        log.parent.mkdir()
        data["mcp_servers"] = {
            "github": {"command": sys.executable, "args": ["-m", "agentbox.canary_mcp", "--log", str(log)]}
        }
        data["permission_intent"]["mcp"]["tools"] = {"github": ["allowed_echo"]}
    path = tmp_path / file
    path.write_text(yaml.safe_dump(data))
    return path, data


# Proving an example runs every vector of its required items on its real harness, headless and in the TUI:
# minutes each (codex-worker about 3 on this 2-core machine, the others 8 to 15). CI proves the quickest one;
# AGENTBOX_PROVE_EXAMPLES=all proves them all.
QUICK = {"codex-worker.yaml"}


def link_installed(abhome: Path, found) -> None:
    """The installed harness, seen from the test's AGENTBOX_HOME, where the suite `prove` runs looks for it."""
    folder = abhome / "harnesses" / found.name
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / found.version
    if not link.exists():
        link.symlink_to(Path(found.binary).parents[2])


@pytest.mark.parametrize("file", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_prove_of_each_example_profile_makes_its_launch_pass_the_gate_with_no_other_command(file, tmp_path, abhome):
    if file not in QUICK and os.environ.get("AGENTBOX_PROVE_EXAMPLES") != "all":
        pytest.skip(f"proving {file} takes many minutes: AGENTBOX_PROVE_EXAMPLES=all proves it")
    path, data = example(tmp_path, file)
    found = INSTALLED[data["harness"]]
    if found is None or found.source != "agentbox":
        pytest.skip(f"{data['harness']} is not installed (agent-box harness install {data['harness']}@VERSION)")
    link_installed(abhome, found)
    short = Path(f"/tmp/agentbox-example-{os.getpid()}-{file[:6]}")  # the run folder's sockets need a short path
    short.mkdir()
    # the launch checks that the model key is there and long enough to be told from its placeholder
    env = {**os.environ, "AGENTBOX_RUN_ROOT": str(short), data["model"]["api_key_env"]: "sk-example-" + "k" * 40}
    project = tmp_path / "project"  # beside AGENTBOX_HOME, which a read_write run must not be able to write
    project.mkdir()
    store = tmp_path / "ev"
    # one harness run at a time, each with room to spare: this test shares the machine with the rest of the suite
    proved = cli(
        "prove",
        path,
        "--cwd",
        project,
        "--evidence",
        store,
        "--json",
        "--workers",
        "1",
        "--timeout",
        "300",
        env=env,
        timeout=3600,
    )
    assert proved.returncode == 0, proved.stdout[-3000:] + proved.stderr[-6000:]
    assert json.loads(proved.stdout)["launch"] == {"allowed": True, "refusal": None}
    done = cli("launch", path, "--cwd", project, "--evidence", store, "--", "--version", env=env)
    assert done.returncode == 0, done.stderr
    assert found.version in done.stdout
    [run] = json.loads(cli("runs", "list", "--json", env=env).stdout)
    assert run["status"] == "finished"
    assert list(short.iterdir()) == []  # the run folder is gone
    short.rmdir()
    unproven = {
        item: c
        for item, c in run["claims"].items()
        if c.get("requirement") == "required" and c["verdict"] not in ("proven", "trivial")
    }
    assert unproven == {}


def test_a_server_that_cannot_be_asked_for_its_tools_is_named_with_the_reason(tmp_path):
    if INSTALLED["claude-code"] is None:
        pytest.skip("claude-code is not installed (agent-box harness install claude-code@VERSION)")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin"}  # no github-mcp-server
    done = cli(
        "permission",
        "compile",
        EXAMPLES / "claude-code-reviewer.yaml",
        "--cwd",
        tmp_path,
        "--binary",
        INSTALLED["claude-code"].binary,
        env=env,
    )
    assert done.returncode == 3
    assert "asking server 'github' for its tools failed: github-mcp-server is not on PATH" in done.stderr
