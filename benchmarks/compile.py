"""Median time of `agent-box permission compile` and `explain` per installed harness, cold (no cache: the
build is hashed and the binary's `--version` probed) and warm (the build digest and the probe come
from `$AGENTBOX_HOME/cache`), against the same compile with `--harness-version` (no probe, no hash:
what compiling itself costs) and the interpreter alone, measured interleaved in one run; prints ratios.

Cold runs still find the harness's files in the OS page cache: they time hashing, not the disk. The
CPU time (user + system) of each run is printed beside its wall time: on a busy machine it is what
the wall time would be on an idle one.

Target: compile and explain at most 150 ms warm.
Usage: python benchmarks/compile.py [--runs N] [--harness NAME ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from launch import _agent_box

HARNESSES = ("claude-code", "codex", "opencode", "hermes")
TARGET_MS = 150


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], before=None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run."""
    if before is not None:
        before()
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 3):  # 3: a required item the plan cannot cover, still a whole compile
        raise SystemExit(f"{' '.join(argv)} failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    return elapsed, _children_cpu() - cpu


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--harness", action="append", choices=HARNESSES, help="default: every installed one")
    args = ap.parse_args()
    from agentbox.compile.adapters import get_adapter
    from agentbox.harnesses.build_identity import identify
    from agentbox.harnesses.installs import find_binary

    found = {h: find_binary(h) for h in args.harness or HARNESSES}
    found = {h: f for h, f in found.items() if f is not None and f.source == "agentbox"}
    if not found:
        print("no harness is installed: agent-box harness install codex@0.171.0")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = os.path.join(tmp, "abhome"), os.path.join(tmp, "ws")
        os.makedirs(ws)
        cache = os.path.join(home, "cache")
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # bytecode cached (as a pip install leaves it), in the temp folder rather than the source tree
        env = {**os.environ, "AGENTBOX_HOME": home, "PYTHONPATH": repo, "PYTHONPYCACHEPREFIX": os.path.join(tmp, "pyc")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cases: dict[str, tuple[list[str], object]] = {"python -c pass": ([sys.executable, "-c", "pass"], None)}
        sizes = {}
        for harness, installed in found.items():
            # the installed harness, seen from a fresh AGENTBOX_HOME: find_binary picks it as it would at home
            versions = os.path.join(home, "harnesses", harness)
            os.makedirs(versions, exist_ok=True)
            os.symlink(_version_dir(installed.binary, installed.version), os.path.join(versions, installed.version))
            identity = identify(get_adapter(harness).build_files(installed.binary))
            sizes[harness] = f"{identity.files} file(s), {identity.size / 1e6:.1f} MB"
            profile = os.path.join(tmp, f"{harness}.yaml")
            with open(profile, "w") as f:
                f.write(
                    f"name: bench\nharness: {harness}\npermission_intent:\n"
                    "  workspace: {access: read_only, requirement: required}\n"
                )
            command = [*_agent_box(), "permission"]
            compile_, explain = [*command, "compile", profile, "--cwd", ws], [*command, "explain", profile, "--cwd", ws]
            cases[f"{harness} compile --harness-version"] = ([*compile_, "--harness-version", installed.version], None)
            cases[f"{harness} compile cold"] = (compile_, lambda: shutil.rmtree(cache, ignore_errors=True))
            cases[f"{harness} compile warm"] = (compile_, None)
            cases[f"{harness} explain cold"] = (explain, lambda: shutil.rmtree(cache, ignore_errors=True))
            cases[f"{harness} explain warm"] = (explain, None)
        samples: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for name, (argv, before) in cases.items():
                samples[name].append(timed(argv, env, before))
    med = {k: statistics.median(wall for wall, _ in v) * 1000 for k, v in samples.items()}
    cpu = {k: statistics.median(c for _, c in v) * 1000 for k, v in samples.items()}
    print(f"{'case':<40} {'median ms':>10} {'cpu ms':>8}")
    for name, value in med.items():
        print(f"{name:<40} {value:>10.1f} {cpu[name]:>8.1f}")
    for harness in found:
        floor = med[f"{harness} compile --harness-version"]
        print(f"{harness} ({sizes[harness]} hashed cold):")
        for command in ("compile", "explain"):
            cold, warm = med[f"{harness} {command} cold"], med[f"{harness} {command} warm"]
            print(
                f"  {command}: cold/warm {cold / warm:.2f}x; warm vs no probe {(warm / floor - 1) * 100:+.1f}%; "
                f"warm {warm:.0f} ms, cpu {cpu[f'{harness} {command} warm']:.0f} ms "
                f"(target <= {TARGET_MS} ms: {'met' if warm <= TARGET_MS else 'NOT met'})"
            )
    return 0


def _version_dir(binary: str, version: str) -> str:
    """$AGENTBOX_HOME/harnesses/NAME/VERSION of an installed binary (the folder named by its version)."""
    path = os.path.dirname(os.path.abspath(binary))
    while os.path.basename(path) != version:
        path = os.path.dirname(path)
    return path


if __name__ == "__main__":
    sys.exit(main())
