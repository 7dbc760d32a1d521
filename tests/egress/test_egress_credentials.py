"""The credential swap on real sockets: the sandbox's placeholder goes in, the real value comes out only
towards where it is bound, and a placeholder sent anywhere else is refused and logged as a replay."""

from __future__ import annotations

import socket

import pytest
from egress_servers import connect_tunnel, exchange, self_signed, wait_log

from agentbox.egress import EgressPolicy, EgressProxy, Endpoint
from agentbox.egress.http1 import parse_request
from agentbox.egress.swap import Replay, Swap, SwapTable, parse_header

KEY, KEY_PH = "real-model-key-0123", "sk-agentbox-placeholder-AAAA"
TOKEN, TOKEN_PH = "real-github-token-4567", "agentbox-placeholder-BBBB"


def table(bound: str = "allowed.test") -> SwapTable:
    return SwapTable(
        [
            Swap.make("MODEL_KEY", KEY_PH, KEY, ["x-api-key: {value}", "Authorization: Bearer {value}"], model=True),
            Swap.make("GITHUB_TOKEN", TOKEN_PH, TOKEN, ["Authorization: token {value}"], hosts=[bound]),
        ]
    )


def head(*lines: str, target: str = "/v1/messages"):
    return parse_request(("\r\n".join([f"POST {target} HTTP/1.1", *lines]) + "\r\n\r\n").encode())


def test_a_header_template_names_the_header_and_where_the_value_goes():
    assert parse_header("Authorization: Bearer {value}") == ("authorization", "Bearer ", "")
    for bad in ("Authorization Bearer {value}", "Authorization: Bearer", "X: {value}{value}", ": {value}"):
        with pytest.raises(ValueError):
            parse_header(bad)


def test_the_model_key_is_swapped_in_on_the_model_route_in_its_own_headers_only():
    new, swapped = table().apply(
        head(f"x-api-key: {KEY_PH}", f"authorization: bearer {KEY_PH}", f"X-Echo: {KEY_PH}"),
        None,
        None,
        model_route=True,
    )
    assert dict(new.headers) == {
        "x-api-key": KEY,
        "authorization": f"bearer {KEY}",
        "X-Echo": KEY_PH,
        "Accept-Encoding": "identity",
    }, "what comes back must be scannable (scrub.py)"
    assert swapped == ("MODEL_KEY",)


def test_a_placeholder_sent_where_it_is_not_bound_is_a_replay():
    with pytest.raises(Replay, match="GITHUB_TOKEN .* the model route"):
        table().apply(head(f"Authorization: token {TOKEN_PH}"), None, None, model_route=True)
    with pytest.raises(Replay, match="MODEL_KEY .* other.test:80"):
        table().apply(head("Host: other.test", target=f"/?key={KEY_PH}"), "other.test", 80)
    new, swapped = table().apply(head(f"Authorization: token {TOKEN_PH}"), "allowed.test", 443)
    assert dict(new.headers)["Authorization"] == f"token {TOKEN}" and swapped == ("GITHUB_TOKEN",)


def test_a_request_without_placeholders_passes_unchanged():
    original = head("Authorization: Bearer someone-elses")
    assert table().apply(original, "other.test", 80) == (original, ())


@pytest.fixture
def model_proxy(world, short_dir):
    proxy = EgressProxy(
        world.policy,
        f"{short_dir}/log.jsonl",
        model_tcp=True,
        swaps=table(f"allowed.test:{world.allowed.port}"),
        tcp_port=0,
    ).start()
    yield proxy
    proxy.stop()


def post(address, *headers: str, target: str = "/v1/messages") -> bytes:
    """One request on the model route and its whole response (as a keep-alive client reads it: by its length)."""
    lines = [f"POST {target} HTTP/1.1", "Host: 127.0.0.1:3127", "Content-Length: 2", *headers]
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n{}").encode())
        out = b""
        while b"\r\n\r\n" not in out or len(out.split(b"\r\n\r\n", 1)[1]) < _length(out):
            chunk = sock.recv(65536)
            if not chunk:
                break
            out += chunk
    return out


def _length(reply: bytes) -> int:
    head = reply.split(b"\r\n\r\n", 1)[0].lower()
    found = [line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.startswith(b"content-length:")]
    return int(found[0]) if found else 1 << 30


def test_the_model_route_forwards_with_the_real_key_and_the_endpoints_host(world, model_proxy):
    reply = post(model_proxy.model_address, f"x-api-key: {KEY_PH}")
    assert reply.startswith(b"HTTP/1.1 200 OK")
    [request] = world.model.settle().requests
    assert f"x-api-key: {KEY}".encode() in request and KEY_PH.encode() not in request
    assert f"Host: model.test:{world.model.port}".encode() in request
    lines = wait_log(model_proxy.log_path, 2)
    [line] = [d for d in lines if d.get("route") == "model"]
    assert line["allowed"] and line["credentials"] == ["MODEL_KEY"] and line["target"] == "/v1/messages"
    assert line["headers"] == ["x-api-key"], "the log names the header that carried the key"
    [route] = [d for d in lines if d["method"] == "ROUTE"]
    assert route["credentials"] == ["MODEL_KEY"] and KEY not in str(lines), "names are logged, never values"


def test_another_secrets_placeholder_on_the_model_route_is_refused_before_anything_is_dialled(world, model_proxy):
    reply = post(model_proxy.model_address, f"Authorization: token {TOKEN_PH}")
    assert reply.startswith(b"HTTP/1.1 403") and b"credential_replay" in reply
    assert world.model.connections == 0
    assert any(d.get("reason") == "credential_replay" for d in wait_log(model_proxy.log_path, 2))


def test_a_bound_secret_is_swapped_in_on_a_plain_request_to_its_host_and_refused_elsewhere(world, model_proxy):
    def get(host: str, port: int) -> bytes:
        return exchange(
            model_proxy.tcp_address,
            (
                f"GET http://{host}:{port}/user HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Authorization: token {TOKEN_PH}\r\n\r\n"
            ).encode(),
        )

    assert get("allowed.test", world.allowed.port).startswith(b"HTTP/1.1 200")
    [request] = world.allowed.settle().requests
    assert f"Authorization: token {TOKEN}".encode() in request
    refused = get("echo.test", world.echo.port)
    assert refused.startswith(b"HTTP/1.1 403") and b"credential_replay" in refused and world.echo.connections == 0


def test_the_model_route_speaks_verified_tls_to_an_https_endpoint(origins, short_dir):
    server = self_signed(short_dir, "tls.test")
    if server is None:
        pytest.skip("openssl is not installed")
    model = origins(tls=server, name="tls-model")
    policy = EgressPolicy(
        model_endpoint=Endpoint(host="tls.test", port=model.port),
        model_tls=True,
        resolver_overrides={"tls.test": "127.0.0.1"},
    )
    with EgressProxy(
        policy, f"{short_dir}/t.jsonl", model_tcp=True, swaps=table(), upstream_ca=f"{short_dir}/tls.test.crt"
    ) as proxy:
        assert post(proxy.model_address, f"Authorization: Bearer {KEY_PH}").startswith(b"HTTP/1.1 200 OK")
        assert f"Authorization: Bearer {KEY}".encode() in model.settle().requests[0]
    with EgressProxy(policy, f"{short_dir}/u.jsonl", model_tcp=True, swaps=table()) as untrusting:
        reply = post(untrusting.model_address, f"Authorization: Bearer {KEY_PH}")
    assert b"200 OK" not in reply, "a certificate the host's trust store does not know is refused"
    assert any(d.get("reason") == "upstream_tls_failed" for d in wait_log(f"{short_dir}/u.jsonl", 1))


def tls_get(proxy, target: str, run_ca: str, *headers: str) -> bytes:
    """CONNECT through the proxy, then HTTPS trusting `run_ca` only; the whole response."""
    import ssl as _ssl

    host = target.split(":")[0]
    sock, reply = connect_tunnel(proxy.tcp_address, target)
    assert reply.startswith(b"HTTP/1.1 200")
    context = _ssl.create_default_context(cafile=run_ca)
    with context.wrap_socket(sock, server_hostname=host) as tls:
        tls.sendall(("\r\n".join(["GET /user HTTP/1.1", f"Host: {target}", *headers]) + "\r\n\r\n").encode())
        out = b""
        while chunk := tls.recv(65536):
            out += chunk
            if b"\r\n\r\n" in out and len(out.split(b"\r\n\r\n", 1)[1]) >= _length(out):
                break
    return out


def test_tls_to_a_bound_host_ends_at_the_proxy_which_swaps_the_secret_in_and_speaks_verified_tls_on(origins, short_dir):
    from agentbox.egress.policy import parse_entry
    from agentbox.egress.run_ca import Authority

    server = self_signed(short_dir, "tls.test")
    if server is None:
        pytest.skip("openssl is not installed")
    bound = origins(tls=server, name="bound")
    policy = EgressPolicy(allow_domains=(f"tls.test:{bound.port}",), resolver_overrides={"tls.test": "127.0.0.1"})
    authority = Authority((parse_entry(f"tls.test:{bound.port}"),))
    run_ca = f"{short_dir}/run-ca.pem"
    with open(run_ca, "wb") as f:
        f.write(authority.cert_pem())
    swaps = table(f"tls.test:{bound.port}")
    with EgressProxy(
        policy,
        f"{short_dir}/l.jsonl",
        tcp_port=0,
        swaps=swaps,
        authority=authority,
        upstream_ca=f"{short_dir}/tls.test.crt",
    ) as proxy:
        reply = tls_get(proxy, f"tls.test:{bound.port}", run_ca, f"Authorization: token {TOKEN_PH}")
        assert reply.startswith(b"HTTP/1.1 200 OK")
        [request] = bound.settle().requests
        assert f"Authorization: token {TOKEN}".encode() in request and TOKEN_PH.encode() not in request
        refused = tls_get(proxy, f"tls.test:{bound.port}", run_ca, f"x-api-key: {KEY_PH}")
        assert refused.startswith(b"HTTP/1.1 403") and b"credential_replay" in refused, "no secret of this host"
    lines = wait_log(f"{short_dir}/l.jsonl", 2)
    [swapped] = [d for d in lines if d["allowed"]]
    assert swapped["credentials"] == ["GITHUB_TOKEN"] and swapped["detail"].startswith("TLS terminated")
    assert [d["reason"] for d in lines if not d["allowed"]] == ["credential_replay"] and len(bound.requests) == 1


def test_the_run_ca_signs_only_for_the_bound_hosts(short_dir):
    import ssl as _ssl

    from cryptography import x509

    from agentbox.egress.policy import parse_entry
    from agentbox.egress.run_ca import Authority

    authority = Authority((parse_entry("api.github.com"),))
    constraints = authority.cert.extensions.get_extension_for_class(x509.NameConstraints).value
    assert [n.value for n in constraints.permitted_subtrees] == ["api.github.com"]
    cert, key = authority.leaf("evil.example")
    with open(f"{short_dir}/leaf.pem", "wb") as f:
        f.write(cert + key)
    with open(f"{short_dir}/ca.pem", "wb") as f:
        f.write(authority.cert_pem())
    server = _ssl.SSLContext(_ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(f"{short_dir}/leaf.pem")
    client = _ssl.create_default_context(cafile=f"{short_dir}/ca.pem")
    a, b = socket.socketpair()
    import threading

    threading.Thread(target=lambda: _quiet(lambda: server.wrap_socket(a, server_side=True)), daemon=True).start()
    with pytest.raises(_ssl.SSLCertVerificationError):
        client.wrap_socket(b, server_hostname="evil.example")


def _quiet(fn):
    try:
        fn()
    except OSError:
        pass
