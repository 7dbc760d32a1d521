"""Time to the `initialize` answer through `agent-box acp` against the bare ACP adapter, measured interleaved in
one run; prints medians, the difference and the ratio.

The bare adapter is started as an editor starts it (the caller's environment, no sandbox). The endpoint is
started as an editor starts it too (`agent-box acp PROFILE --cwd DIR`), so its time holds the interpreter, the
gate (from its cache after the first start, which is reported apart), the private config, the egress proxy,
bubblewrap and the adapter itself. Both answer the SDK client's `initialize`; the clock stops at the answer.

Target: the endpoint at most +150 ms over the bare adapter.
Usage: python benchmarks/acp_endpoint.py [--runs N] [--harness codex] [--baseline DIR]

`--baseline DIR` times the endpoint of the package in DIR too (a checkout from before a change: its `agentbox`
first on PYTHONPATH), interleaved with the others, so a before/after comparison shares one machine load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time


async def _initialize(argv: list[str], env: dict[str, str], cwd: str) -> float:
    import acp

    from agentbox.testing.acp_client import RecordingClient

    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    conn = acp.connect_to_agent(RecordingClient(), proc.stdin, proc.stdout)
    try:
        await asyncio.wait_for(conn.initialize(protocol_version=acp.PROTOCOL_VERSION), 60)
        return time.perf_counter() - start
    finally:
        await conn.close()
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)  # the endpoint ends its sandbox and records its Run
        except asyncio.TimeoutError:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


def timed(argv: list[str], env: dict[str, str], cwd: str) -> float:
    return asyncio.run(_initialize(argv, env, cwd))


def _agent_box() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "agent-box")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "agentbox.cli"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--harness", default="codex")
    p.add_argument("--baseline", metavar="DIR", help="also time the endpoint of the agentbox package in DIR")
    args = p.parse_args()

    import yaml

    from agentbox.harnesses.acp import acp_entry
    from agentbox.core.home import harnesses_dir
    from agentbox.harnesses.installs import find_binary

    entry = acp_entry(args.harness)
    found = find_binary(entry.adapter or args.harness)
    if found is None:
        print(f"{entry.adapter or args.harness} is not installed", file=sys.stderr)
        return 2
    bare = [found.binary] if entry.adapter else [found.binary, *(entry.native or ())]
    with tempfile.TemporaryDirectory(dir="/var/tmp") as root:
        ws, abhome = os.path.join(root, "project"), os.path.join(root, "agentbox-home")
        os.makedirs(ws)
        os.makedirs(abhome)
        os.symlink(harnesses_dir(), os.path.join(abhome, "harnesses"))
        profile = os.path.join(root, "bench.yaml")
        with open(profile, "w") as f:  # every item advisory: the gate allows without evidence, as it does with it
            yaml.safe_dump(
                {
                    "name": "bench",
                    "harness": args.harness,
                    "model": {"base_url": "http://127.0.0.1:9999/v1", "name": "m", "api_key_env": "OPENAI_API_KEY"},
                    "permission_intent": {
                        "workspace": {"access": "read_write", "requirement": "advisory"},
                        "command_network": {"access": "none", "requirement": "advisory"},
                        "shell": {"access": "ask", "requirement": "advisory"},
                    },
                },
                f,
            )
        env = {**os.environ, "AGENTBOX_HOME": abhome, "OPENAI_API_KEY": "bench"}
        endpoint = [*_agent_box(), "acp", profile, "--cwd", ws]
        base_env = None
        if args.baseline:
            base_env = {
                **env,
                "PYTHONPATH": os.pathsep.join(filter(None, (os.path.abspath(args.baseline), env.get("PYTHONPATH")))),
            }
            timed(endpoint, base_env, ws)  # its own cold start (another package: another cache entry)
        first = timed(endpoint, env, ws)  # cold: probe, build digest, compile, the gate's cache
        times: dict[str, list[float]] = {"bare": [], "endpoint": [], "baseline": []}
        for _ in range(args.runs):
            times["bare"].append(timed(bare, env, ws))
            times["endpoint"].append(timed(endpoint, env, ws))
            if base_env is not None:
                times["baseline"].append(timed(endpoint, base_env, ws))
    b, e = statistics.median(times["bare"]), statistics.median(times["endpoint"])
    name = entry.adapter or f"{args.harness} acp"
    print(f"initialize answer, median of {args.runs} interleaved runs ({name} {found.version}):")
    print(f"  bare adapter            {b * 1000:8.1f} ms")
    if times["baseline"]:
        o = statistics.median(times["baseline"])
        print(
            f"  agent-box acp, baseline {o * 1000:8.1f} ms   ({args.baseline}: {(o - b) * 1000:+.1f} ms over the bare "
            "adapter)"
        )
    print(f"  agent-box acp           {e * 1000:8.1f} ms   (first, cold: {first * 1000:.1f} ms)")
    print(
        f"  difference              {(e - b) * 1000:+8.1f} ms   ratio {e / b:.2f}x   target: at most +150 ms "
        f"({'met' if e - b <= 0.150 else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
