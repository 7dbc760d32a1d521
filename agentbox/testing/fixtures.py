"""Fixtures of the Agent-Box pytest plugin: a harness under test, a scripted model, a workspace with a
private home, the canary MCP server, and a helper that runs a harness with a compiled plan."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

import pytest

from agentbox.testing.session import HarnessTarget, session_key

# The scripted model's key. Not shaped like a real key: some harnesses redact key-shaped strings from tool output,
# which would hide whether the variable was visible at all. A vector run adds its nonce, so the key it looks for is
# in no file on the host (the package's own source, readable in the sandbox, holds only this prefix).
MODEL_KEY = "agentbox-scripted-credential"

__all__ = ["Workspace", "CanaryMcp"]


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> HarnessTarget:  # parametrized by the session
    target = request.param
    if target is None or target.binary is None:
        pytest.fail(
            f"harness {getattr(target, 'id', '?')} is required (--agentbox-require-harnesses) but not installed"
        )
    return target


@pytest.fixture
def agentbox_mode(request: pytest.FixtureRequest) -> str | None:
    """How this test drives its harness: the mode it is parametrized with when the run drives several, else the
    run's one mode; for a test with no harness, the mode its records are taken in (None: none of this run's)."""
    session = request.config.stash[session_key]
    if hasattr(request, "param"):
        return str(request.param)
    if "harness" not in request.fixturenames:
        return session.mode_without_a_harness()
    return session.modes[0]


_PROBES: dict[str, object] = {}


@pytest.fixture
def harness_probe(harness: HarnessTarget):
    """The probe (version, sha256, dialect) of the harness under test, once per binary and process."""
    assert harness.binary is not None  # the `harness` fixture fails a harness that is not installed
    if harness.binary not in _PROBES:
        _PROBES[harness.binary] = harness.adapter().probe(harness.binary)
    return _PROBES[harness.binary]


@dataclass
class Workspace:
    """A temporary project and a private home, both owned by the test."""

    root: Path
    project: Path
    home: Path

    def file(self, rel: str) -> Path:
        return self.project / rel


@pytest.fixture
def agentbox_workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    # Not under the pytest tmp tree's common prefix with /tmp/agentbox, and never the real home.
    root = tmp_path_factory.mktemp("abx")
    project, home = root / "project", root / "home"
    project.mkdir()
    home.mkdir()
    return Workspace(root=root, project=project, home=home)


@pytest.fixture
def scripted_model():
    from agentbox.scripted import ScriptedModel

    # it answers only requests carrying the real key: inside the sandbox the harness holds a placeholder, so a run
    # that got answers there proves the egress proxy swapped the key in
    model = ScriptedModel(key=MODEL_KEY)
    model.start()
    try:
        yield model
    finally:
        model.stop()


@dataclass
class CanaryMcp:
    """How a profile starts the canary MCP server, and the log it writes to."""

    name: str
    log: Path
    tool_from: str | None = None  # a file whose first line the server names a tool after (AGENTBOX_CANARY_TOOL_FROM)

    def server_spec(self) -> dict[str, Any]:
        # PYTHONPATH: the server under test is this package's, whatever else the interpreter would import
        return {
            "command": sys.executable,
            "args": ["-m", "agentbox.canary_mcp", "--log", str(self.log), "--name", self.name],
            # in the environment, not the arguments: the sandbox binds back the folder of an argument that
            # names a file, and a hostile server does not say what it reads
            "env": {
                "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
                **({"AGENTBOX_CANARY_TOOL_FROM": self.tool_from} if self.tool_from else {}),
            },
        }

    @property
    def binds(self) -> tuple[str, ...]:
        """The folder the server must write to from inside a sandbox."""
        return (str(self.log.parent),)

    def invocations(self) -> list[dict]:
        from agentbox.canary_mcp.log import CanaryLog

        return CanaryLog(self.log).invocations()


@pytest.fixture
def canary_mcp(tmp_path_factory: pytest.TempPathFactory) -> CanaryMcp:
    return CanaryMcp(name="canary", log=tmp_path_factory.mktemp("mcp") / "canary.log")


@pytest.fixture
def run_harness(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """`run_harness(harness, profile_dict, workspace, prompt, layer="composed")` -> RunOutcome."""
    from agentbox.compile.adapters import get_adapter
    from agentbox.run.harness_run import RunRequest, run_harness as _run
    from agentbox.core.profile import LoadedProfile, Profile

    session = request.config.stash[session_key]
    probes: dict[str, Any] = {}

    package_root = str(Path(__file__).resolve().parents[2])  # the canary MCP server imports agentbox in the sandbox

    def run(
        harness: HarnessTarget,
        profile: dict,
        workspace: Workspace,
        prompt: str = "go",
        *,
        layer: Literal["composed", "harness"] = "composed",
        extra_env: dict[str, str] | None = None,
        keep_run_dir: bool = False,
        binds: tuple[str, ...] = (),
    ):
        assert harness.binary is not None  # the `harness` fixture fails a harness that is not installed
        if harness.binary not in probes:
            probes[harness.binary] = get_adapter(harness.name).probe(harness.binary)
        loaded = LoadedProfile(profile=Profile.model_validate(profile), source="<test>", digest="test")
        return _run(
            RunRequest(
                loaded=loaded,
                probe=probes[harness.binary],
                workspace=str(workspace.project),
                home=str(workspace.home),
                prompt=prompt,
                layer=layer,
                timeout=session.timeout,
                extra_env=extra_env or {},
                keep_run_dir=keep_run_dir,
                ro_binds=(package_root,),
                rw_binds=tuple(str(b) for b in binds),
            )
        )

    return run


# Not a provider's well-known name for the OpenAI wires: some harnesses drop those from their commands'
# environment whatever the intent (Hermes), which would hide whether the sandbox keeps the key out.
_KEY_VARS = {
    "anthropic-messages": "ANTHROPIC_API_KEY",
    "openai-responses": "AGENTBOX_MODEL_API_KEY",
    "openai-chat": "AGENTBOX_MODEL_API_KEY",
}


def scripted_profile(
    harness: HarnessTarget,
    model,
    intent: dict,
    *,
    name: str = "smoke",
    mcp_servers: dict | None = None,
    secrets: dict | None = None,
) -> dict:
    """A profile dict for `harness` that talks to the scripted model; the key is a fixed test value."""
    vocabulary = harness.vocabulary()
    wire = vocabulary.wire_api
    base = model.base_url if wire == "anthropic-messages" else f"{model.base_url}/v1"
    return {
        "name": name,
        "harness": harness.name,
        "model": {
            "base_url": base,
            "name": vocabulary.scripted_model_name or "scripted",
            "api_key_env": _KEY_VARS[wire],
        },
        "permission_intent": intent,
        "mcp_servers": mcp_servers or {},
        "secrets": secrets or {},
    }


# The plain plan of the smokes: the workspace writable, no network for commands.
READ_WRITE = {
    "workspace": {"access": "read_write", "requirement": "required"},
    "command_network": {"access": "none", "requirement": "required"},
}


def greeting_run(
    harness: HarnessTarget,
    model,
    workspace: Workspace,
    run_harness,
    *,
    extra_env: dict[str, str] | None = None,
    binds: tuple[str, ...] = (),
):
    """A run that only greets the scripted model (no tool call) under READ_WRITE; it must end well."""
    model.load({"steps": []}, harness.vocabulary())
    out = run_harness(
        harness,
        scripted_profile(harness, model, READ_WRITE),
        workspace,
        "hi",
        extra_env={**scripted_key_env(harness), **(extra_env or {})},
        binds=binds,
    )
    assert out.ok, f"exit {out.exit_code}\n{out.stderr[-2000:]}"
    return out


def scripted_key_env(harness: HarnessTarget, key: str | None = None) -> dict[str, str]:
    """The host variable holding `harness`'s scripted model key (default: the scripted model's fixed test key)."""
    return {_KEY_VARS[harness.vocabulary().wire_api]: key or MODEL_KEY}
