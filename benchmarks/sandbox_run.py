"""Median start-up of `agent-box sandbox run -- true` against bare bwrap (and sandbox-runtime's
`srt -c true` when installed), measured interleaved in one run; prints the ratios.

Target: agent-box sandbox run at most 100 ms median on a 2-core machine.
Usage: python benchmarks/sandbox_run.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws, home = os.path.join(tmp, "ws"), os.path.join(tmp, "abhome")
        os.makedirs(ws)
        profile = os.path.join(tmp, "p.yaml")
        with open(profile, "w") as f:
            f.write(
                "name: bench\nharness: codex\npermission_intent:\n"
                "  workspace: {access: read_only, requirement: required}\n"
                "  command_network: {access: none, requirement: required}\n"
            )
        # network unrestricted (the default) shares the host's network: bubblewrap then starts inside the
        # Landlock scope over abstract sockets (one more exec on the path)
        shared = os.path.join(tmp, "shared.yaml")
        with open(shared, "w") as f:
            f.write(
                "name: bench\nharness: codex\npermission_intent:\n"
                "  workspace: {access: read_only, requirement: required}\n"
            )
        env = {**os.environ, "AGENTBOX_HOME": home}
        agentbox = [shutil.which("agent-box") or "agent-box", "sandbox", "run", profile, "--cwd", ws, "--", "true"]
        unrestricted = [*agentbox[:3], shared, *agentbox[4:]]
        bare = [
            "bwrap",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--unshare-net",
            "--unshare-pid",
            "--die-with-parent",
            "--new-session",
            "true",
        ]
        cases = {"agent-box sandbox run": agentbox, "  network unrestricted": unrestricted, "bwrap": bare}
        if shutil.which("srt"):
            cases["srt -c true"] = ["srt", "-c", "true"]
        timed(agentbox, env)  # the first call compiles and fills the plan cache
        timed(unrestricted, env)
        samples: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for name, argv in cases.items():
                samples[name].append(timed(argv, env))
    base = statistics.median(samples["bwrap"])
    print(f"{'case':<24} {'median ms':>10} {'x bwrap':>8}")
    for name, values in samples.items():
        med = statistics.median(values)
        print(f"{name:<24} {med * 1000:>10.1f} {med / base:>8.2f}")
    for name in ("agent-box sandbox run", "  network unrestricted"):
        ours = statistics.median(samples[name]) * 1000
        print(f"target: {name.strip()} <= 100 ms median: {'met' if ours <= 100 else 'NOT met'} ({ours:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
