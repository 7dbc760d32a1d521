"""The egress proxy against a direct loopback connection, measured in the same run; prints the ratios.

The proxy runs as the separate `python -m agentbox.egress serve` process a run would use, and is
reached on its unix socket (what the in-sandbox relay connects to). The origins run in a third
process, so the client, the proxy and the origins each have their own interpreter.

1. Latency: N small HTTP requests, each on a NEW connection (no keep-alive: the proxy forwards one
   request per connection), direct vs through the proxy, interleaved; median added per request.
   Target: under 2 ms median added.
2. Throughput: one CONNECT tunnel pushing M MB to a sink (one request's body: a tunnel carries only TLS or
   HTTP/1.x), vs the same push direct. Target >= 50 MB/s.
3. Memory: the proxy process's VmRSS with 100 concurrent open tunnels (each has carried 64 KiB both
   ways). Target < 64 MB.
4. The model route with the key swap: N model requests (a placeholder in `Authorization: Bearer`; the
   origin answers only the real key), direct with the real key vs through the model route, a new
   connection each and then all on one keep-alive connection; median added per request. Target: under
   2 ms median added. The proxy with credentials lives in the launcher's process (the real values are
   never handed to another), so here it runs in a child process of its own, as the run's would.
5. TLS termination for a bound host: N HTTPS requests, each a new connection with its own handshakes:
   through an opaque CONNECT tunnel (the client's TLS reaches the origin) vs through a tunnel the proxy
   ends with the run's CA to swap a bound secret in (two handshakes); the cost of termination printed
   beside the swap's.

Usage: python benchmarks/egress_proxy.py [--requests 2000] [--megabytes 256] [--tunnels 100] [--tls-requests 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ORIGIN_NAMES = ("origin.test", "sink.test", "echo.test")


# -- the origins (a child process) ------------------------------------------------------------------


async def _http(reader, writer):
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    await writer.drain()
    writer.close()


async def _body(reader) -> int:
    """The length of the request whose head comes next (a tunnel carries only TLS or HTTP/1.x)."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    return int(next(line.split(":", 1)[1] for line in head.split("\r\n") if line.lower().startswith("content-length:")))


async def _sink(reader, writer):
    left, total = await _body(reader), 0
    while left and (data := await reader.read(min(left, 1 << 20))):
        total, left = total + len(data), left - len(data)
    answer = str(total).encode()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(answer), answer))
    await writer.drain()
    writer.close()


async def _echo(reader, writer):
    length = await _body(reader)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % length)
    left = length
    while left and (data := await reader.read(min(left, 1 << 16))):
        writer.write(data)
        left -= len(data)
        await writer.drain()
    await reader.read()  # held open until the client leaves
    writer.close()


REAL_KEY = "bench-real-key-0123456789abcdef"
PLACEHOLDER = "sk-agentbox-benchplaceholder0123456789ABCDEFGHIJKLMNOPQR"
TOKEN_PLACEHOLDER = "agentbox-benchtoken0123456789ABCDEFGHIJKLMNOPQRSTUVWX"


async def _model(reader, writer):
    """A model endpoint that answers only the real key, on keep-alive connections."""
    try:
        while head := await reader.readuntil(b"\r\n\r\n"):
            lines = head.decode("latin-1").split("\r\n")
            fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            await reader.readexactly(int(fields.get("content-length", "0")))
            ok = fields.get("authorization") == f"Bearer {REAL_KEY}"
            writer.write(
                b"HTTP/1.1 %s\r\nContent-Length: 2\r\n\r\n%s"
                % ((b"200 OK", b"ok") if ok else (b"401 Unauthorized", b"no"))
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def _origins(tls_folder: str) -> None:
    import ssl

    handlers = (_http, _sink, _echo, _model)
    servers = [await asyncio.start_server(h, "127.0.0.1", 0, backlog=1024) for h in handlers]
    for name in ("tls.test", "open.test"):  # the bound host, and a host no secret is bound to
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(f"{tls_folder}/{name}.pem")
        servers.append(await asyncio.start_server(_model, "127.0.0.1", 0, backlog=1024, ssl=context))
    print(json.dumps([s.sockets[0].getsockname()[1] for s in servers]), flush=True)
    await asyncio.Event().wait()


def _swap_proxy(spec: dict) -> None:
    """A proxy holding credentials (in its own memory): the model route and a bound TLS host, on unix sockets."""
    from agentbox.egress import EgressPolicy, EgressProxy, Endpoint
    from agentbox.egress.policy import parse_entry
    from agentbox.egress.run_ca import Authority
    from agentbox.egress.swap import Swap, SwapTable

    bound = f"tls.test:{spec['tls_port']}"
    policy = EgressPolicy(
        model_endpoint=Endpoint(host="model.test", port=spec["model_port"]),
        allow_domains=(bound, f"open.test:{spec['open_port']}"),
        resolver_overrides={name: "127.0.0.1" for name in ("model.test", "tls.test", "open.test")},
    )
    swaps = SwapTable(
        [
            Swap.make("MODEL_KEY", PLACEHOLDER, REAL_KEY, ["Authorization: Bearer {value}"], model=True),
            Swap.make("TOKEN", TOKEN_PLACEHOLDER, REAL_KEY, ["Authorization: Bearer {value}"], hosts=[bound]),
        ]
    )
    authority = Authority((parse_entry(bound),))
    with open(spec["run_ca"], "wb") as f:
        f.write(authority.cert_pem())
    proxy = EgressProxy(
        policy,
        spec["log"],
        socket_path=spec["socket"],
        model_socket=spec["model_socket"],
        swaps=swaps,
        authority=authority,
        upstream_ca=spec["suite_ca"],
    ).start()
    print("ready", flush=True)
    try:
        sys.stdin.read()  # until the benchmark closes our stdin
    finally:
        proxy.stop()


# -- the client (this process) ----------------------------------------------------------------------


def _connect(address) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX if isinstance(address, str) else socket.AF_INET, socket.SOCK_STREAM)
    sock.connect(address)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def one_request(address, request: bytes) -> float:
    start = time.perf_counter()
    with _connect(address) as sock:
        sock.sendall(request)
        reply = _read_all(sock)
    elapsed = time.perf_counter() - start
    assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"ok"), reply[:200]
    return elapsed


def tunnel(proxy_socket: str, target: str) -> socket.socket:
    sock = _connect(proxy_socket)
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 200"), reply
    return sock


def push(sock: socket.socket, megabytes: int, host: str = "sink.test") -> float:
    """Seconds to push `megabytes` MiB as one request's body and have the sink confirm every byte."""
    block = os.urandom(1 << 20)
    start = time.perf_counter()
    sock.sendall(f"POST /sink HTTP/1.1\r\nHost: {host}\r\nContent-Length: {megabytes << 20}\r\n\r\n".encode())
    for _ in range(megabytes):
        sock.sendall(block)
    sock.shutdown(socket.SHUT_WR)
    count = int(_read_all(sock).split(b"\r\n\r\n", 1)[1])
    elapsed = time.perf_counter() - start
    sock.close()
    assert count == megabytes << 20, count
    return elapsed


def model_request(sock: socket.socket, key: str) -> bytes:
    body = b'{"model":"m","messages":[]}'
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: model.test\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def keepalive_requests(sock: socket.socket, key: str, n: int) -> list[float]:
    """n requests on one connection, each answered (Content-Length 2) before the next."""
    times = []
    request = model_request(sock, key)
    for _ in range(n):
        start = time.perf_counter()
        sock.sendall(request)
        reply = b""
        while not (b"\r\n\r\n" in reply and len(reply.split(b"\r\n\r\n", 1)[1]) >= 2):
            reply += sock.recv(65536)
        times.append(time.perf_counter() - start)
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
    return times


def https_request(make_sock, target: str, trust: str, key: str) -> float:
    """One HTTPS request to `target` (host:port) on a new connection (its own handshake), verified against `trust`."""
    import ssl

    host, server_name = target, target.split(":")[0]
    context = ssl.create_default_context(cafile=trust)
    start = time.perf_counter()
    with context.wrap_socket(make_sock(), server_hostname=server_name) as tls:
        tls.sendall(model_request(tls, key).replace(b"Host: model.test", f"Host: {host}".encode()))
        reply = b""
        while not (b"\r\n\r\n" in reply and len(reply.split(b"\r\n\r\n", 1)[1]) >= 2):
            reply += tls.recv(65536)
    elapsed = time.perf_counter() - start
    assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
    return elapsed


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--megabytes", type=int, default=256)
    ap.add_argument("--tunnels", type=int, default=100)
    ap.add_argument("--tls-requests", type=int, default=300)
    ap.add_argument("--origins", help=argparse.SUPPRESS)
    ap.add_argument("--swap-proxy", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.origins:
        asyncio.run(_origins(args.origins))
        return 0
    if args.swap_proxy:
        _swap_proxy(json.loads(args.swap_proxy))
        return 0

    from agentbox.egress import EgressPolicy, ProxyProcess
    from agentbox.egress.policy import parse_entry
    from agentbox.egress.run_ca import Authority

    tmp = tempfile.mkdtemp(prefix="egress-bench-")
    suite = Authority((parse_entry("tls.test"), parse_entry("open.test")), name="benchmark origin CA")
    for name in ("tls.test", "open.test"):
        with open(f"{tmp}/{name}.pem", "wb") as f:
            f.write(b"".join(suite.leaf(name)))
    with open(f"{tmp}/suite-ca.pem", "wb") as f:
        f.write(suite.cert_pem())
    origins = subprocess.Popen([sys.executable, __file__, "--origins", tmp], stdout=subprocess.PIPE, text=True)
    http_port, sink_port, echo_port, model_port, tls_port, open_port = json.loads(origins.stdout.readline())
    allow = (f"origin.test:{http_port}", f"sink.test:{sink_port}", f"echo.test:{echo_port}")
    policy = EgressPolicy(allow_domains=allow, resolver_overrides={name: "127.0.0.1" for name in ORIGIN_NAMES})
    proxy = ProxyProcess(policy, f"{tmp}/policy.json", f"{tmp}/decisions.jsonl", socket_path=f"{tmp}/egress.sock")
    spec = {
        "model_port": model_port,
        "tls_port": tls_port,
        "open_port": open_port,
        "log": f"{tmp}/swap.jsonl",
        "socket": f"{tmp}/s.sock",
        "model_socket": f"{tmp}/m.sock",
        "run_ca": f"{tmp}/run-ca.pem",
        "suite_ca": f"{tmp}/suite-ca.pem",
    }
    swapper = subprocess.Popen(
        [sys.executable, __file__, "--swap-proxy", json.dumps(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert swapper.stdout.readline().strip() == "ready", "the swapping proxy did not start"
        proxy.start()
        sock_path = proxy.socket_path
        direct_req = f"GET / HTTP/1.1\r\nHost: origin.test:{http_port}\r\n\r\n".encode()
        proxied_req = f"GET http://origin.test:{http_port}/ HTTP/1.1\r\nHost: origin.test:{http_port}\r\n\r\n".encode()

        # 1. latency, interleaved so drift on a shared machine hits both sides alike
        for _ in range(50):
            one_request(("127.0.0.1", http_port), direct_req)
            one_request(sock_path, proxied_req)
        direct, proxied = [], []
        for _ in range(args.requests):
            direct.append(one_request(("127.0.0.1", http_port), direct_req))
            proxied.append(one_request(sock_path, proxied_req))
        d_med, p_med = statistics.median(direct) * 1000, statistics.median(proxied) * 1000
        added = p_med - d_med
        p90 = statistics.quantiles(proxied, n=10)[-1] * 1000

        # 2. throughput of one tunnel
        push(socket.create_connection(("127.0.0.1", sink_port)), 16)  # warm-up
        base_s = push(socket.create_connection(("127.0.0.1", sink_port)), args.megabytes)
        tunnel_s = push(tunnel(sock_path, f"sink.test:{sink_port}"), args.megabytes, f"sink.test:{sink_port}")
        base_mbs, tunnel_mbs = args.megabytes / base_s, args.megabytes / tunnel_s

        # 3. memory with N open tunnels
        idle_kib = rss_kib(proxy.pid)
        payload = os.urandom(64 * 1024)
        open_tunnels = []
        for _ in range(args.tunnels):
            sock = tunnel(sock_path, f"echo.test:{echo_port}")
            sock.sendall(
                f"POST /echo HTTP/1.1\r\nHost: echo.test:{echo_port}\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            got = -len(f"HTTP/1.1 200 OK\r\nContent-Length: {len(payload)}\r\n\r\n")  # the answer's head first
            while got < len(payload):
                got += len(sock.recv(65536))
            open_tunnels.append(sock)
        busy_kib, peak_kib = rss_kib(proxy.pid), rss_kib(proxy.pid, "VmHWM")
        for sock in open_tunnels:
            sock.close()

        # 4. the model route with the key swap: a new connection each, then one keep-alive connection
        def model_once(address, key):
            start = time.perf_counter()
            with _connect(address) as sock:
                keepalive_requests(sock, key, 1)
            return time.perf_counter() - start

        for _ in range(50):
            model_once(("127.0.0.1", model_port), REAL_KEY)
            model_once(spec["model_socket"], PLACEHOLDER)
        m_direct, m_route = [], []
        for _ in range(args.requests):
            m_direct.append(model_once(("127.0.0.1", model_port), REAL_KEY))
            m_route.append(model_once(spec["model_socket"], PLACEHOLDER))
        with _connect(("127.0.0.1", model_port)) as d_sock, _connect(spec["model_socket"]) as r_sock:
            keepalive_requests(d_sock, REAL_KEY, 50)
            keepalive_requests(r_sock, PLACEHOLDER, 50)
            k_direct, k_route = [], []
            for _ in range(args.requests // 100 or 1):
                k_direct += keepalive_requests(d_sock, REAL_KEY, 100)
                k_route += keepalive_requests(r_sock, PLACEHOLDER, 100)
        md, mr = statistics.median(m_direct) * 1000, statistics.median(m_route) * 1000
        kd, kr = statistics.median(k_direct) * 1000, statistics.median(k_route) * 1000

        # 5. TLS: an opaque tunnel vs one the proxy ends to swap a bound secret in
        def via(target):
            return lambda: tunnel(spec["socket"], target)

        for _ in range(20):
            https_request(via(f"open.test:{open_port}"), f"open.test:{open_port}", spec["suite_ca"], REAL_KEY)
            https_request(via(f"tls.test:{tls_port}"), f"tls.test:{tls_port}", spec["run_ca"], TOKEN_PLACEHOLDER)
        t_open, t_ended = [], []
        for _ in range(args.tls_requests):
            t_open.append(
                https_request(via(f"open.test:{open_port}"), f"open.test:{open_port}", spec["suite_ca"], REAL_KEY)
            )
            t_ended.append(
                https_request(via(f"tls.test:{tls_port}"), f"tls.test:{tls_port}", spec["run_ca"], TOKEN_PLACEHOLDER)
            )
        to, te = statistics.median(t_open) * 1000, statistics.median(t_ended) * 1000
    finally:
        proxy.stop()
        if swapper.poll() is None:
            swapper.stdin.close()
            swapper.wait(timeout=30)
        origins.kill()
        origins.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"latency ({args.requests} requests, a new connection each, proxy on its unix socket)")
    print(f"  direct   median {d_med:7.3f} ms")
    print(f"  proxied  median {p_med:7.3f} ms   p90 {p90:7.3f} ms   x direct {p_med / d_med:5.2f}")
    print(f"  added    median {added:7.3f} ms   target < 2 ms: {'met' if added < 2 else 'NOT met'}")
    print(f"throughput (one CONNECT tunnel, {args.megabytes} MiB pushed and confirmed)")
    print(f"  direct   {base_mbs:8.1f} MiB/s")
    print(
        f"  tunnel   {tunnel_mbs:8.1f} MiB/s   x direct {tunnel_mbs / base_mbs:5.2f}"
        f"   target >= 50: {'met' if tunnel_mbs >= 50 else 'NOT met'}"
    )
    print(f"memory (proxy process, python -m agentbox.egress serve, pid {proxy.pid})")
    print(f"  idle                  VmRSS {idle_kib / 1024:6.1f} MiB")
    print(
        f"  {args.tunnels} open tunnels      VmRSS {busy_kib / 1024:6.1f} MiB"
        f"   (peak VmHWM {peak_kib / 1024:.1f} MiB)   target < 64: {'met' if busy_kib < 64 * 1024 else 'NOT met'}"
    )
    print(
        f"model route with the key swap ({args.requests} requests; direct carries the real key, the route swaps "
        "a placeholder for it)"
    )
    print(
        f"  new connection each   direct median {md:7.3f} ms   route median {mr:7.3f} ms   x direct {mr / md:5.2f}"
        f"   added {mr - md:6.3f} ms   target < 2 ms: {'met' if mr - md < 2 else 'NOT met'}"
    )
    print(
        f"  one keep-alive conn.  direct median {kd:7.3f} ms   route median {kr:7.3f} ms   x direct {kr / kd:5.2f}"
        f"   added {kr - kd:6.3f} ms   target < 2 ms: {'met' if kr - kd < 2 else 'NOT met'}"
    )
    print(f"TLS termination for a bound host ({args.tls_requests} HTTPS requests, a new connection and handshake each)")
    print(f"  opaque tunnel (client TLS to the origin)          median {to:7.3f} ms")
    print(
        f"  ended at the proxy, secret swapped, TLS re-made   median {te:7.3f} ms   x opaque {te / to:5.2f}"
        f"   cost of termination {te - to:6.3f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
