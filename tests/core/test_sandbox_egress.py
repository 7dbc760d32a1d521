"""The egress proxy around `agent-box sandbox run`, against the real bubblewrap: listeners count what reaches
them, the kept decision log says why, and every way the proxy or the relay can fail ends the run."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from agentbox.testing.targets import LOOPBACK, Listener

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or shutil.which("curl") is None, reason="bubblewrap or curl is not installed"
)


@pytest.fixture
def listener():
    made = Listener("tcp")  # on LOOPBACK, not 127.0.0.1: the proxy variables exempt that one
    yield made
    made.close()


def profile(tmp_path, network: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: p\nharness: codex\npermission_intent:\n  command_network: {network}\n")
    return str(path)


def sandbox_run(env, prof, ws, *args, timeout=60):
    cut = args.index("--")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "agentbox.cli",
            "sandbox",
            "run",
            prof,
            "--cwd",
            str(ws),
            *args[:cut],
            "--",
            *args[cut + 1 :],
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def restricted(port: int) -> str:
    return f"{{access: restricted, allow_domains: ['allowed.test:{port}']}}"


def curl(url: str) -> str:
    return f"curl -s -m 5 -o /dev/null -w '%{{http_code}}\\n' {url}"


def test_restricted_reaches_an_allowed_name_through_the_proxy_and_refuses_the_rest(tmp_path, env, ws, listener):
    log = tmp_path / "kept" / "egress.jsonl"
    script = "; ".join(
        [
            curl(f"http://allowed.test:{listener.address}/a"),
            curl(f"http://denied.test:{listener.address}/"),
            f"curl -s -m 5 --noproxy '*' http://{LOOPBACK}:{listener.address}/; echo direct=$?",
        ]
    )
    done = sandbox_run(
        env,
        profile(tmp_path, restricted(listener.address)),
        ws,
        "--egress-resolve",
        f"allowed.test={LOOPBACK}",
        "--egress-resolve",
        f"denied.test={LOOPBACK}",
        "--egress-log",
        str(log),
        "--",
        "sh",
        "-c",
        script,
    )
    assert done.stdout.split() == ["204", "403", "direct=7"], done.stderr
    assert listener.hits() == 1  # the allowed request only: the denied name and the direct connect never arrived
    decisions = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(d["host"], d["allowed"], d["reason"]) for d in decisions] == [
        ("allowed.test", True, f"allow_domains:allowed.test:{listener.address}"),
        ("denied.test", False, "not_allowed"),
    ]


def test_the_cached_run_takes_the_same_egress_options(tmp_path, env, ws, listener):
    prof = profile(tmp_path, restricted(listener.address))
    for _ in range(2):  # the second run comes from the plan cache (the hot path parses the options itself)
        done = sandbox_run(
            env,
            prof,
            ws,
            "--egress-resolve",
            f"allowed.test={LOOPBACK}",
            "--",
            "sh",
            "-c",
            curl(f"http://allowed.test:{listener.address}/"),
        )
        assert done.stdout.strip() == "204", done.stderr
    assert listener.hits() == 2


def test_network_none_leaves_a_host_unix_socket_unreachable(tmp_path, env, ws):
    path = str(tmp_path / "host.sock")
    host = Listener("unix", path)
    try:
        probe = f"import socket; socket.socket(socket.AF_UNIX).connect({path!r})"
        done = sandbox_run(env, profile(tmp_path, "{access: none}"), ws, "--", "python3", "-c", probe)
        assert done.returncode != 0 and "PermissionError" in done.stderr
        assert host.hits() == 0
    finally:
        host.close()


def test_a_bad_resolver_override_is_refused_with_exit_2(tmp_path, env, ws):
    done = sandbox_run(
        env, profile(tmp_path, restricted(80)), ws, "--egress-resolve", "allowed.test=nowhere", "--", "true"
    )
    assert done.returncode == 2 and "--egress-resolve allowed.test=nowhere" in done.stderr


def test_a_proxy_that_cannot_start_refuses_the_run_before_the_command(tmp_path, env, ws):
    """A unix socket path longer than the kernel allows: the proxy cannot listen, so nothing runs (exit 4)."""
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    marker = ws / "ran"
    done = sandbox_run(
        {**env, "AGENTBOX_RUN_ROOT": str(deep)}, profile(tmp_path, restricted(80)), ws, "--", "touch", str(marker)
    )
    assert done.returncode == 4 and done.stderr.startswith("agent-box: egress proxy cannot listen")
    assert not marker.exists()


def test_a_dead_relay_ends_the_run(tmp_path, env, ws):
    started = time.monotonic()
    done = sandbox_run(
        env, profile(tmp_path, restricted(80)), ws, "--", "sh", "-c", "kill -9 $PPID; sleep 30; echo survived"
    )  # $PPID: the relay
    assert time.monotonic() - started < 20
    assert "survived" not in done.stdout and done.returncode != 0


def prepared(tmp_path, ws, monkeypatch, network: str) -> tuple[dict, str, str]:
    """(entry, run folder, run id) of a sandboxed run of the profile, materialized, with nothing started."""
    from agentbox.compile.compiler import compile_plan
    from agentbox.core.profile import load_profile
    from agentbox.sandbox.session import entry_from_plan, materialize

    monkeypatch.setenv("HOME", str(tmp_path))
    plan = compile_plan(load_profile(profile(tmp_path, network)), str(ws), home=str(tmp_path))
    entry = entry_from_plan(plan, [])
    run_dir, run_id = str(tmp_path / "run"), "egress-" + os.urandom(4).hex()
    materialize(entry, run_dir)
    return entry, run_dir, run_id


def test_a_proxy_that_dies_during_the_run_ends_it(tmp_path, ws, monkeypatch):
    from agentbox.sandbox.session import cleanup, environment
    from agentbox.sandbox.startup import Started

    entry, run_dir, run_id = prepared(tmp_path, ws, monkeypatch, restricted(80))
    started = Started(entry, run_dir, run_id)
    try:
        proc = subprocess.Popen(
            [*started.argv, "sleep", "30"], env=environment(entry, run_id), pass_fds=started.pass_fds
        )
        time.sleep(0.5)
        started.proxy._loop.call_soon_threadsafe(started.proxy._loop.stop)  # its loop ends as a crash would end it
        proc.wait(timeout=10)
    finally:
        note = cleanup(run_id, run_dir, started)
    assert proc.returncode != 0
    assert "the egress proxy stopped during the run" in note


def test_a_proxy_served_later_answers_what_the_sandbox_dialled_before_it_served(tmp_path, ws, listener, monkeypatch):
    """`serve_later` (agent-box acp): the sockets are bound before the sandbox starts, the proxy serves them while
    it runs; a request made in between waits for the policy, then meets it like any other."""
    from agentbox.sandbox.session import cleanup, environment
    from agentbox.sandbox.startup import Started

    entry, run_dir, run_id = prepared(tmp_path, ws, monkeypatch, restricted(listener.address))
    started = Started(
        entry, run_dir, run_id, resolve={"allowed.test": LOOPBACK, "denied.test": LOOPBACK}, serve_later=True
    )
    try:
        assert started.proxy is None and os.path.exists(os.path.join(run_dir, "relay", "egress.sock"))
        script = "; ".join(
            [curl(f"http://allowed.test:{listener.address}/"), curl(f"http://denied.test:{listener.address}/")]
        )
        proc = subprocess.Popen(
            [*started.argv, "sh", "-c", script],
            env=environment(entry, run_id),
            pass_fds=started.pass_fds,
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)  # the command has dialled by now; nothing serves yet (the proxy opens its log as it starts)
        assert not os.path.exists(os.path.join(run_dir, "egress.jsonl")) and proc.poll() is None
        started.serve()
        out, _ = proc.communicate(timeout=30)
    finally:
        cleanup(run_id, run_dir, started)
    assert out.split() == ["204", "403"]
    assert listener.hits() == 1


def test_a_proxy_served_later_that_cannot_start_closes_its_sockets(tmp_path, ws, monkeypatch):
    from agentbox.egress.listen import ProxyStartError
    from agentbox.sandbox.session import cleanup
    from agentbox.sandbox.startup import Started

    entry, run_dir, run_id = prepared(tmp_path, ws, monkeypatch, restricted(80))
    started = Started(entry, run_dir, run_id, serve_later=True)
    os.makedirs(os.path.join(run_dir, "egress.jsonl"))  # the decision log cannot be opened: the proxy cannot start
    try:
        with pytest.raises(ProxyStartError, match="decision log"):
            started.serve()
        assert os.listdir(os.path.join(run_dir, "relay")) == [
            n for n in os.listdir(os.path.join(run_dir, "relay")) if not n.endswith(".sock")
        ]
    finally:
        cleanup(run_id, run_dir, started)


class Echo:
    """A TCP server on the host's 127.0.0.1 that answers each connection with what it first received."""

    def __init__(self):
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(100)
                self.seen.append(data)
                conn.sendall(b"echo:" + data)

    def close(self):
        self.sock.close()


CLIENT = (
    "import socket, sys\n"
    "for host, port in [(h, int(p)) for h, p in (a.split('=') for a in sys.argv[1:])]:\n"
    "    try:\n"
    "        s = socket.create_connection((host, port), timeout=5); s.sendall(b'hi-' + host.encode())\n"
    "        print(s.recv(100).decode())\n"
    "    except OSError as e:\n"
    "        print('refused', type(e).__name__)\n"
)


def test_restricted_reaches_an_allowed_loopback_port_of_the_host_and_no_other(tmp_path, env, ws):
    allowed, other = Echo(), Echo()
    try:
        network = f"{{access: restricted, allow_domains: ['localhost:{allowed.port}']}}"
        done = sandbox_run(
            env,
            profile(tmp_path, network),
            ws,
            "--",
            sys.executable,
            "-c",
            CLIENT,
            f"127.0.0.1={allowed.port}",
            f"localhost={allowed.port}",
            f"127.0.0.1={other.port}",
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split("\n")[:2] == ["echo:hi-127.0.0.1", "echo:hi-localhost"]
        assert done.stdout.split("\n")[2].startswith("refused")
        assert allowed.seen == [b"hi-127.0.0.1", b"hi-localhost"] and other.seen == []
    finally:
        allowed.close()
        other.close()


def test_an_allowed_loopback_port_below_1024_is_refused_before_the_run_naming_it(tmp_path, env, ws):
    done = sandbox_run(
        env, profile(tmp_path, "{access: restricted, allow_domains: ['localhost:80']}"), ws, "--", "true"
    )
    assert done.returncode == 4
    assert "allowed (allow_domains) loopback port 80 is below 1024" in done.stderr
