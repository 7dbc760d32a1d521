"""`python -m agentbox.egress serve` as its own process: ready line, end-to-end use, fail-closed exits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from egress_servers import exchange, read_log

from agentbox.egress import ProxyProcess, ProxyStartError


def serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentbox.egress", "serve", *args], capture_output=True, text=True, timeout=30
    )


def test_the_serve_process_proxies_end_to_end(world, short_dir):
    proc = ProxyProcess(
        world.policy,
        f"{short_dir}/policy.json",
        f"{short_dir}/log.jsonl",
        socket_path=f"{short_dir}/egress.sock",
        tcp_port=0,
    )
    with proc:
        assert proc.ready["pid"] == proc.pid and proc.ready["socket"] == f"{short_dir}/egress.sock"
        url = f"http://allowed.test:{world.allowed.port}/p"
        request = f"GET {url} HTTP/1.1\r\nHost: allowed.test:{world.allowed.port}\r\n\r\n".encode()
        assert exchange(proc.socket_path, request).startswith(b"HTTP/1.1 200")
        denied = f"CONNECT denied.test:{world.denied.port} HTTP/1.1\r\n\r\n".encode()
        assert exchange(tuple(proc.ready["tcp"]), denied).startswith(b"HTTP/1.1 403")
    assert proc.proc.returncode == 0 and not os.path.exists(f"{short_dir}/egress.sock")
    assert [(line["allowed"], line["client"][:4]) for line in read_log(f"{short_dir}/log.jsonl")] == [
        (True, "unix"),
        (False, "127."),
    ]
    assert world.allowed.connections == 1 and world.denied.connections == 0


def test_the_serve_process_serves_a_route_to_the_model(world, short_dir):
    from agentbox.egress import Endpoint

    route = f"{short_dir}/model.sock"
    proc = ProxyProcess(
        world.policy,
        f"{short_dir}/policy.json",
        f"{short_dir}/log.jsonl",
        routes={route: Endpoint(host="model.test", port=world.model.port)},
    )
    with proc:
        assert proc.ready["routes"] == [route]
        assert b"model host=m" in exchange(route, b"GET / HTTP/1.1\r\nHost: m\r\n\r\n")
    assert not os.path.exists(route)
    assert [(line["method"], line["reason"]) for line in read_log(f"{short_dir}/log.jsonl")] == [
        ("ROUTE", "model_endpoint")
    ]


def test_the_ready_file_and_line_agree(world, short_dir):
    with open(f"{short_dir}/policy.json", "w") as f:
        f.write(world.policy.model_dump_json())
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentbox.egress",
            "serve",
            "--policy",
            f"{short_dir}/policy.json",
            "--log",
            f"{short_dir}/log.jsonl",
            "--socket",
            f"{short_dir}/s.sock",
            "--ready",
            f"{short_dir}/ready.json",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening ")
        with open(f"{short_dir}/ready.json") as f:
            assert json.load(f) == json.loads(line.split(" ", 1)[1])
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_serve_exits_4_when_it_cannot_listen_and_2_for_a_bad_policy(world, short_dir):
    with open(f"{short_dir}/policy.json", "w") as f:
        f.write(world.policy.model_dump_json())
    open(f"{short_dir}/taken.sock", "w").close()
    policy = ("--policy", f"{short_dir}/policy.json", "--log", f"{short_dir}/l")
    out = serve(*policy, "--socket", f"{short_dir}/taken.sock")
    assert out.returncode == 4 and "already exists" in out.stderr and out.stdout == ""
    out = serve(*policy, "--socket", f"{short_dir}/no/s.sock")
    assert out.returncode == 4 and "cannot listen" in out.stderr
    with open(f"{short_dir}/bad.json", "w") as f:
        json.dump({"allow_domains": ["*.10.0.0.1"]}, f)
    out = serve("--policy", f"{short_dir}/bad.json", "--log", f"{short_dir}/l", "--socket", f"{short_dir}/s.sock")
    assert out.returncode == 2 and "wildcard" in out.stderr and not os.path.exists(f"{short_dir}/s.sock")


def test_a_process_that_cannot_start_raises_with_its_reason(world, short_dir):
    open(f"{short_dir}/taken.sock", "w").close()
    proc = ProxyProcess(
        world.policy, f"{short_dir}/policy.json", f"{short_dir}/log.jsonl", socket_path=f"{short_dir}/taken.sock"
    )
    with pytest.raises(ProxyStartError, match="exit 4.*already exists"):
        proc.start()
    assert os.path.exists(f"{short_dir}/taken.sock")  # somebody else's path is never removed


def test_watch_reports_a_proxy_that_dies(world, short_dir):
    died = threading.Event()
    codes = []
    proc = ProxyProcess(
        world.policy, f"{short_dir}/policy.json", f"{short_dir}/log.jsonl", socket_path=f"{short_dir}/egress.sock"
    ).start()
    proc.watch(lambda code: (codes.append(code), died.set()))
    os.kill(proc.pid, signal.SIGKILL)
    assert died.wait(10) and codes == [-signal.SIGKILL]
    proc.stop()
    assert not os.path.exists(f"{short_dir}/egress.sock")


def test_a_stopped_proxy_is_not_reported_as_dead(world, short_dir):
    codes = []
    proc = ProxyProcess(
        world.policy, f"{short_dir}/policy.json", f"{short_dir}/log.jsonl", socket_path=f"{short_dir}/egress.sock"
    ).start()
    watcher = proc.watch(codes.append)
    proc.stop()
    watcher.join(10)
    assert codes == []
