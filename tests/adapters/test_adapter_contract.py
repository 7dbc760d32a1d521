"""The adapter contract: what every registered harness adapter must do, tested through its public methods only.

Each test is parametrized over `registry.harness_names()`, so a harness a new distribution registers runs the
whole contract with no edit here; the external adapter of tests/support/mini_harness runs it too, registered by
an entry point the way its own distribution would (its goldens and install are the exceptions, said below).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import agentbox.suite.conformance as conformance
from agentbox.compile.adapters.base import HarnessAdapter
from agentbox.compile.adapters.native import flatten, parse
from agentbox.compile.compiler import sandbox_facts
from agentbox.core import registry
from agentbox.core.capability import TRIVIAL, capability_id, load_declarations
from agentbox.core.intent import ITEMS
from agentbox.core.plan import CompileContext, CompileResult
from agentbox.core.profile import Profile
from agentbox.core.versions import Version
from agentbox.harnesses.build_identity import Identity
from agentbox.harnesses.installs import find_binary

SUITE = Path(conformance.__file__).parent
GOLDENS = SUITE / "goldens"
GOLDEN_CONTEXT = yaml.safe_load((SUITE / "golden_context.yaml").read_text())
INTENTS = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((SUITE / "intents").glob("*.yaml"))}
SUPPORT = Path(__file__).parents[1] / "support"
MINI = "mini"
GARBAGE = (
    "",
    "command not found",
    "Segmentation fault (core dumped)",
    "error: unknown option '--version'\nusage: tool [options]",
)
# Stands for the digest of a stand-in binary: the contract checks what the probe parses, not the build.
NO_IDENTITY = Identity(sha256="0" * 64, files=1, size=0, state=())

PACKAGED = registry.harness_names()


def _clear_registry_caches() -> None:
    registry._entries.cache_clear()
    registry.adapter.cache_clear()
    load_declarations.cache_clear()


@pytest.fixture
def mini_registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HarnessAdapter:
    """The mini adapter registered by an entry point of a distribution `mini-harness`, as
    tests/core/test_harness_registry.py installs it, but inside this process."""
    dist = tmp_path / "site" / "mini_harness-1.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mini-harness\nVersion: 1.0.0\n")
    (dist / "entry_points.txt").write_text("[agentbox.harnesses]\nmini = mini_harness:ADAPTER\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    _clear_registry_caches()
    yield registry.adapter(MINI)
    monkeypatch.undo()
    _clear_registry_caches()


@pytest.fixture(params=[*PACKAGED, MINI])
def adapter(request: pytest.FixtureRequest) -> HarnessAdapter:
    if request.param == MINI:
        return request.getfixturevalue("mini_registered")
    return registry.adapter(request.param)


@pytest.fixture(params=PACKAGED)
def packaged(request: pytest.FixtureRequest) -> HarnessAdapter:
    """Only the registered harnesses of this install: goldens and installs are theirs, not the mini's."""
    return registry.adapter(request.param)


# -- helpers ---------------------------------------------------------------------------------------------


def profile_for(adapter: HarnessAdapter, intent_name: str) -> Profile:
    intent = INTENTS[intent_name]
    servers = {k: v for k, v in GOLDEN_CONTEXT["mcp_servers"].items() if k in intent.get("mcp", {}).get("servers", [])}
    return Profile.model_validate(
        {
            "name": "contract",
            "harness": adapter.name,
            "model": GOLDEN_CONTEXT["models"][adapter.tool_vocabulary.wire_api],
            "permission_intent": intent,
            "mcp_servers": servers,
        }
    )


def newest_tested(adapter: HarnessAdapter) -> str:
    return max(adapter.declarations.tested_versions, key=Version.parse)


def untested_above(adapter: HarnessAdapter) -> str:
    """A major version above the tested range's max."""
    return f"{int(adapter.declarations.tested_range['max'].split('.')[0]) + 1}.0.0"


def contexts(adapter: HarnessAdapter, profile: Profile, version: str | None) -> dict[str, CompileContext]:
    """The harness alone, and composed inside the OS sandbox (told what that sandbox enforces)."""
    base = {"cwd": GOLDEN_CONTEXT["cwd"], "home": GOLDEN_CONTEXT["home"], "harness_version": version}
    facts = sandbox_facts(
        profile.permission_intent, profile.model.base_url, any(b.hosts for b in profile.secrets.values())
    )
    return {"alone": CompileContext(**base), "composed": CompileContext(**base, **facts)}


def every_compile(adapter: HarnessAdapter, version: str | None = None):
    """(case id, profile, context, result) for every golden intent in both contexts."""
    version = version or newest_tested(adapter)
    for intent_name in INTENTS:
        profile = profile_for(adapter, intent_name)
        for where, context in contexts(adapter, profile, version).items():
            yield f"{intent_name}/{where}", profile, context, adapter.compile(profile, context)


def _present(key: str, flat: dict[str, Any]) -> bool:
    return any(leaf == key or leaf.startswith(key + ".") for leaf in flat)


def _nested(key: str, value: Any) -> dict[str, Any]:
    out: Any = value
    for part in reversed(key.split(".")):
        out = {part: out}
    return out


def _reported(key: str, changed: list[str]) -> bool:
    """The compiler's own rule for which changed keys an owned key covers (`compile_plan`'s override check)."""
    return any(c == key or c.startswith(key + ".") or key.startswith(c + ".") for c in changed)


# -- determinism -----------------------------------------------------------------------------------------


def test_the_same_profile_and_context_compile_to_the_same_bytes_twice_and_in_another_order(adapter):
    cases = [(case, profile, context) for case, profile, context, _ in every_compile(adapter)]
    first = {case: adapter.compile(profile, context).model_dump_json() for case, profile, context in cases}
    fresh = type(adapter)()  # a new instance: nothing remembered from the first runs
    second = {case: fresh.compile(profile, context).model_dump_json() for case, profile, context in reversed(cases)}
    again = {case: adapter.compile(profile, context).model_dump_json() for case, profile, context in cases}
    for case in first:
        assert first[case] == second[case] == again[case], f"{adapter.name} {case}: compile is not deterministic"


# -- owned keys ------------------------------------------------------------------------------------------


def test_every_owned_key_names_an_intent_item(adapter):
    for case, _, _, result in every_compile(adapter):
        for art in result.artifacts:
            strays = {k: v for k, v in art.owners.items() if v not in ITEMS}
            assert not strays, f"{adapter.name} {case} {art.path}: owners name no intent item: {strays}"


def test_every_owned_key_is_in_the_artifact_or_an_override_adding_it_is_reported(adapter):
    """An owned key is either compiled into its artifact, or guarded: one the adapter never sets but whose
    addition by a config_patch would weaken its item; `apply_patch` must then write it into that artifact and
    report it as changed, or the compiler's override check could never attribute it to its item."""
    for case, _, _, result in every_compile(adapter):
        for art in result.artifacts:
            if not art.owners:
                continue
            flat = flatten(parse(art.path, art.content))
            for key in art.owners:
                if _present(key, flat):
                    continue
                patched, changed = adapter.apply_patch(result, _nested(key, "agentbox-contract-probe"))
                target = next(a for a in patched.artifacts if a.path == art.path)
                landed = _present(key, flatten(parse(target.path, target.content)))
                assert landed and _reported(key, changed), (
                    f"{adapter.name} {case} {art.path}: owned key {key!r} is not in the content, and a "
                    f"config_patch adding it {'reports only ' + str(changed) if landed else 'lands in another file'}"
                )


# -- coverage --------------------------------------------------------------------------------------------


def test_coverage_has_exactly_one_harness_layer_entry_per_intent_item(adapter):
    for case, _, _, result in every_compile(adapter):
        assert sorted(result.coverage) == sorted(ITEMS), f"{adapter.name} {case}"
        layers = {item: c.layer for item, c in result.coverage.items()}
        assert set(layers.values()) == {"harness"}, f"{adapter.name} {case}: {layers}"


def test_a_result_names_its_harness_and_the_version_it_was_compiled_for(adapter):
    version = newest_tested(adapter)
    for case, _, _, result in every_compile(adapter, version):
        assert isinstance(result, CompileResult)
        assert (result.harness, result.version) == (adapter.name, version), case
        assert result.dialect == adapter.declarations.dialect_for(version), case


# -- goldens ---------------------------------------------------------------------------------------------


def test_every_registered_harness_has_compile_goldens(packaged):
    """Only presence: agentbox/suite/conformance/test_goldens.py compares them byte for byte. The mini adapter
    is left out: its goldens would belong to its own distribution, and the packaged folder has none."""
    folder = GOLDENS / packaged.name
    cases = sorted(p.parent.relative_to(folder) for p in folder.rglob("launch.json")) if folder.is_dir() else []
    assert cases, (
        f"harness {packaged.name!r} has no compile goldens under {folder}: run "
        "`pytest agentbox/suite/conformance/test_goldens.py --agentbox-update-goldens` and review them"
    )


# -- probe parsing ---------------------------------------------------------------------------------------


def _version_output(adapter: HarnessAdapter, binary: str) -> str:
    done = subprocess.run(
        [binary, *adapter.version_args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=adapter.probe_env(),
    )
    assert done.returncode == 0, f"{binary} {' '.join(adapter.version_args)}: exit {done.returncode}"
    return (done.stdout + done.stderr).strip()


def _installed(adapter: HarnessAdapter):
    found = find_binary(adapter.name)
    if found is None or found.source != "agentbox":
        pytest.skip(f"{adapter.name} is not installed under the Agent-Box home (agent-box harness install)")
    return found


def test_the_real_version_output_parses_to_the_version_its_install_folder_names(packaged):
    found = _installed(packaged)
    assert packaged.parse_version(_version_output(packaged, found.binary)) == found.version


def test_the_mini_version_output_parses_to_its_version(mini_registered, tmp_path):
    """The mini harness has no install of its own: its binary is the script test_harness_registry writes."""
    binary = tmp_path / "mini"
    binary.write_text('#!/bin/sh\necho "mini 1.0.0"\n')
    binary.chmod(0o755)
    assert mini_registered.parse_version(_version_output(mini_registered, str(binary))) == "1.0.0"


@pytest.mark.parametrize("text", GARBAGE, ids=["empty", "not-found", "crash", "usage"])
def test_garbage_version_output_parses_to_no_version(adapter, text):
    assert adapter.parse_version(text) is None


# -- refusal of an untested version ----------------------------------------------------------------------


def test_the_declarations_name_a_tested_range_that_holds_every_newest_tested_version(adapter):
    tested = adapter.declarations.tested_range
    assert {"min", "max"} <= set(tested), f"{adapter.name}: no tested_range min..max, so no version is refused"
    assert adapter.declarations.in_tested_range(newest_tested(adapter))


def test_a_version_outside_the_tested_range_is_reported_as_outside(adapter):
    declarations = adapter.declarations
    assert not declarations.in_tested_range(untested_above(adapter))
    assert not declarations.in_tested_range("0.0.0") or declarations.tested_range["min"] == "0.0.0"
    assert not declarations.in_tested_range(None)


def test_an_untested_version_downgrades_every_exact_restriction_to_partial_and_says_why(adapter):
    version = untested_above(adapter)
    tested = adapter.declarations.tested_range
    why = f"downgraded: version {version} is outside the tested range {tested['min']}..{tested['max']}"
    inside = {case: result for case, _, _, result in every_compile(adapter)}
    for case, profile, _, result in every_compile(adapter, version):
        intent = profile.permission_intent
        for item, coverage in result.coverage.items():
            if capability_id(item, intent.item(item).model_dump()) in TRIVIAL:
                continue  # nothing to restrict: exact at any version
            assert coverage.support != "exact", f"{adapter.name} {case} {item}: exact at untested {version}"
            if inside[case].coverage[item].support == "exact":
                assert (coverage.support, why in coverage.reason) == ("partial", True), (
                    f"{adapter.name} {case} {item}: {coverage.support}, {coverage.reason!r}"
                )


def test_a_probe_of_an_untested_version_is_outside_the_tested_range_and_names_the_problem(adapter, tmp_path):
    """A stand-in binary answers as the real one does, with an untested version in place of its own."""
    if adapter.name == MINI:
        real, own = "mini 1.0.0", "1.0.0"
    else:
        found = _installed(adapter)
        real, own = _version_output(adapter, found.binary), found.version
    version = untested_above(adapter)
    binary = tmp_path / adapter.binary_name
    binary.write_text(f"#!/bin/sh\ncat <<'EOF'\n{real.replace(own, version)}\nEOF\n")
    binary.chmod(0o755)
    probe = adapter.probe(str(binary), identity=NO_IDENTITY)
    assert (probe.version, probe.in_tested_range) == (version, False)
    assert probe.problem is not None and "outside the tested range" in probe.problem


# -- vocabulary ------------------------------------------------------------------------------------------


def test_the_tool_vocabulary_loads_and_names_a_wire_api(adapter):
    vocabulary = adapter.tool_vocabulary
    assert vocabulary.wire_api in ("anthropic-messages", "openai-responses", "openai-chat")
    assert adapter.vocabulary_for(newest_tested(adapter)).wire_api == vocabulary.wire_api


def test_a_headless_run_of_a_compiled_plan_carries_the_prompt_as_one_argument_or_its_words(adapter):
    """OpenCode's `run` re-joins its message words with spaces (and quotes a word holding one), so its adapter
    passes the prompt as its words: either way the arguments hold the prompt's text, in order."""
    prompt = "contract prompt"
    for case, _, _, result in every_compile(adapter):
        argv = adapter.headless_argv(result, prompt)
        assert all(isinstance(a, str) for a in argv), case
        words = prompt.split(" ")
        as_words = any(argv[i : i + len(words)] == words for i in range(len(argv)))
        assert prompt in argv or as_words, f"{adapter.name} {case}: {argv}"
