"""The shipped example profiles work as the README says: each compiles against its installed harness and,
with evidence recorded for that build, launches it. The Claude Code reviewer keeps its required MCP tool
allowlist, with the suite's canary server standing in for GitHub's (a real MCP server, asked for its
tools before the gate decides)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from agentbox.adapters import get_adapter
from agentbox.build_identity import identify
from agentbox.evidence import append
from agentbox.installs import find_binary
from synthetic_evidence import posing_as_observed, proving_records
from launch_helpers import CATALOGUE, cli, needs_bwrap

pytestmark = needs_bwrap

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "profiles"
INSTALLED = {name: find_binary(name) for name in ("claude-code", "codex", "opencode", "hermes")}


def example(tmp_path, file: str) -> tuple[Path, dict]:
    data = yaml.safe_load((EXAMPLES / file).read_text())
    if "github" in data.get("mcp_servers", {}):
        log = tmp_path / "mcp" / "canary.log"
        log.parent.mkdir()
        data["mcp_servers"] = {"github": {"command": sys.executable,
                                          "args": ["-m", "agentbox.canary_mcp", "--log", str(log)]}}
        data["permission_intent"]["mcp"]["tools"] = {"github": ["allowed_echo"]}
    path = tmp_path / file
    path.write_text(yaml.safe_dump(data))
    return path, data


def required_capabilities(path, binary) -> list[str]:
    done = cli("permission", "compile", path, "--cwd", path.parent, "--binary", binary, "--json")
    assert done.returncode == 0, done.stderr
    return [i["capability"] for i in json.loads(done.stdout)["items"] if i["requirement"] == "required"]


@pytest.mark.parametrize("file", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_each_example_profile_compiles_and_launches_with_evidence_for_its_build(file, tmp_path, abhome):
    path, data = example(tmp_path, file)
    found = INSTALLED[data["harness"]]
    if found is None:
        pytest.skip(f"{data['harness']} is not installed (agent-box harness install {data['harness']}@VERSION)")
    binary = found.binary
    needed = required_capabilities(path, binary)
    sha = identify(get_adapter(data["harness"]).build_files(binary)).sha256
    version = get_adapter(data["harness"]).known_probe(binary)[0].version
    store = tmp_path / "ev"
    append(store, posing_as_observed(proving_records(CATALOGUE, data["harness"], version, sha, needed)))
    short = Path(f"/tmp/agentbox-example-{os.getpid()}-{file[:6]}")  # the run folder's sockets need a short path
    short.mkdir()
    env = {**os.environ, "AGENTBOX_RUN_ROOT": str(short)}
    project = tmp_path / "project"  # beside AGENTBOX_HOME, which a read_write run must not be able to write
    project.mkdir()
    done = cli("launch", path, "--cwd", project, "--evidence", store, "--binary", binary, "--", "--version", env=env)
    assert done.returncode == 0, done.stderr
    assert version in done.stdout
    [run] = json.loads(cli("runs", "list", "--json", env=env).stdout)
    assert run["status"] == "finished"
    assert list(short.iterdir()) == []  # the run folder is gone
    short.rmdir()
    unproven = {item: c for item, c in run["claims"].items() if c.get("requirement") == "required"
                and c["verdict"] not in ("proven", "trivial")}
    assert unproven == {}


def test_a_server_that_cannot_be_asked_for_its_tools_is_named_with_the_reason(tmp_path):
    if INSTALLED["claude-code"] is None:
        pytest.skip("claude-code is not installed (agent-box harness install claude-code@VERSION)")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin"}  # no github-mcp-server
    done = cli("permission", "compile", EXAMPLES / "claude-code-reviewer.yaml", "--cwd", tmp_path,
               "--binary", INSTALLED["claude-code"].binary, env=env)
    assert done.returncode == 3
    assert "asking server 'github' for its tools failed: github-mcp-server is not on PATH" in done.stderr
