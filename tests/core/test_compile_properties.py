"""Properties of compile over every harness: it is deterministic, and a strictly stronger intent
never compiles to a weaker plan."""

from __future__ import annotations

import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from agentbox.compile.compiler import compile_plan
from agentbox.core.intent import LEVELS
from agentbox.core.profile import HARNESSES, LoadedProfile, Profile

CWD = tempfile.mkdtemp(prefix="agentbox-prop-", dir="/var/tmp")
VERSIONS = {"claude-code": "2.1.332", "codex": "0.171.0", "opencode": "1.18.33", "hermes": "0.19.0"}
ENV_NAMES = ("GITHUB_TOKEN", "CARGO_HOME", "LANG")


def plan_for(harness: str, intent: dict):
    profile = Profile.model_validate(
        {
            "name": "prop",
            "harness": harness,
            "permission_intent": intent,
            "model": {"base_url": "http://127.0.0.1:8787/v1", "name": "m", "api_key_env": "MODEL_KEY"},
        }
    )
    return compile_plan(
        LoadedProfile(profile=profile, source="<prop>", digest="prop"),
        CWD,
        harness_version=VERSIONS[harness],
        home="/home/prop",
    )


levels = {item: st.integers(min_value=0, max_value=len(values) - 1) for item, values in LEVELS.items()}
env_sets = st.sets(st.sampled_from(ENV_NAMES))


def intent_of(choice: dict[str, int], env: set[str]) -> dict:
    intent: dict = {}
    for item, index in choice.items():
        value = LEVELS[item][index]
        entry = {"access": value, "requirement": "advisory"}
        if item == "command_network" and value == "restricted":
            entry["allow_domains"] = ["api.example.com"]
        intent[item] = entry
    intent["environment"] = {"allow": sorted(env), "requirement": "advisory"}
    return intent


def sandbox_freedoms(plan) -> set[str]:
    """What the sandbox lets a run do; a weaker plan may only add to it."""
    argv = plan.sandbox.argv
    binds = {(mode, dst) for mode, _, dst in plan.sandbox.binds}
    free = set()
    if ("bind", plan.cwd) in binds:
        free.add("write workspace")
    if ("ro-bind", plan.cwd) in binds or ("bind", plan.cwd) in binds:
        free.add("see workspace")
    if "--unshare-net" not in argv:
        free.add("network")
    if "/home/prop" not in [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--tmpfs"]:
        free.add("see home")
    free |= {f"env {name}" for name in plan.native.requirements.env_allow}
    return free


@settings(max_examples=40, deadline=None)
@given(harness=st.sampled_from(HARNESSES), choice=st.fixed_dictionaries(levels), env=env_sets)
def test_compiling_the_same_intent_twice_gives_the_same_plan_and_hash(harness, choice, env):
    a, b = plan_for(harness, intent_of(choice, env)), plan_for(harness, intent_of(choice, env))
    assert a.to_json() == b.to_json() and a.hash == b.hash


@settings(max_examples=60, deadline=None)
@given(harness=st.sampled_from(HARNESSES), strong=st.fixed_dictionaries(levels), env=env_sets, data=st.data())
def test_a_strictly_stronger_intent_never_compiles_to_a_weaker_plan(harness, strong, env, data):
    weak = {
        item: data.draw(st.integers(min_value=index, max_value=len(LEVELS[item]) - 1), label=item)
        for item, index in strong.items()
    }
    weak_env = env | data.draw(env_sets, label="extra env")
    stronger, weaker = plan_for(harness, intent_of(strong, env)), plan_for(harness, intent_of(weak, weak_env))
    assert sandbox_freedoms(stronger) <= sandbox_freedoms(weaker)
    for item in LEVELS:
        s_value, w_value = stronger.intent[item]["access"], weaker.intent[item]["access"]
        assert LEVELS[item].index(s_value) <= LEVELS[item].index(w_value)
