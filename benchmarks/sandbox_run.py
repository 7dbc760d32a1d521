"""Median start-up of `agent-box sandbox run -- true` against bare bwrap (and sandbox-runtime's
`srt -c true` when installed), measured interleaved in one run; prints the ratios.

Timed as a user runs it: the console script of a regular install in its own virtual environment
(benchmarks/installed.py, `--venv DIR`), from its plan cache (the first call fills it). The checkout's
own command (an editable install here) is timed beside it, for the difference the install makes.

Targets (issue 27): agent-box sandbox run at most 30 ms median on an idle 2-core machine, and at most
8x bare bwrap in the same run.
Usage: python benchmarks/sandbox_run.py [--runs N] [--venv DIR]
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

from installed import DEFAULT_VENV, regular_install


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--venv", default=DEFAULT_VENV, help="where the regular install timed lives (built once)")
    args = ap.parse_args()
    installed = regular_install(args.venv)
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
        # Landlock scope over abstract sockets (entered on a thread of the launcher, session.start_scoped)
        shared = os.path.join(tmp, "shared.yaml")
        with open(shared, "w") as f:
            f.write(
                "name: bench\nharness: codex\npermission_intent:\n"
                "  workspace: {access: read_only, requirement: required}\n"
            )
        env = {**os.environ, "AGENTBOX_HOME": home}
        agentbox = [installed, "sandbox", "run", profile, "--cwd", ws, "--", "true"]
        unrestricted = [*agentbox[:3], shared, *agentbox[4:]]
        # the checkout's own console script (a pyenv shim in front of it would add a bash start-up to each call)
        script = os.path.join(os.path.dirname(sys.executable), "agent-box")
        checkout = [script if os.path.exists(script) else "agent-box", *agentbox[1:]]
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
        cases = {
            "agent-box sandbox run": agentbox,
            "  network unrestricted": unrestricted,
            "  this checkout's command": checkout,
            "bwrap": bare,
        }
        if shutil.which("srt"):
            cases["srt -c true"] = ["srt", "-c", "true"]
        timed(agentbox, env)  # the first call compiles and fills the plan cache
        timed(unrestricted, env)
        timed(checkout, env)
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
        ours = statistics.median(samples[name])
        print(
            f"target: {name.strip()} <= 30 ms median: {'met' if ours <= 0.030 else 'NOT met'} ({ours * 1000:.1f} ms); "
            f"<= 8x bwrap: {'met' if ours <= 8 * base else 'NOT met'} ({ours / base:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
