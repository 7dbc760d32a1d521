"""Median start-up of `agent-box launch <codex profile> -- --version` against bare `codex --version`,
with 100,000 evidence records in the store, measured interleaved in one run; prints the ratio.

Two baselines: codex as the caller starts it (the caller's whole environment) and codex with the
variables a launch passes it (the plan's allowlist, an empty home): a variable such as
NODE_EXTRA_CA_CERTS can cost node tens of milliseconds, and a launch drops it. Also timed, to split
the overhead: the launch's own sandbox argv started without agent-box (bwrap's share), the same
launch under `python -S` (no site hooks: this machine's .pth files), and the interpreter alone. The
first launch (index build over the whole store, probe, compile, gate) is reported apart; every later
one runs from the launch cache.

Also timed, and the one the target is read on: agent-box as a user installs it, a regular (not
editable) install in its own virtual environment (`--venv DIR`, built there on first use;
benchmarks/installed.py), which starts without this machine's site hooks and without the
editable-install finder.

Target: launch at most +15% over the bare harness.
Usage: python benchmarks/launch.py [--runs N] [--records N] [--venv DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from installed import DEFAULT_VENV, regular_install

# the builders of synthetic records live with the tests (tests/support): they never ship
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace').strip()[:1500]}")
    return elapsed


def _store(store: str, harness: str, version: str, sha: str, capabilities: list[str], count: int) -> None:
    from agentbox.prove.claims import default_catalogue_dir
    from agentbox.prove.evidence import append
    from synthetic_evidence import filler_lines, posing_as_observed, proving_records
    from agentbox.prove.vectors import load_catalogue

    catalogue = load_catalogue(default_catalogue_dir())
    os.makedirs(store, exist_ok=True)
    # the gate counts only records a suite run observed: these made-up ones pose as such, in the
    # benchmark's own temporary store, so that the launch it times is an allowed one
    real = posing_as_observed(proving_records(catalogue, harness, version, sha, capabilities))
    with open(os.path.join(store, "evidence.jsonl"), "w") as f:
        for line in filler_lines(catalogue, harness, count - len(real)):
            f.write(line + "\n")
    append(store, real)


def _agent_box() -> list[str]:
    # the console script itself: a pyenv shim in front of it would add a bash start-up to every call
    script = os.path.join(os.path.dirname(sys.executable), "agent-box")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "agentbox.cli"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument(
        "--venv", default=DEFAULT_VENV, help="where the regular install timed lives (built there once; '' for none)"
    )
    args = ap.parse_args()
    from agentbox.compile.adapters import get_adapter
    from agentbox.hot import read_marshal
    from agentbox.harnesses.installs import find_binary

    found = find_binary("codex")
    if found is None:
        print("codex is not installed: agent-box harness install codex@0.171.0")
        return 1
    probe = get_adapter("codex").probe(found.binary)
    with tempfile.TemporaryDirectory() as tmp:
        home, ws, store = (os.path.join(tmp, d) for d in ("abhome", "ws", "evidence"))
        os.makedirs(ws)
        # the installed codex, seen from a fresh AGENTBOX_HOME: find_binary picks it as it would at home
        os.makedirs(os.path.join(home, "harnesses", "codex"))
        os.symlink(
            os.path.dirname(os.path.dirname(os.path.dirname(found.binary))),
            os.path.join(home, "harnesses", "codex", found.version),
        )
        profile = os.path.join(tmp, "codex-bench.yaml")
        with open(profile, "w") as f:
            f.write(
                "name: codex-bench\nharness: codex\npermission_intent:\n"
                "  workspace: {access: read_only, requirement: required}\n"
                "  host_home: {access: hidden, requirement: required}\n"
            )
        _store(store, "codex", probe.version, probe.sha256, ["workspace.read_only", "host_home.hidden"], args.records)
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # bytecode cached (as a pip install leaves it), in the temp folder rather than the source tree
        env = {**os.environ, "AGENTBOX_HOME": home, "PYTHONPATH": repo, "PYTHONPYCACHEPREFIX": os.path.join(tmp, "pyc")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        launch = [*_agent_box(), "launch", profile, "--cwd", ws, "--evidence", store, "--", "--version"]
        first = timed(launch, env)  # probe, compile, index build, gate, cache
        entry = read_marshal(next(os.scandir(os.path.join(home, "cache", "launch"))).path)
        sandbox_only, sandbox_env = _sandbox_argv(entry, tmp)
        empty = os.path.join(tmp, "empty-home")
        os.makedirs(empty)
        plain = {
            **{k: os.environ[k] for k in entry["sandbox"]["env_allow"] if k in os.environ},
            "HOME": empty,
            "CODEX_HOME": empty,
        }
        cases = {
            "codex --version": ([found.binary, "--version"], env),
            "codex --version, launch's vars": ([found.binary, "--version"], plain),
            "agent-box launch": (launch, env),
            # the same launch with no site hooks: what agent-box itself costs, apart from this machine's .pth files
            "agent-box launch, python -S": (
                [sys.executable, "-S", "-m", "agentbox.cli", *launch[len(_agent_box()) :]],
                env,
            ),
            "bwrap + codex (no agent-box)": (sandbox_only, sandbox_env),
            "python -c pass": ([sys.executable, "-c", "pass"], env),
            "python -S -c pass": ([sys.executable, "-S", "-c", "pass"], env),
        }
        if args.venv:
            installed = regular_install(args.venv)
            venv_env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "PYTHONPYCACHEPREFIX")}
            timed([installed, "launch", *launch[len(_agent_box()) + 1 :]], venv_env)  # its own first launch
            cases["agent-box launch, own venv"] = ([installed, "launch", *launch[len(_agent_box()) + 1 :]], venv_env)
        samples: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for name, (argv, case_env) in cases.items():
                samples[name].append(timed(argv, case_env))
        runs = subprocess.run([*_agent_box(), "runs", "list", "--json"], env=env, capture_output=True, text=True)
        recorded = len(json.loads(runs.stdout))
    base = statistics.median(samples["codex --version"])
    print(
        f"evidence store: {args.records} records; first launch (index build + gate) {first * 1000:.0f} ms; "
        f"{recorded} runs recorded"
    )
    print(f"{'case':<32} {'median ms':>10} {'x codex':>8}")
    for name, values in samples.items():
        med = statistics.median(values)
        print(f"{name:<32} {med * 1000:>10.1f} {med / base:>8.2f}")
    for baseline in ("codex --version", "codex --version, launch's vars"):
        for name in [n for n in samples if n.startswith("agent-box launch")]:
            ratio = statistics.median(samples[name]) / statistics.median(samples[baseline])
            print(
                f"{name} vs {baseline}: {(ratio - 1) * 100:+.1f}% "
                f"(target <= +15%: {'met' if ratio <= 1.15 else 'NOT met'})"
            )
    return 0


def _sandbox_argv(entry: dict, tmp: str) -> tuple[list[str], dict[str, str]]:
    """The cached launch's own bwrap argv, harness argv and environment, started directly (config written once)."""
    from agentbox.sandbox.session import environment, materialize, sandbox_argv

    run_dir = os.path.join(tmp, "bare-run")
    os.makedirs(run_dir)
    materialize(entry["sandbox"], run_dir)
    argv = [*sandbox_argv(entry["sandbox"], run_dir), "--", *entry["harness"], "--version"]
    return argv, environment(entry["sandbox"], "benchmark")


if __name__ == "__main__":
    sys.exit(main())
