"""`agent-box prove`: record the evidence a profile's launch needs, then say whether the launch would pass.

The gate (`launch_plan.build`, as `launch` and `acp` call it) names what is not proven; `prove` runs exactly
the escape vectors of those required items (their capabilities, through `--agentbox-capability`) on the
profile's harness build, with the suite that ships in the package (`agentbox/suite`), pytest under the hood
and its progress on the terminal, and appends the evidence to the store the launch reads. Then it asks the
gate again and prints the items' claims.

Passes, each only when the one before left something to settle:
1. headless: the sandbox alone, the ACP endpoint alone and both harness layers. Headless runs are the
   cheapest way to a harness, and evidence of any mode speaks for an item that the sandbox alone blocks in
   every vector (`gate.carried_by_sandbox`);
2. the launch's own mode (`tui` for `launch`, `acp` for `agent-box acp`), for the items the first pass
   proved only headless, when a driver for that mode exists, with `--agentbox-carry`: a vector the sandbox alone
   blocks is carried into that mode's claims by the first pass's records (`prove.claims`), so only the others run.
An item the compiled plan cannot enforce (refused on the plan layer) is no question of evidence: `prove`
says so and runs nothing for it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agentbox.prove.claims import default_catalogue_dir
from agentbox.errors import InputError
from agentbox.gate import LAUNCH_MODE, Decision
from agentbox.run.launch_plan import Built, build
from agentbox.prove.hermetic import SUITE_DIR
from agentbox.prove.vectors import load_catalogue

__all__ = ["Pass", "prove", "MODES"]

MODES = ("tui", "headless", "acp")
# what evidence can settle: an item refused on what the recorded runs say, not on the compiled plan
_EVIDENCE_LAYERS = ("composed", "acp")


@dataclass
class Pass:
    mode: str
    capabilities: list[str]
    exit_status: int | None = None  # pytest's; None when the pass was not needed
    argv: list[str] = field(default_factory=list)


def _decide(profile: str, cwd: str, evidence: str | None, mode: str) -> Built:
    if mode == "acp":
        from agentbox.acp_endpoint.gate import prepare

        return prepare(profile, cwd, evidence=evidence).built
    return build(profile, cwd, evidence=evidence, mode=mode)


def _settleable(decision: Decision, known: set[str]) -> list[str]:
    """The capabilities of the refused items that recorded runs can settle, each once, in the item order."""
    caps = [v.capability for v in decision.refused if v.layer in _EVIDENCE_LAYERS and v.capability in known]
    return list(dict.fromkeys(caps))


def _workers(workers: int | None) -> list[str]:
    """xdist on every core this process may use, unless told how many (1: no xdist)."""
    count = workers or max(1, len(os.sched_getaffinity(0)))
    if count == 1 or importlib.util.find_spec("xdist") is None:
        return []
    return ["-n", str(count)]


def _run(
    built: Built,
    store: str,
    mode: str,
    capabilities: list[str],
    timeout: float | None,
    json_out: bool,
    workers: int | None = None,
) -> Pass:
    from agentbox.prove import hermetic

    probe = built.probe
    options = [
        "-p",
        "no:randomly",
        f"--agentbox-harness={probe.harness}@{probe.version}",
        "--agentbox-require-harnesses",
        f"--agentbox-evidence-dir={store}",
        f"--agentbox-mode={mode}",
        # pass 2 leaves out the vectors the sandbox alone blocks: pass 1's headless records carry them
        *(["--agentbox-carry"] if mode != "headless" else []),
        *(f"--agentbox-capability={c}" for c in capabilities),
        *_workers(workers),
    ]
    if timeout is not None:
        options.append(f"--agentbox-timeout={timeout}")
    print(
        f"prove: {mode} runs of {', '.join(capabilities)} on {probe.harness} {probe.version}",
        file=sys.stderr if json_out else sys.stdout,
        flush=True,
    )
    # the suite's child, apart from any project (`testing/hermetic`); under --json stdout carries the JSON
    # alone: pytest's progress goes to stderr
    status = hermetic.run(
        options, [str(SUITE_DIR / "negative" / "test_vectors.py")], stdout=sys.stderr if json_out else None
    )
    return Pass(mode, capabilities, status, options)


def prove(
    profile: str,
    cwd: str,
    *,
    evidence: str | None = None,
    mode: str = LAUNCH_MODE,
    again: bool = False,
    timeout: float | None = None,
    as_json: bool = False,
    workers: int | None = None,
) -> int:
    """0 when the launch in `mode` would pass afterwards, 3 when its gate would still refuse (the refusal printed),
    4 when the gate would pass and the run's start refuse (what the launch reads back is inside what it can write)."""
    from agentbox.core.home import evidence_store

    if mode not in MODES:
        raise InputError(f"--mode {mode}: not a mode; one of {', '.join(MODES)}")
    # what prove records may be the store's first content: unlike a reader, it makes the store, the default one too
    target = Path(evidence) if evidence else evidence_store(None)
    if not target.exists() and target.suffix != ".jsonl":
        target.mkdir(parents=True)
    store = str(evidence_store(evidence))
    known = {v.capability for v in load_catalogue(default_catalogue_dir()).vectors}
    # pass 1 settles what headless evidence can (the gate of a headless run names it); pass 2 what only the
    # launch's own mode can
    built = _decide(profile, cwd, store, "headless")
    if built.probe.version is None:
        raise InputError(
            f"{built.probe.harness}: its version cannot be read from {built.probe.binary}; the suite "
            "drives installed builds by version (agent-box harness install NAME@VERSION)"
        )
    passes: list[Pass] = []
    if again:
        first = list(
            dict.fromkeys(
                v.capability for v in built.decision.items if v.requirement == "required" and v.capability in known
            )
        )
    else:
        first = _settleable(built.decision, known)
    if first:
        passes.append(_run(built, store, "headless", first, timeout, as_json, workers))
    if mode != "headless":
        built = _decide(profile, cwd, store, mode)
        second = first if again else _settleable(built.decision, known)
        if second and _drivable(built, mode):
            passes.append(_run(built, store, mode, second, timeout, as_json, workers))
            built = _decide(profile, cwd, store, mode)
        elif second:
            passes.append(Pass(mode, second))
    elif first:
        built = _decide(profile, cwd, store, mode)
    # (the gate is asked again only after a pass recorded something: each ask probes and compiles afresh)
    return _report(built, profile, cwd, mode, passes, as_json)


def _drivable(built: Built, mode: str) -> bool:
    from agentbox.harnesses.acp import unsupported as acp_unsupported
    from agentbox.harnesses.tui import unsupported as tui_unsupported

    why = (tui_unsupported if mode == "tui" else acp_unsupported)(built.probe.harness)
    if why:
        print(
            f"prove: {built.probe.harness} cannot be driven in its {mode} ({why}): its items stand on headless "
            f"evidence only where the sandbox alone blocks every vector of them",
            file=sys.stderr,
        )
    return why is None


def _start_refusal(built: Built) -> str | None:
    """What the launch's start would refuse after the gate passed (`refuse_writable_state`: a profile, store or
    binary the run could write), or None: "launch would pass" must hold for the whole launch."""
    from agentbox.errors import SandboxError
    from agentbox.hot import run_root
    from agentbox.run.launch_plan import _entry
    from agentbox.sandbox.session import refuse_writable_state

    try:
        refuse_writable_state(_entry(built)[0]["sandbox"], os.path.join(run_root(), "agentbox-prove-check"))
    except SandboxError as exc:
        return f"agent-box: {exc}"
    return None


def _report(built: Built, profile: str, cwd: str, mode: str, passes: list[Pass], as_json: bool) -> int:
    from agentbox.run.launch_plan import with_remedies

    decision = built.decision
    launcher = "agent-box acp" if mode == "acp" else "agent-box launch"  # (headless: no launcher, said below)
    refusal = None if decision.allowed else with_remedies(built).message(lead="agent-box: ")
    at_start = _start_refusal(built) if decision.allowed and mode != "headless" else None
    if as_json:
        print(
            json.dumps(
                {
                    "profile": built.loaded.source,
                    "harness": built.probe.harness,
                    "version": built.probe.version,
                    "binary_sha256": built.probe.sha256,
                    "backend": decision.target.backend,
                    "mode": mode,
                    "evidence": decision.target.evidence_dir,
                    "passes": [
                        {"mode": p.mode, "capabilities": p.capabilities, "exit_status": p.exit_status} for p in passes
                    ],
                    "items": decision.claims(),
                    "launch": {"allowed": decision.allowed and at_start is None, "refusal": refusal or at_start},
                },
                indent=2,
            )
        )
        return 4 if at_start else 0 if decision.allowed else 3
    if not passes:
        why = "every required item is proven" if decision.allowed else "no refused item is a question of evidence"
        print(f"prove: nothing to run: {why} for {decision.target.label} ({mode} runs)")
    for p in passes:
        if p.exit_status is None:
            print(f"prove: no {p.mode} pass: {built.probe.harness} has no driver for it")
        elif p.exit_status not in (0, 1):
            print(f"prove: the {p.mode} pass ended with pytest exit status {p.exit_status} (see its output above)")
    print(f"claims of {built.loaded.source} on {decision.target.label}, {mode} runs:")
    for v in decision.items:
        if v.requirement == "required":
            reason = f": {v.reason}" if v.reason and v.verdict == "refused" else ""
            print(f"  {v.item} ({v.capability}): claim {v.claim}, {v.verdict}{reason}")
    where = f" --cwd {shlex.quote(cwd)}" if cwd else ""
    if decision.allowed and mode == "headless":
        # no command launches headless: say what this proves, and what a launch still needs
        print(
            f"a gate reading headless runs would pass; agent-box launch reads tui runs and agent-box acp acp "
            f"runs: agent-box prove {shlex.quote(profile)}{where} (tui) or --mode acp"
        )
        return 0
    if at_start:
        print(f"{launcher} would pass the gate, then refuse to start the run:", file=sys.stderr)
        print(at_start, file=sys.stderr)
        return 4
    if decision.allowed:
        print(f"{launcher} would pass the gate: {launcher} {shlex.quote(profile)}{where}")
        return 0
    print(f"{'a gate reading headless runs' if mode == 'headless' else launcher} would still refuse:", file=sys.stderr)
    print(refusal, file=sys.stderr)
    return 3
