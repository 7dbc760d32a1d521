"""The proxy on real sockets: loopback origins count what reaches them, the decision log says why.

World (conftest): model.test is the model endpoint, allowed.test and echo.test are allow_domains
entries with their listeners' ports, *.wild.test another; every test name resolves (by override) to
127.0.0.1, so a wrong "allowed" would really reach the listener and show in its counts.
"""

from __future__ import annotations

import os
import socket
import time

import pytest
from egress_servers import client_hello, connect_tunnel, exchange, read_log, wait_log

from agentbox.egress import EgressPolicy, EgressProxy, Endpoint, Limits, ProxyStartError


def get(proxy, url: str, *headers: str, host: str | None = None) -> bytes:
    authority = host if host is not None else url.split("/")[2]
    lines = [f"GET {url} HTTP/1.1", f"Host: {authority}", *headers]
    return exchange(proxy.tcp_address, ("\r\n".join(lines) + "\r\n\r\n").encode())


def last(proxy: EgressProxy, n: int = 1) -> list[dict]:
    return wait_log(proxy.log_path, n)[-n:]


def through_tunnel(proxy: EgressProxy, target: str, data: bytes, shut: bool = False) -> bytes:
    """CONNECT, send `data` (then shut the sending side if asked) and read until the proxy closes."""
    sock, reply = connect_tunnel(proxy.tcp_address, target)
    with sock:
        assert reply.startswith(b"HTTP/1.1 200")
        sock.sendall(data)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def test_an_allowed_name_reaches_its_listener_through_the_override(world, proxy):
    reply = get(proxy, f"http://allowed.test:{world.allowed.port}/x?y=1")
    assert reply.startswith(b"HTTP/1.1 200 OK")
    assert f"allowed host=allowed.test:{world.allowed.port} line=GET /x?y=1 HTTP/1.1".encode() in reply
    assert world.allowed.connections == 1
    [line] = last(proxy)
    assert line["allowed"] and line["reason"] == f"allow_domains:allowed.test:{world.allowed.port}"
    assert (line["method"], line["host"], line["port"], line["address"]) == (
        "GET",
        "allowed.test",
        world.allowed.port,
        "127.0.0.1",
    )
    assert line["bytes_up"] > 0 and line["bytes_down"] == len(reply) and line["time"].endswith("Z")


def test_the_forwarded_request_is_origin_form_without_hop_by_hop_headers(world, proxy):
    get(
        proxy,
        f"http://allowed.test:{world.allowed.port}/p",
        "Proxy-Authorization: Basic eA==",
        "Keep-Alive: 5",
        "X-Kept: yes",
    )
    [request] = world.allowed.requests
    assert request.startswith(b"GET /p HTTP/1.1\r\n") and b"X-Kept: yes" in request
    assert b"Proxy-Authorization" not in request and b"Keep-Alive" not in request
    assert b"Connection: close" in request


def test_the_model_endpoint_is_reachable_by_connect(world, proxy):
    sock, reply = connect_tunnel(proxy.tcp_address, f"model.test:{world.model.port}")
    with sock:
        assert reply.startswith(b"HTTP/1.1 200")
        sock.sendall(f"GET /v1/models HTTP/1.1\r\nHost: model.test:{world.model.port}\r\n\r\n".encode())
        assert b"model host=model.test" in sock.recv(65536)
    assert last(proxy)[0]["reason"] == "model_endpoint"


@pytest.mark.parametrize("method", ["GET", "CONNECT"])
def test_a_denied_name_gets_403_and_its_listener_sees_nothing(world, proxy, method):
    target = f"denied.test:{world.denied.port}"
    if method == "GET":
        reply = get(proxy, f"http://{target}/")
    else:
        sock, reply = connect_tunnel(proxy.tcp_address, target)
        sock.close()
    assert reply.startswith(b"HTTP/1.1 403 Forbidden") and b"not_allowed" in reply
    assert world.denied.connections == 0
    [line] = last(proxy)
    assert (line["allowed"], line["reason"], line["host"], line["method"]) == (
        False,
        "not_allowed",
        "denied.test",
        method,
    )


def test_an_allowed_name_on_another_port_is_denied(world, proxy):
    sock, reply = connect_tunnel(proxy.tcp_address, f"allowed.test:{world.denied.port}")
    sock.close()
    assert reply.startswith(b"HTTP/1.1 403") and b"port_not_allowed" in reply
    assert world.denied.connections == 0 and world.allowed.connections == 0
    assert last(proxy)[0]["reason"] == "port_not_allowed"


@pytest.mark.parametrize(
    "host, reason",
    [
        ("127.0.0.1", "ip_literal"),
        ("[::1]", "ip_literal"),
        ("[::ffff:127.0.0.1]", "ip_literal"),
        ("2130706433", "ip_literal_nonstandard"),
        ("0x7f.1", "ip_literal_nonstandard"),
        ("0177.0.0.1", "ip_literal_nonstandard"),
        ("127.1", "ip_literal_nonstandard"),
    ],
)
def test_ip_literals_are_denied(world, proxy, host, reason):
    sock, reply = connect_tunnel(proxy.tcp_address, f"{host}:{world.allowed.port}")
    sock.close()
    plain = get(proxy, f"http://{host}:{world.allowed.port}/")
    assert reply.startswith(b"HTTP/1.1 403") and plain.startswith(b"HTTP/1.1 403")
    assert world.allowed.connections == 0
    assert [line["reason"] for line in last(proxy, 2)] == [reason, reason]


def test_a_wildcard_matches_below_its_suffix_never_the_apex_or_a_lookalike(world, proxy):
    port = world.wild.port
    for host in ("a.wild.test", "a.b.wild.test"):
        assert get(proxy, f"http://{host}:{port}/").startswith(b"HTTP/1.1 200")
    for host in ("wild.test", "badwild.test"):
        assert get(proxy, f"http://{host}:{port}/").startswith(b"HTTP/1.1 403")
    assert world.wild.connections == 2
    assert [line["allowed"] for line in last(proxy, 4)] == [True, True, False, False]


def test_a_plain_request_whose_host_header_disagrees_is_denied(world, proxy):
    url = f"http://allowed.test:{world.allowed.port}/"
    for host in (f"denied.test:{world.denied.port}", "allowed.test", f"allowed.test:{world.denied.port}"):
        reply = get(proxy, url, host=host)
        assert reply.startswith(b"HTTP/1.1 403") and b"host_mismatch" in reply
    assert world.allowed.connections == 0 and world.denied.connections == 0
    assert [line["reason"] for line in last(proxy, 3)] == ["host_mismatch"] * 3


def test_connect_to_the_model_then_a_request_for_another_host_is_cut(world, proxy):
    """The 'tunnel to the model host used to reach another host' vector, in plaintext."""
    request = f"GET / HTTP/1.1\r\nHost: denied.test:{world.denied.port}\r\n\r\n".encode()
    assert through_tunnel(proxy, f"model.test:{world.model.port}", request) == b""  # closed, no response
    assert world.model.settle().received == 0 and world.denied.connections == 0
    [line] = last(proxy)
    assert (line["allowed"], line["reason"]) == (False, "host_mismatch")
    assert "denied.test" in line["detail"] and line["bytes_up"] == 0


def test_a_second_request_in_a_plaintext_tunnel_is_checked_too(world, proxy):
    target = f"model.test:{world.model.port}"
    first = f"POST / HTTP/1.1\r\nHost: {target}\r\nContent-Length: 5\r\n\r\nhello".encode()
    second = f"GET / HTTP/1.1\r\nHost: denied.test:{world.denied.port}\r\n\r\n".encode()
    absolute = f"GET http://denied.test:{world.denied.port}/ HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()
    for follow in (second, absolute):
        through_tunnel(proxy, target, first + follow)
    assert world.model.settle().received == 2 * len(first)  # each first request and its body, nothing after
    assert [line["reason"] for line in last(proxy, 2)] == ["host_mismatch", "host_mismatch"]


def test_a_chunked_body_is_framed_so_the_next_request_is_still_checked(world, proxy):
    target = f"model.test:{world.model.port}"
    body = b"5\r\nGET /\r\n0\r\n\r\n"
    first = f"POST / HTTP/1.1\r\nHost: {target}\r\nTransfer-Encoding: chunked\r\n\r\n".encode() + body
    through_tunnel(proxy, target, first + f"GET / HTTP/1.1\r\nHost: denied.test:{world.denied.port}\r\n\r\n".encode())
    assert world.model.settle().received == len(first)
    assert last(proxy)[0]["reason"] == "host_mismatch"


def test_a_client_hello_with_another_sni_is_cut_before_it_reaches_the_model(world, proxy):
    assert through_tunnel(proxy, f"model.test:{world.model.port}", client_hello("denied.test")) == b""
    assert world.model.settle().received == 0
    [line] = last(proxy)
    assert (line["allowed"], line["reason"]) == (False, "host_mismatch") and "SNI 'denied.test'" in line["detail"]


def test_a_client_hello_naming_the_target_goes_through(world, proxy):
    hello = client_hello("echo.test")
    sock, _ = connect_tunnel(proxy.tcp_address, f"echo.test:{world.echo.port}")
    with sock:
        sock.sendall(hello)
        echoed = b""
        while len(echoed) < len(hello):
            echoed += sock.recv(65536)
    assert echoed == hello and world.echo.settle().received == len(hello)


def test_a_tls_session_is_spliced_both_ways_with_half_close(world, proxy):
    # after the shut the echo sees EOF, finishes, and closes its side
    sent = client_hello("echo.test") + bytes(range(256)) * 1000
    echoed = through_tunnel(proxy, f"echo.test:{world.echo.port}", sent, shut=True)
    assert echoed == sent
    [line] = last(proxy)
    assert line["allowed"] and line["bytes_up"] == line["bytes_down"] == len(echoed)


@pytest.mark.parametrize(
    "first",
    [
        b"SSH-2.0-test\r\n",
        b"\x0cGET /x HTTP/1.1\r\nHost: denied.test\r\n\r\n",  # a lenient server skips the form feed
        b"\x00ping",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",  # HTTP/2 names its host in frames the proxy does not read
        client_hello(None),  # the server would answer for its default host
    ],
    ids=["ssh", "form-feed-then-GET", "nul", "http2-prior-knowledge", "tls-without-sni"],
)
def test_what_a_tunnel_cannot_check_is_refused_before_anything_is_dialled(world, proxy, first):
    assert through_tunnel(proxy, f"echo.test:{world.echo.port}", first) == b""
    assert world.echo.settle().connections == 0
    [line] = last(proxy)
    assert not line["allowed"] and line["reason"] in ("not_tls_or_http", "bad_request_in_tunnel", "bad_client_hello")
    assert line["bytes_up"] == 0


@pytest.mark.parametrize(
    "data, status, reason",
    [
        (b"HELLO\r\n\r\n", 400, "bad_request"),
        (b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400, "bad_request"),  # origin-form: not a proxy request
        (b"GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400, "bad_request"),
        (b"CONNECT allowed.test HTTP/1.1\r\n\r\n", 400, "bad_request"),  # no port
        (b"GET http://allowed.test/ HTTP/1.1\r\nX: " + b"a" * 40000 + b"\r\n\r\n", 431, "head_too_large"),
    ],
)
def test_unparseable_requests_get_4xx(world, proxy, data, status, reason):
    assert exchange(proxy.tcp_address, data).startswith(f"HTTP/1.1 {status}".encode())
    assert last(proxy)[0]["reason"] == reason
    assert world.allowed.connections == 0


def test_a_slow_head_times_out_with_408(world, start_proxy):
    proxy = start_proxy(world.policy, Limits(head_timeout=0.3))
    assert exchange(proxy.tcp_address, b"GET http://allowed.test/").startswith(b"HTTP/1.1 408")
    assert last(proxy)[0]["reason"] == "head_timeout"


def test_unreachable_upstreams_get_502(world, start_proxy):
    free = socket.create_server(("127.0.0.1", 0))
    closed_port = free.getsockname()[1]
    free.close()
    policy = world.policy.model_copy(update={"allow_domains": (f"closed.test:{closed_port}", "nowhere.invalid")})
    proxy = start_proxy(policy)
    assert get(proxy, f"http://closed.test:{closed_port}/").startswith(b"HTTP/1.1 502")
    assert get(proxy, "http://nowhere.invalid/").startswith(b"HTTP/1.1 502")
    assert [line["reason"] for line in last(proxy, 2)] == ["connect_failed", "resolve_failed"]


def a_name_resolving_to_loopback() -> str:
    """A name other than localhost that the system resolver maps to loopback (Debian's /etc/hosts maps the
    machine's own name there)."""
    import ipaddress
    import socket

    name = socket.gethostname()
    try:
        if name != "localhost" and ipaddress.ip_address(socket.gethostbyname(name)).is_loopback:
            return name
    except OSError:
        pass
    pytest.skip(f"no name other than localhost resolves to loopback here (the host name {name!r} does not)")


def test_an_allowed_name_resolving_to_loopback_is_refused(world, start_proxy, origins):
    """Without an override the proxy resolves the name itself; a name that leads back into the host is refused."""
    target = origins(name="local")
    name = a_name_resolving_to_loopback()
    url = f"http://{name}:{target.port}/"
    refused = get(start_proxy(EgressPolicy(allow_domains=(f"{name}:{target.port}",))), url)
    assert refused.startswith(b"HTTP/1.1 403") and b"resolves_to_internal_address" in refused
    assert target.connections == 0
    opted_in = EgressPolicy(allow_domains=(f"{name}:{target.port}",), allow_internal_addresses=True)
    assert get(start_proxy(opted_in), url).startswith(b"HTTP/1.1 200")
    assert target.connections == 1


def test_an_allowed_loopback_entry_is_the_profiles_own_choice_and_is_reachable(start_proxy, origins):
    """`localhost:PORT` in allow_domains names the host's loopback itself (a database, a dev server)."""
    target = origins(name="local")
    proxy = start_proxy(EgressPolicy(allow_domains=(f"localhost:{target.port}",)))
    assert get(proxy, f"http://localhost:{target.port}/").startswith(b"HTTP/1.1 200")
    assert get(proxy, f"http://localhost:{target.port + 1 if target.port < 65535 else 1}/").startswith(b"HTTP/1.1 403")
    assert target.connections == 1


def test_a_model_endpoint_on_loopback_by_name_is_reachable(start_proxy, origins):
    target = origins(name="model")
    proxy = start_proxy(EgressPolicy(model_endpoint=Endpoint(host="localhost", port=target.port)))
    assert get(proxy, f"http://localhost:{target.port}/").startswith(b"HTTP/1.1 200")


def test_an_idle_tunnel_is_closed_and_logged(world, start_proxy):
    proxy = start_proxy(world.policy, Limits(idle_timeout=0.3))
    sock, _ = connect_tunnel(proxy.tcp_address, f"echo.test:{world.echo.port}")
    hello = client_hello("echo.test")
    with sock:
        sock.settimeout(10)
        sock.sendall(hello)
        echoed = b""
        while len(echoed) < len(hello):
            echoed += sock.recv(65536)
        started = time.monotonic()
        assert sock.recv(1) == b""
    assert time.monotonic() - started < 5
    assert last(proxy)[0]["allowed"]


def test_a_tunnel_whose_client_sends_nothing_never_dials(world, start_proxy):
    proxy = start_proxy(world.policy, Limits(idle_timeout=0.3))
    sock, reply = connect_tunnel(proxy.tcp_address, f"echo.test:{world.echo.port}")
    with sock:
        assert reply.startswith(b"HTTP/1.1 200")
        sock.settimeout(10)
        assert sock.recv(1) == b""
    assert world.echo.settle().connections == 0
    [line] = last(proxy)
    assert (line["allowed"], line["reason"]) == (False, "incomplete") and "nothing was dialled" in line["detail"]


def test_a_tunnel_whose_host_header_names_a_virtual_host_on_the_same_address_never_reaches_it(world, proxy):
    """allowed.test and denied.test share an address: the mismatch is caught before anything is dialled."""
    request = f"GET / HTTP/1.1\r\nHost: denied.test:{world.allowed.port}\r\n\r\n".encode()
    assert through_tunnel(proxy, f"allowed.test:{world.allowed.port}", request) == b""
    assert world.allowed.settle().connections == 0
    assert last(proxy)[0]["reason"] == "host_mismatch"


def test_an_upstream_that_refuses_the_tunnel_closes_it_without_a_second_status(world, start_proxy):
    free = socket.create_server(("127.0.0.1", 0))
    closed_port = free.getsockname()[1]
    free.close()
    proxy = start_proxy(world.policy.model_copy(update={"allow_domains": (f"closed.test:{closed_port}",)}))
    request = f"GET / HTTP/1.1\r\nHost: closed.test:{closed_port}\r\n\r\n".encode()
    assert through_tunnel(proxy, f"closed.test:{closed_port}", request) == b""
    assert last(proxy)[0]["reason"] == "connect_failed"


def test_connections_over_the_limit_get_503(world, start_proxy):
    proxy = start_proxy(world.policy, Limits(max_connections=1))
    sock, _ = connect_tunnel(proxy.tcp_address, f"echo.test:{world.echo.port}")
    with sock:  # the tunnel is logged when it ends: look before that
        assert get(proxy, f"http://allowed.test:{world.allowed.port}/").startswith(b"HTTP/1.1 503")
        assert last(proxy)[0]["reason"] == "too_many_connections"


def test_the_unix_socket_serves_the_same_proxy(world, proxy):
    data = f"GET http://allowed.test:{world.allowed.port}/u HTTP/1.1\r\nHost: allowed.test:{world.allowed.port}\r\n\r\n"
    assert exchange(proxy.socket_path, data.encode()).startswith(b"HTTP/1.1 200")
    assert last(proxy)[0]["client"].startswith("unix")


def test_stop_logs_open_tunnels_and_removes_the_socket(world, short_dir):
    proxy = EgressProxy(world.policy, f"{short_dir}/log.jsonl", socket_path=f"{short_dir}/s.sock", tcp_port=0).start()
    sock, _ = connect_tunnel(proxy.tcp_address, f"echo.test:{world.echo.port}")
    hello = client_hello("echo.test")
    sock.sendall(hello)
    echoed = b""
    while len(echoed) < len(hello):  # through both ways before the stop
        echoed += sock.recv(65536)
    proxy.stop()
    sock.close()
    [line] = read_log(f"{short_dir}/log.jsonl")
    assert line["allowed"] and line["bytes_up"] == len(hello)
    with pytest.raises(OSError):
        exchange(f"{short_dir}/s.sock", b"x")


def test_a_proxy_that_cannot_listen_raises(world, short_dir):
    with pytest.raises(ProxyStartError, match="cannot listen on .*/missing/s.sock"):
        EgressProxy(world.policy, f"{short_dir}/log.jsonl", socket_path=f"{short_dir}/missing/s.sock").start()
    with EgressProxy(world.policy, f"{short_dir}/log.jsonl", socket_path=f"{short_dir}/s.sock"):
        with pytest.raises(ProxyStartError, match="already exists"):
            EgressProxy(world.policy, f"{short_dir}/log2.jsonl", socket_path=f"{short_dir}/s.sock").start()
    with pytest.raises(ProxyStartError, match="decision log"):
        EgressProxy(world.policy, f"{short_dir}/missing/log.jsonl", socket_path=f"{short_dir}/t.sock").start()
    assert not os.path.exists(f"{short_dir}/t.sock")  # nothing left bound by the failed start
    taken = socket.create_server(("127.0.0.1", 0))
    with taken, pytest.raises(ProxyStartError, match="127.0.0.1"):
        EgressProxy(world.policy, f"{short_dir}/log.jsonl", tcp_port=taken.getsockname()[1]).start()


def test_blank_lines_between_tunnel_requests_are_skipped_not_a_disguise(world, proxy):
    target = f"model.test:{world.model.port}"
    request = f"GET / HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()
    through_tunnel(proxy, target, b"\r\n\r\n" + request + b"\r\n" + b"GET / HTTP/1.1\r\nHost: denied.test\r\n\r\n")
    assert world.model.settle().received == len(request)
    assert last(proxy)[0]["reason"] == "host_mismatch"


def test_a_request_line_cut_short_by_eof_is_dropped(world, proxy):
    through_tunnel(proxy, f"model.test:{world.model.port}", b"GET http://denied.test/", shut=True)
    assert world.model.settle().received == 0


def test_when_the_decision_log_cannot_be_written_nothing_more_is_allowed(world):
    url = f"http://allowed.test:{world.allowed.port}/"
    with EgressProxy(world.policy, "/dev/full", tcp_port=0) as proxy:  # every write fails with ENOSPC
        get(proxy, url)
        reply = get(proxy, url)
    assert reply.startswith(b"HTTP/1.1 503") and b"decision_log_unwritable" in reply
    assert world.allowed.connections == 1


def test_a_route_carries_its_socket_to_the_model_endpoint_and_logs_it(world, short_dir):
    target = Endpoint(host="model.test", port=world.model.port)
    with EgressProxy(world.policy, f"{short_dir}/log.jsonl", routes={f"{short_dir}/model.sock": target}):
        reply = exchange(f"{short_dir}/model.sock", b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert b"model host=127.0.0.1 line=GET /v1/models" in reply  # the bytes go through untouched
    assert not os.path.exists(f"{short_dir}/model.sock")
    [line] = read_log(f"{short_dir}/log.jsonl")
    assert (line["method"], line["allowed"], line["reason"], line["host"], line["port"]) == (
        "ROUTE",
        True,
        "model_endpoint",
        "model.test",
        world.model.port,
    )
    assert line["client"].startswith("unix") and line["bytes_down"] == len(reply)


def test_a_route_the_policy_does_not_allow_is_refused_before_dialling(world, short_dir):
    target = Endpoint(host="denied.test", port=world.denied.port)
    with EgressProxy(world.policy, f"{short_dir}/log.jsonl", routes={f"{short_dir}/r.sock": target}):
        reply = exchange(f"{short_dir}/r.sock", b"GET / HTTP/1.1\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 403") and world.denied.connections == 0
    assert read_log(f"{short_dir}/log.jsonl")[0]["reason"] == "not_allowed"


def test_watch_reports_a_proxy_whose_loop_died_but_not_a_stopped_one(world, short_dir):
    import threading

    died = threading.Event()
    proxy = EgressProxy(world.policy, f"{short_dir}/log.jsonl", socket_path=f"{short_dir}/s.sock").start()
    proxy.watch(lambda code: died.set())
    proxy._loop.call_soon_threadsafe(proxy._loop.stop)  # the loop ends without stop(): as if it crashed
    assert died.wait(10) and not proxy.alive()
    proxy.stop()
    stopped = threading.Event()
    other = EgressProxy(world.policy, f"{short_dir}/log2.jsonl", socket_path=f"{short_dir}/t.sock").start()
    other.watch(lambda code: stopped.set())
    other.stop()
    assert not stopped.wait(0.5)
