"""Real clients honour the proxy: curl's plain proxying, its CONNECT tunnel (-p) for HTTP (and a raw TCP
protocol refused in one), and HTTPS through CONNECT with the SNI check passing."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from egress_servers import self_signed, wait_log

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def curl(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", "--noproxy", "", *args], input=stdin, capture_output=True, timeout=30)


def test_curl_proxy_plain_http_to_an_allowed_name(world, proxy):
    out = curl("--proxy", proxy.proxy_url, f"http://allowed.test:{world.allowed.port}/hello")
    assert out.returncode == 0 and out.stdout.startswith(f"allowed host=allowed.test:{world.allowed.port}".encode())


def test_curl_proxy_plain_http_to_a_denied_name(world, proxy):
    out = curl("--proxy", proxy.proxy_url, "-w", "%{http_code}", f"http://denied.test:{world.denied.port}/")
    assert out.stdout.endswith(b"403") and world.denied.connections == 0


def test_curl_proxytunnel_connect_for_http(world, proxy):
    out = curl("-p", "-x", proxy.proxy_url, f"http://allowed.test:{world.allowed.port}/t")
    assert out.returncode == 0 and b"line=GET /t HTTP/1.1" in out.stdout
    assert wait_log(proxy.log_path)[-1]["method"] == "CONNECT"


def test_curl_connect_for_a_raw_tcp_protocol_is_refused_without_reaching_the_host(world, start_proxy, origins):
    """A tunnel carries only TLS and HTTP/1.x, which the proxy can check; a raw protocol is neither."""
    echo = origins("line", name="line")
    proxy = start_proxy(world.policy.model_copy(update={"allow_domains": (f"echo.test:{echo.port}",)}))
    out = curl("-p", "-x", proxy.proxy_url, f"telnet://echo.test:{echo.port}", stdin=b"hello through\n")
    assert b"hello through" not in out.stdout and echo.settle().connections == 0
    assert curl("-p", "-x", proxy.proxy_url, f"telnet://denied.test:{world.denied.port}").returncode == 56
    assert [(line["allowed"], line["reason"]) for line in wait_log(proxy.log_path, 2)] == [
        (False, "not_tls_or_http"),
        (False, "not_allowed"),
    ]


def test_curl_https_through_connect_with_a_matching_sni(world, start_proxy, origins, short_dir):
    tls = self_signed(short_dir, "tls.test")
    if tls is None:
        pytest.skip("openssl is not available to make a certificate")
    origin = origins(tls=tls, name="tls")
    proxy = start_proxy(world.policy.model_copy(update={"allow_domains": (f"tls.test:{origin.port}",)}))
    out = curl("-k", "-x", proxy.proxy_url, f"https://tls.test:{origin.port}/secure")
    assert out.returncode == 0 and out.stdout.startswith(b"tls host=tls.test")
    [line] = wait_log(proxy.log_path)
    assert line["allowed"] and line["bytes_up"] > 200  # the ClientHello and the encrypted request went through
