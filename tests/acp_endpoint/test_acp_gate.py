"""`agent-box acp` gates like launch, and answers the client's `initialize` with the refusal."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import acp
import pytest
import yaml
from acp import RequestError

from acp_helpers import needs_bwrap, runs
from agentbox.harnesses.installs import find_binary
from agentbox.testing.acp_client import RecordingClient

pytestmark = needs_bwrap
REAL = {name: find_binary(name) for name in ("codex", "codex-acp")}  # before a test moves AGENTBOX_HOME


@pytest.fixture
def installed(place):
    """The real codex and codex-acp, seen from the test's AGENTBOX_HOME as they are at home."""
    for name, found in REAL.items():
        if found is None or found.source != "agentbox":
            pytest.skip(f"{name} is not installed: agent-box harness install {name}@VERSION")
        version_dir = Path(found.binary).parents[2]
        (place.abhome / "harnesses" / name).mkdir(parents=True, exist_ok=True)
        (place.abhome / "harnesses" / name / found.version).symlink_to(version_dir)


async def _spawn(place, profile):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentbox.cli",
        "acp",
        str(profile),
        "--cwd",
        str(place.ws),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=place.env(),
    )
    return proc, acp.connect_to_agent(RecordingClient(), proc.stdin, proc.stdout)


def test_a_refused_profile_is_an_error_at_initialize_naming_the_items_then_exit_3(place, installed):
    profile = place.root / "reviewer.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "name": "reviewer",
                "harness": "codex",
                "permission_intent": {
                    "workspace": {"access": "read_only"},
                    "shell": {"access": "deny"},
                    "command_network": {"access": "none"},
                },
            }
        )
    )

    async def go():
        proc, conn = await _spawn(place, profile)
        with pytest.raises(RequestError) as err:
            await asyncio.wait_for(conn.initialize(protocol_version=acp.PROTOCOL_VERSION), 120)
        status = await asyncio.wait_for(proc.wait(), 30)
        return err.value, status, (await proc.stderr.read()).decode()

    error, status, stderr = asyncio.run(go())
    assert status == 3, stderr
    assert error.code == -32003 and "refusing to launch" in str(error)
    items = {i["item"]: i for i in error.data["items"]}
    assert {"shell"} <= set(items) and items["shell"]["claim"] == "unverified"
    # what settles it: `agent-box prove` of this profile in the endpoint's mode
    assert f"agent-box prove {profile} --cwd {place.ws}" in " ".join(str(error).replace(" \\\n", " ").split())
    assert "--mode acp" in str(error)
    (run,) = runs(place)
    assert (run["status"], run["mode"], run["id"]) == ("refused", "acp", error.data["run"])
    assert run["cleanup"] == "nothing was written" and not (place.ws / ".agentbox").exists()


def test_a_profile_that_cannot_load_is_an_error_at_initialize_too(place):
    bad = place.root / "bad.yaml"
    bad.write_text("name: bad\nharness: codex\npermission_intent: {worksapce: {access: none}}\n")
    done = subprocess.run(
        [sys.executable, "-m", "agentbox.cli", "acp", str(bad), "--cwd", str(place.ws)],
        input=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}) + "\n",
        env=place.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    answer = json.loads(done.stdout)
    assert done.returncode == 2 and answer["id"] == 0
    assert "did you mean `workspace`" in answer["error"]["message"], answer


def test_an_allowed_start_is_cached_and_a_later_start_is_served_from_the_cache(place, installed):
    profile = place.root / "advisory.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "name": "advisory",
                "harness": "codex",
                "permission_intent": {"workspace": {"access": "read_write", "requirement": "advisory"}},
            }
        )
    )

    async def start():
        proc, conn = await _spawn(place, profile)
        answer = await asyncio.wait_for(conn.initialize(protocol_version=acp.PROTOCOL_VERSION), 120)
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 30)
        return answer

    assert asyncio.run(start()).protocol_version >= 1
    (cached,) = (place.abhome / "cache" / "acp").glob("*.json")
    first = cached.stat().st_mtime_ns
    assert asyncio.run(start()).protocol_version >= 1
    assert cached.stat().st_mtime_ns == first, "the second start read the cache and wrote nothing"
    assert [r["status"] for r in runs(place)] == ["finished", "finished"]


def test_a_refusal_answers_into_files_as_into_pipes_when_a_person_tries_the_endpoint_by_hand(place, installed):
    """`agent-box acp P < in.json > out.json`: asyncio takes only pipes, so the endpoint carries files itself (it
    printed a traceback and exited 1 before, instead of the refusal's JSON-RPC error and exit 3)."""
    profile = place.root / "reviewer.yaml"
    profile.write_text(
        yaml.safe_dump({"name": "reviewer", "harness": "codex", "permission_intent": {"shell": {"access": "deny"}}})
    )
    request = place.root / "in.json"
    request.write_text(
        json.dumps(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": acp.PROTOCOL_VERSION}}
        )
        + "\n"
    )
    answer = place.root / "out.json"
    with open(request, "rb") as stdin, open(answer, "wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "agentbox.cli", "acp", str(profile), "--cwd", str(place.ws)],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=place.env(),
            timeout=120,
        )
    assert done.returncode == 3, done.stderr.decode()[-500:]
    (line,) = answer.read_text().splitlines()
    assert json.loads(line)["error"]["code"] == -32003
