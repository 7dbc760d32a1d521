"""The egress proxy against a direct loopback connection, measured in the same run; prints the ratios.

The proxy runs as the separate `python -m agentbox.egress serve` process a run would use, and is
reached on its unix socket (what the in-sandbox relay connects to). The origins run in a third
process, so the client, the proxy and the origins each have their own interpreter.

1. Latency: N small HTTP requests, each on a NEW connection (no keep-alive: the proxy forwards one
   request per connection), direct vs through the proxy, interleaved; median added per request.
   Target: under 2 ms median added.
2. Throughput: one CONNECT tunnel pushing M MB to a sink, vs the same push direct. Target >= 50 MB/s.
3. Memory: the proxy process's VmRSS with 100 concurrent open tunnels (each has carried 64 KiB both
   ways). Target < 64 MB.

Usage: python benchmarks/egress_proxy.py [--requests 2000] [--megabytes 256] [--tunnels 100]
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


async def _sink(reader, writer):
    total = 0
    while data := await reader.read(1 << 20):
        total += len(data)
    writer.write(str(total).encode())
    await writer.drain()
    writer.close()


async def _echo(reader, writer):
    while data := await reader.read(1 << 16):
        writer.write(data)
        await writer.drain()
    writer.close()


async def _origins() -> None:
    servers = [await asyncio.start_server(h, "127.0.0.1", 0, backlog=1024) for h in (_http, _sink, _echo)]
    print(json.dumps([s.sockets[0].getsockname()[1] for s in servers]), flush=True)
    await asyncio.Event().wait()


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


def push(sock: socket.socket, megabytes: int) -> float:
    """Seconds to push `megabytes` MiB and have the sink confirm every byte."""
    block = os.urandom(1 << 20)
    start = time.perf_counter()
    for _ in range(megabytes):
        sock.sendall(block)
    sock.shutdown(socket.SHUT_WR)
    count = int(_read_all(sock))
    elapsed = time.perf_counter() - start
    sock.close()
    assert count == megabytes << 20, count
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
    ap.add_argument("--origins", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.origins:
        asyncio.run(_origins())
        return 0

    from agentbox.egress import EgressPolicy, ProxyProcess

    origins = subprocess.Popen([sys.executable, __file__, "--origins"], stdout=subprocess.PIPE, text=True)
    http_port, sink_port, echo_port = json.loads(origins.stdout.readline())
    allow = (f"origin.test:{http_port}", f"sink.test:{sink_port}", f"echo.test:{echo_port}")
    policy = EgressPolicy(allow_domains=allow, resolver_overrides={name: "127.0.0.1" for name in ORIGIN_NAMES})
    tmp = tempfile.mkdtemp(prefix="egress-bench-")
    proxy = ProxyProcess(policy, f"{tmp}/policy.json", f"{tmp}/decisions.jsonl", socket_path=f"{tmp}/egress.sock")
    try:
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
        tunnel_s = push(tunnel(sock_path, f"sink.test:{sink_port}"), args.megabytes)
        base_mbs, tunnel_mbs = args.megabytes / base_s, args.megabytes / tunnel_s

        # 3. memory with N open tunnels
        idle_kib = rss_kib(proxy.pid)
        payload = os.urandom(64 * 1024)
        open_tunnels = []
        for _ in range(args.tunnels):
            sock = tunnel(sock_path, f"echo.test:{echo_port}")
            sock.sendall(payload)
            got = 0
            while got < len(payload):
                got += len(sock.recv(65536))
            open_tunnels.append(sock)
        busy_kib, peak_kib = rss_kib(proxy.pid), rss_kib(proxy.pid, "VmHWM")
        for sock in open_tunnels:
            sock.close()
    finally:
        proxy.stop()
        origins.kill()
        origins.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"latency ({args.requests} requests, a new connection each, proxy on its unix socket)")
    print(f"  direct   median {d_med:7.3f} ms")
    print(f"  proxied  median {p_med:7.3f} ms   p90 {p90:7.3f} ms   x direct {p_med / d_med:5.2f}")
    print(f"  added    median {added:7.3f} ms   target < 2 ms: {'met' if added < 2 else 'NOT met'}")
    print(f"throughput (one CONNECT tunnel, {args.megabytes} MiB pushed and confirmed)")
    print(f"  direct   {base_mbs:8.1f} MiB/s")
    print(f"  tunnel   {tunnel_mbs:8.1f} MiB/s   x direct {tunnel_mbs / base_mbs:5.2f}"
          f"   target >= 50: {'met' if tunnel_mbs >= 50 else 'NOT met'}")
    print(f"memory (proxy process, python -m agentbox.egress serve, pid {proxy.pid})")
    print(f"  idle                  VmRSS {idle_kib / 1024:6.1f} MiB")
    print(f"  {args.tunnels} open tunnels      VmRSS {busy_kib / 1024:6.1f} MiB"
          f"   (peak VmHWM {peak_kib / 1024:.1f} MiB)   target < 64: {'met' if busy_kib < 64 * 1024 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
