"""The sandbox side, as a run wires it: one inner relay maps loopback ports inside the network namespace to
the proxy's socket and its model route; the proxy variables make real clients use it; nothing else
leaves, and a dead relay or proxy fails closed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest
from egress_servers import read_log

from agentbox.egress import EgressProxy, Endpoint
from agentbox.egress.inside import MODEL_SOCKET, SOCKET_NAME, proxy_env
from agentbox.sandbox import inner_relay
from agentbox.sandbox.relay import install, relay_argv
from agentbox.sandbox.session import python_for_sandbox

INNER = inner_relay.__file__
PROXY_PORT = 3128


def _bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--unshare-pid", "true"]
    return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0


needs_bwrap = pytest.mark.skipif(not _bwrap_works(), reason="bubblewrap cannot unshare the network here")


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]


def sandboxed(run_dir: str, argv: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    """argv inside bwrap as session.py builds it for a run without network: the relay folder is the only
    bridge to the host."""
    bwrap = [
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
        "--dir",
        "/tmp/agentbox",
        "--bind",
        f"{run_dir}/relay",
        "/tmp/agentbox/relay",
        "--unshare-net",
        "--tmpfs",
        "/run",
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
        "--",
    ]
    return subprocess.run(
        bwrap + argv, env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def run_dir(short_dir):
    os.makedirs(f"{short_dir}/relay")
    return short_dir


def test_the_inner_relay_exposes_the_proxy_on_loopback(world, run_dir):
    with EgressProxy(world.policy, f"{run_dir}/egress.jsonl", socket_path=f"{run_dir}/relay/{SOCKET_NAME}"):
        port = free_port()
        cmd = ["curl", "-sS", f"http://allowed.test:{world.allowed.port}/relayed"]
        out = subprocess.run(
            [python_for_sandbox(), "-I", INNER, f"{port}={run_dir}/relay/{SOCKET_NAME}", "--", *cmd],
            env={"PATH": "/usr/bin:/bin", **proxy_env(port)},
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert out.returncode == 0 and "line=GET /relayed HTTP/1.1" in out.stdout
    assert read_log(f"{run_dir}/egress.jsonl")[0]["client"].startswith("unix:pid=")


def test_proxy_env_sets_both_spellings_and_exempts_only_loopback():
    env = proxy_env(3128)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        assert env[name] == env[name.lower()] == "http://127.0.0.1:3128"
    assert env["NO_PROXY"] == env["no_proxy"] == "127.0.0.1,localhost,::1"


@needs_bwrap
def test_in_the_namespace_the_proxy_is_the_only_way_out(world, run_dir):
    model_port = world.model.port
    script = "; ".join(
        [
            f"echo model=$(curl -sS http://127.0.0.1:{model_port}/v1)",  # NO_PROXY: straight to the model relay
            f"echo allowed=$(curl -sS http://allowed.test:{world.allowed.port}/a)",
            f"echo tunnel=$(curl -sS -p http://allowed.test:{world.allowed.port}/t)",
            f"echo denied=$(curl -sS -o /dev/null -w '%{{http_code}}' http://denied.test:{world.denied.port}/)",
            f"curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{world.allowed.port}/; echo direct=$?",
            "curl -sS --noproxy '*' --max-time 5 http://192.0.2.1/; echo route=$?",  # TEST-NET-1: any outside address
        ]
    )
    route = {f"{run_dir}/relay/{MODEL_SOCKET}": Endpoint(host="model.test", port=model_port)}
    with EgressProxy(
        world.policy, f"{run_dir}/egress.jsonl", socket_path=f"{run_dir}/relay/{SOCKET_NAME}", routes=route
    ):
        install(run_dir)
        argv = relay_argv(python_for_sandbox(), [(model_port, MODEL_SOCKET), (PROXY_PORT, SOCKET_NAME)])
        out = sandboxed(run_dir, argv + ["sh", "-c", script], proxy_env(PROXY_PORT))
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert lines["model"].startswith("model host=127.0.0.1"), out
    assert lines["allowed"].startswith("allowed host=allowed.test") and "line=GET /a " in lines["allowed"]
    assert "line=GET /t " in lines["tunnel"]
    assert lines["denied"] == "403"
    assert lines["direct"] == "7" and lines["route"] == "7"  # couldn't connect: the namespace has no route
    assert world.allowed.connections == 2 and world.denied.connections == 0
    decisions = read_log(f"{run_dir}/egress.jsonl")
    # a line is written when its connection ends, so a tunnel's may come after the next request's
    assert sorted((d["method"], d["allowed"]) for d in decisions) == [
        ("CONNECT", True),
        ("GET", False),
        ("GET", True),
        ("ROUTE", True),
    ]


@needs_bwrap
def test_a_dead_proxy_leaves_no_way_out(world, run_dir):
    """The relay is up but nothing listens behind its socket: every request fails, nothing reaches out."""
    install(run_dir)
    script = f"curl -sS --max-time 10 http://allowed.test:{world.allowed.port}/; echo status=$?"
    argv = relay_argv(python_for_sandbox(), [(PROXY_PORT, SOCKET_NAME)])
    out = sandboxed(run_dir, argv + ["sh", "-c", script], proxy_env(PROXY_PORT))
    assert "status=0" not in out.stdout and "status=" in out.stdout
    assert world.allowed.connections == 0


@needs_bwrap
def test_a_dead_relay_ends_the_sandboxed_run(world, run_dir):
    """The relay is the namespace's first process: when it dies, bwrap's init goes and takes the run along."""
    with EgressProxy(world.policy, f"{run_dir}/egress.jsonl", socket_path=f"{run_dir}/relay/{SOCKET_NAME}"):
        install(run_dir)
        started = time.monotonic()
        suicide = ["sh", "-c", "kill -9 $PPID; sleep 30; echo survived"]  # $PPID: the relay
        out = sandboxed(
            run_dir, relay_argv(python_for_sandbox(), [(PROXY_PORT, SOCKET_NAME)]) + suicide, proxy_env(PROXY_PORT)
        )
    assert time.monotonic() - started < 20 and "survived" not in out.stdout
    assert out.returncode != 0
