"""`agent-box permission capabilities|compile|explain`: how a profile's intent compiles for its harness."""

from __future__ import annotations

import json
import sys

from agentbox.cli.arguments import CWD_HELP, JSON_HELP, command, group, profile_and_cwd
from agentbox.core import console
from agentbox.core.table import table
from agentbox.errors import HarnessError

__all__ = ["register", "cmd_capabilities", "cmd_compile", "cmd_explain"]

# The handlers import the compiler, the adapters and the probes when they run: the parser loads every command
# group's module, and `sandbox run` or `launch` parse whenever their cache cannot answer (benchmarks/sandbox_run.py,
# benchmarks/launch.py).


def register(sub) -> None:
    perm = group(
        sub,
        "permission",
        "inspect how a profile's intent compiles",
        "agent-box permission explain examples/profiles/codex-worker.yaml",
    )
    for name, fn, help_, example in (
        (
            "capabilities",
            cmd_capabilities,
            "what the harness declares it enforces, per intent item",
            "agent-box permission capabilities reviewer --json",
        ),
        (
            "compile",
            cmd_compile,
            "the EffectiveRunPlan with its stable hash; exit 3 when a required item is not exact",
            "agent-box permission compile reviewer --cwd ~/src/app --json",
        ),
        (
            "explain",
            cmd_explain,
            "intent item -> mechanism -> enforcement scope -> bypass -> gap",
            "agent-box permission explain reviewer --cwd ~/src/app",
        ),
    ):
        sp = command(perm, name, help_, example)
        profile_and_cwd(
            sp, CWD_HELP + "; what a harness declares does not depend on it" if name == "capabilities" else CWD_HELP
        )
        sp.add_argument(
            "--json",
            action="store_true",
            help="print the explanation as JSON to stdout" if name == "explain" else JSON_HELP,
        )
        sp.add_argument(
            "--harness-version", metavar="VERSION", help="compile for this version without probing a binary"
        )
        sp.add_argument("--binary", metavar="PATH", help="probe this harness binary instead of the installed one")
        sp.set_defaults(fn=fn)


def _profile_and_probe(args) -> tuple:
    from agentbox.harnesses.installs import find_binary
    from agentbox.core.profile import load_profile

    loaded = load_profile(args.profile)
    console.detail(f"profile {loaded.source} ({loaded.profile.harness})")
    probe = None
    binary = getattr(args, "binary", None)
    if binary is None and getattr(args, "harness_version", None) is None:
        found = find_binary(loaded.profile.harness)
        if found is None:
            raise HarnessError(
                f"{loaded.profile.harness} is not installed (neither under $AGENTBOX_HOME/harnesses "
                f"nor on PATH): agent-box harness install {loaded.profile.harness}@VERSION, give "
                "--binary PATH, or --harness-version VERSION to compile for a version without its binary"
            )
        from agentbox.run.launch_plan import probe_and_check

        # the installed binary: probed once, with what a cached answer must find unchanged (`output_cache`)
        probe, args.probe_check = probe_and_check(loaded, None, getattr(args, "cwd", None))
        console.detail(f"probed {probe.binary}: version {probe.version}, build {probe.sha256 or '-'}")
    elif binary is not None:
        from agentbox.compile.adapters import get_adapter
        from agentbox.run.launch_plan import refuse_planted

        refuse_planted(loaded, getattr(args, "cwd", None), binary)
        probe, _ = get_adapter(loaded.profile.harness).known_probe(binary)
        console.detail(f"probed {probe.binary}: version {probe.version}, build {probe.sha256 or '-'}")
    else:
        console.detail(f"no binary probed; compiling for version {getattr(args, 'harness_version', None)}")
    return loaded, probe


def _compile(args):
    from agentbox.compile.compiler import compile_plan
    from agentbox.compile.mcp_inventory import for_profile

    loaded, probe = _profile_and_probe(args)
    plan = compile_plan(
        loaded,
        args.cwd,
        harness_version=args.harness_version,
        probe=probe,
        **for_profile(loaded.profile, workspace=args.cwd).compile_args(),
    )
    check = getattr(args, "probe_check", None)
    if check is not None and not loaded.profile.permission_intent.mcp.tools:
        from agentbox.run.launch_plan import surfaces_check

        args.cache_check = {**check, "surfaces": surfaces_check(plan)}
    return plan


def cmd_capabilities(args) -> int:
    from agentbox.compile.adapters import get_adapter

    loaded, probe = _profile_and_probe(args)
    adapter = get_adapter(loaded.profile.harness)
    version = probe.version if probe else args.harness_version
    reports = adapter.capabilities(version, loaded.profile.permission_intent)
    if args.json:
        print(
            json.dumps(
                {
                    "harness": adapter.name,
                    "version": version,
                    "dialect": adapter.declarations.dialect_for(version),
                    "probe": probe.model_dump() if probe else None,
                    "capabilities": [r.model_dump(mode="json") for r in reports],
                },
                indent=2,
            )
        )
    else:
        print(f"{adapter.name} {version or '(version unknown)'} dialect {adapter.declarations.dialect_for(version)}")
        if probe and probe.problem:
            print(f"  note: {probe.problem}")
        rows = [
            (
                r.capability,
                r.support,
                r.reason + (f"  bypass: {', '.join(r.bypass_surfaces)}" if r.bypass_surfaces else ""),
            )
            for r in reports
        ]
        print("\n".join(table(("capability", "support", "reason"), rows, indent="  ")))
    return 0


def cmd_compile(args) -> int:
    from agentbox.compile.compiler import refusal_message

    plan = _compile(args)
    if args.json:
        print(json.dumps(plan.to_json(), indent=2, sort_keys=True))
    else:
        print(f"plan {plan.hash}")
        rows = [(i.item, i.capability, i.requirement, i.effective) for i in plan.items]
        print("\n".join(table(("item", "capability", "requirement", "effective"), rows, indent="  ")))
    if plan.errors:
        print(refusal_message(plan), file=sys.stderr)
        return 3
    for w in plan.warnings:
        console.warn(w)
    return 0


def cmd_explain(args) -> int:
    from agentbox.compile.explain import explain, explanation

    plan = _compile(args)
    if args.json:
        print(json.dumps(explanation(plan), indent=2))
    else:
        sys.stdout.write(explain(plan))
    return 3 if plan.errors else 0
