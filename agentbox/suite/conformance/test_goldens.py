"""Compile goldens: every intent x every dialect of every adapter, compared byte for byte.

Each case compiles as a composed plan does (the adapter is told what the OS sandbox around it enforces),
so a golden is what a launch runs, egress proxy policy and relay included.

`pytest --agentbox-update-goldens` rewrites them; each test writes only its own case folder, with
atomic replaces, so updating is safe under pytest-xdist.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from agentbox.compile.adapters import get_adapter
from agentbox.core.profile import HARNESSES
from agentbox.compile.compiler import credentials_of, sandbox_facts
from agentbox.core.plan import CompileContext
from agentbox.core.profile import Profile
from agentbox.sandbox.backend import SandboxRequest, get_backend
from agentbox.core.versions import Version, in_range

HERE = Path(__file__).parent
CONTEXT = yaml.safe_load((HERE / "golden_context.yaml").read_text())
pytestmark = pytest.mark.golden
INTENTS = sorted(p.stem for p in (HERE / "intents").glob("*.yaml"))


def _dialect_versions(adapter) -> list[tuple[str, str]]:
    """For each dialect, the newest tested version inside it (goldens pin real versions)."""
    decl = adapter.declarations
    out = []
    for dialect in decl.dialects or ():
        inside = [v for v in decl.tested_versions if in_range(Version.parse(v), dialect.min, dialect.max)]
        if inside:
            out.append((dialect.name, max(inside, key=Version.parse)))
    if not decl.dialects and decl.tested_versions:
        out.append(("default", max(decl.tested_versions, key=Version.parse)))
    return out


def _cases():
    for harness in HARNESSES:
        try:
            adapter = get_adapter(harness)
        except Exception:  # an adapter being written must not hide the others' goldens
            continue
        for dialect, version in _dialect_versions(adapter):
            for intent in INTENTS:
                yield pytest.param(harness, dialect, version, intent, id=f"{harness}-{dialect}-{intent}")


def render_case(harness: str, version: str, intent_name: str) -> dict[str, str]:
    adapter = get_adapter(harness)
    intent = yaml.safe_load((HERE / "intents" / f"{intent_name}.yaml").read_text())
    servers = {k: v for k, v in CONTEXT["mcp_servers"].items() if k in intent.get("mcp", {}).get("servers", [])}
    profile = Profile.model_validate(
        {
            "name": CONTEXT["profile_name"],
            "harness": harness,
            "model": CONTEXT["models"][adapter.tool_vocabulary.wire_api],
            "permission_intent": intent,
            "mcp_servers": servers,
        }
    )
    context = CompileContext(
        cwd=CONTEXT["cwd"],
        home=CONTEXT["home"],
        harness_version=version,
        **sandbox_facts(
            profile.permission_intent, profile.model.base_url, any(b.hosts for b in profile.secrets.values())
        ),
    )
    result, credentials = credentials_of(adapter.compile(profile, context), profile)
    sandbox = get_backend().compile(
        SandboxRequest(
            requirements=result.requirements, workspace=context.cwd, home=context.home, credentials=credentials
        )
    )
    files = {f"config/{a.path}": a.content for a in result.artifacts}
    launch = {
        "version": version,
        "dialect": result.dialect,
        "headless_argv": adapter.headless_argv(result, CONTEXT["prompt"]),
        "env": result.env,
        "requirements": result.requirements.model_dump(mode="json"),
        "harness_coverage": {k: v.support for k, v in sorted(result.coverage.items())},
        "owners": {a.path: a.owners for a in result.artifacts},
        "warnings": list(result.warnings),
        "errors": list(result.errors),
        "sandbox_argv": list(sandbox.argv),
        "sandbox_relay": [list(m) for m in sandbox.relay],
        "egress_policy": sandbox.egress.model_dump(mode="json") if sandbox.egress is not None else None,
        "model_route": sandbox.model_route,
        "credentials": [c.model_dump(mode="json") for c in sandbox.credentials],
    }
    files["launch.json"] = json.dumps(launch, indent=2, sort_keys=True) + "\n"
    return files


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@pytest.mark.parametrize("harness_name, dialect, version, intent", list(_cases()))
def test_compiled_artifacts_match_the_golden_byte_for_byte(request, harness_name, dialect, version, intent):
    harness = harness_name
    files = render_case(harness, version, intent)
    folder = HERE / "goldens" / harness / dialect / intent
    if request.config.getoption("--agentbox-update-goldens"):
        for rel, text in files.items():
            _write_atomic(folder / rel, text)
        for stale in folder.rglob("*"):
            if stale.is_file() and str(stale.relative_to(folder)) not in files:
                stale.unlink()
        return
    if not folder.exists():
        pytest.fail(
            f"no golden for {harness}/{dialect}/{intent}: run pytest --agentbox-update-goldens and review the diff"
        )
    on_disk = {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}
    assert sorted(on_disk) == sorted(files), "the set of compiled files changed"
    for rel, text in files.items():
        assert on_disk[rel] == text, f"{harness}/{dialect}/{intent}/{rel} differs from its golden"


def test_compiling_twice_gives_the_same_bytes():
    for harness in HARNESSES:
        try:
            adapter = get_adapter(harness)
        except Exception:
            continue
        for _, version in _dialect_versions(adapter):
            for intent in INTENTS:
                assert render_case(harness, version, intent) == render_case(harness, version, intent)


def test_every_dialect_has_at_least_eight_golden_intents():
    assert len(INTENTS) >= 8
