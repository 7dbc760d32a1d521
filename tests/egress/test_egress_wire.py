"""What the proxy reads on the wire: strict request heads, body framing, first-bytes classification and
the SNI of real ClientHellos made by the ssl module in memory."""

from __future__ import annotations

import pytest
from egress_servers import client_hello

from agentbox.egress.http1 import (
    BadRequest,
    check_trailer,
    forward_head,
    framing,
    host_matches,
    parse_absolute,
    parse_request,
    split_authority,
)
from agentbox.egress.dial import Refused
from agentbox.egress.sniff import BadHello, classify, client_hello_sni
from agentbox.egress.tunnel import check_request, first_message


def head(*lines: str) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_a_request_head_parses_into_method_target_version_and_headers():
    parsed = parse_request(head("GET http://a.test/x HTTP/1.1", "Host: a.test", "X-Y:  z "))
    assert parsed.method == "GET" and parsed.target == "http://a.test/x" and parsed.version == "1.1"
    assert parsed.values("x-y") == ["z"] and parsed.host() == "a.test"


@pytest.mark.parametrize(
    "raw",
    [
        head("GET / HTTP/1.1", "Host : evil.test"),  # space before the colon
        head("GET / HTTP/1.1", "Host: a.test", " folded"),  # obsolete line folding
        head("GET / HTTP/1.1", "Ho\rst: a.test"),
        head("GET  / HTTP/1.1"),
        head("GET / HTTP/2.0"),
        head("GET / HTTP/1.1", "X: a\x00b"),
        b"GET / HTTP/1.1\r\nHost: a\r\n",
        b"GET / HTTP/1.1\n\r\nHost: a\r\n\r\n",  # a bare LF ending the request line: h11 ends the head there
        head("GET / HTTP/1.1", "Host: a\n"),  # and a header line
        head("GET /\xe9 HTTP/1.1"),  # a target is printable ASCII
        head("GET\t/ HTTP/1.1"),
        head(" GET / HTTP/1.1"),
        head("GET / HTTP/1.1 "),
        head("GET / HTTP/1.1", "\x0cHost: a"),
    ],
)
def test_ambiguous_heads_are_bad_requests(raw):
    with pytest.raises(BadRequest):
        parse_request(raw)


def test_header_count_is_bounded():
    with pytest.raises(BadRequest, match="more than 3"):
        parse_request(head("GET / HTTP/1.1", *[f"X{i}: v" for i in range(4)]), max_headers=3)


def test_duplicate_host_is_refused_when_read():
    with pytest.raises(BadRequest, match="more than one Host"):
        parse_request(head("GET / HTTP/1.1", "Host: a.test", "Host: b.test")).host()


@pytest.mark.parametrize(
    "lines, expected",
    [
        (["Content-Length: 12"], ("length", 12)),
        (["Content-Length: 5", "Content-Length: 5"], ("length", 5)),
        (["Transfer-Encoding: chunked"], ("chunked", 0)),
        ([], ("none", 0)),
    ],
)
def test_framing(lines, expected):
    assert framing(parse_request(head("POST / HTTP/1.1", *lines))) == expected


@pytest.mark.parametrize(
    "lines",
    [
        ["Content-Length: 5", "Transfer-Encoding: chunked"],
        ["Content-Length: 5", "Content-Length: 6"],
        ["Content-Length: -1"],
        ["Transfer-Encoding: gzip, chunked"],
        ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
        ["Content-Length: \xb2"],  # str.isdigit() says yes to a superscript two
        ["Content-Length: 5, 5"],
    ],
)
def test_framing_a_smuggler_could_use_is_refused(lines):
    with pytest.raises(BadRequest):
        framing(parse_request(head("POST / HTTP/1.1", *lines)))


def test_authorities_and_absolute_urls():
    assert split_authority("Allowed.Test.:8080", None) == ("allowed.test", 8080)
    assert split_authority("[::1]:443", None) == ("::1", 443)
    assert split_authority("a.test", 80) == ("a.test", 80)
    for bad in ("a.test", "a.test:", "a.test:99999", "u@a.test:80", "[::1]x:80", ":80"):
        with pytest.raises(BadRequest):
            split_authority(bad, None)
    assert parse_absolute("HTTP://a.test:81/p?q#frag") == ("a.test", 81, "/p?q")
    assert parse_absolute("http://a.test?q") == ("a.test", 80, "/?q")
    assert parse_absolute("http://a.test") == ("a.test", 80, "/")
    with pytest.raises(BadRequest):
        parse_absolute("http://allowed.test@evil.test/")


def test_host_header_must_name_the_same_host_and_port():
    assert host_matches("a.test:8080", "a.test", 8080)
    assert host_matches("A.TEST.", "a.test", 80)
    assert host_matches(None, "a.test", 8080)
    assert not host_matches("a.test", "a.test", 8080)  # no port means 80
    assert not host_matches("b.test:8080", "a.test", 8080)
    assert not host_matches("a.test:8080 b.test", "a.test", 8080)
    for spelled in ("a.test\xa0", "a.te\xdft", "a\u3002test", "a.test\t"):  # normalized to a.test, not by every server
        assert not host_matches(spelled, "a.test", 80)


def test_a_trailer_is_a_strict_field_that_neither_frames_nor_routes():
    check_trailer(b"X-Checksum: abc\r\n")
    for bad in (
        b"X-Checksum abc\r\n",
        b" folded\r\n",
        b"Host: denied.test\r\n",
        b"Content-Length: 5\r\n",
        b"Transfer-Encoding: chunked, identity\r\n",
        b"X: a\nb\r\n",
    ):
        with pytest.raises(BadRequest):
            check_trailer(bad)


def test_forwarded_heads_lose_hop_by_hop_headers_but_never_framing():
    parsed = parse_request(
        head(
            "POST http://a.test:81/p HTTP/1.1",
            "Host: a.test:81",
            "Proxy-Authorization: x",
            "Connection: keep-alive, X-Drop, Content-Length",
            "X-Drop: 1",
            "Keep-Alive: 5",
            "Content-Length: 3",
            "X-Keep: 2",
        )
    )
    out = forward_head(parsed, "a.test", 81, "/p").decode()
    assert out.startswith("POST /p HTTP/1.1\r\n") and out.endswith("Connection: close\r\n\r\n")
    assert "Content-Length: 3" in out and "X-Keep: 2" in out and "Host: a.test:81" in out
    assert not any(h in out for h in ("Proxy-Authorization", "X-Drop", "Keep-Alive", "keep-alive"))
    bare = forward_head(parse_request(head("GET http://a.test/ HTTP/1.0")), "a.test", 80, "/").decode()
    assert "Host: a.test\r\n" in bare


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"", None),
        (b"\x16\x03\x01", "tls"),
        (b"GET / HTTP/1.1\r\n", "http"),
        (b"\r\n\r\nget  /x   http/1.1\r\n", "http"),  # blank lines first, odd case and spacing
        (b"GET /very/long", None),
        (b"GET", None),
        (b"SSH-2.0-OpenSSH_9.6\r\n", "opaque"),
        (b"EHLO mail.test\r\n", "opaque"),
        (b"\x00\x00\x00\x08\x04\xd2\x16\x2f", "opaque"),
        (b"hello\n", "opaque"),
        (b"\x0cGET /x HTTP/1.1\r\nHost: denied.test\r\n\r\n", "opaque"),  # a form feed a lenient server skips
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "http"),  # then refused by the strict parser: HTTP/1.x only
    ],
)
def test_first_bytes_classification(data, expected):
    assert classify(data) == expected


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", "not_tls_or_http"),
        (b"\x0cGET /x HTTP/1.1\r\nHost: denied.test\r\n\r\n", "not_tls_or_http"),
        (b"G" * 40000, "unclassifiable"),
        (client_hello(None), "bad_client_hello"),  # without SNI the server picks its default host
        (client_hello("denied.test"), "host_mismatch"),
    ],
    ids=["ssh", "form-feed", "endless-token", "hello-without-sni", "hello-for-another-host"],
)
def test_a_tunnel_refuses_first_bytes_it_cannot_check(data, reason):
    with pytest.raises(Refused) as refused:
        first_message(data, "allowed.test", 32768)
    assert refused.value.reason == reason


@pytest.mark.parametrize("spelled", [b"allowed.test\x1f", b"\x0ballowed.test", b"allowed.test ", b"allowed.test\t"])
def test_a_client_hello_whose_server_name_has_a_blank_or_control_character_is_refused(spelled):
    # the server gets the name as it came, matches no host of its own and serves its default one
    hello = client_hello("allowed.testX").replace(b"allowed.testX", spelled)
    with pytest.raises(Refused):
        first_message(hello, "allowed.test", 32768)


def test_a_tunnel_splices_only_a_whole_client_hello_naming_its_target():
    hello = client_hello("allowed.test")
    assert [first_message(hello[:n], "allowed.test", 32768) for n in (1, 5, len(hello) - 1)] == ["more"] * 3
    assert first_message(hello, "allowed.test", 32768) == "tls"
    assert first_message(b"GET / HTTP/1.1\r\n", "allowed.test", 32768) == "http"


def test_sni_of_real_client_hellos():
    for name in ("allowed.test", "a.b.example.com"):
        assert client_hello_sni(client_hello(name)) == (True, name)
    assert client_hello_sni(client_hello(None)) == (True, None)


def test_a_client_hello_split_across_records_and_reads():
    hello = client_hello("allowed.test")
    body = hello[5:]
    records = b"".join(
        b"\x16\x03\x01" + len(part).to_bytes(2, "big") + part for part in (body[:7], body[7:100], body[100:])
    )
    for cut in (0, 3, 5, 30, len(records) - 1):
        assert client_hello_sni(records[:cut]) == (False, None)
    assert client_hello_sni(records) == (True, "allowed.test")


@pytest.mark.parametrize(
    "data",
    [
        b"\x16\x03\x01\x00\x04\x02\x00\x00\x00",  # a ServerHello, not a ClientHello
        b"\x16\x03\x01\x00\x00",
        b"\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00",  # a hello too short for its own fields
        b"\x16\x03\x01\x00\x2d\x01\x00\x00\x29\x07\x07" + bytes(32) + b"\x00\x00\x02\x13\x01\x01\x00",  # no TLS version
    ],
)
def test_malformed_hellos_are_refused(data):
    with pytest.raises(BadHello):
        client_hello_sni(data)


def _head(target: str, *headers: str):
    return parse_request(
        f"GET {target} HTTP/1.1\r\nHost: allowed.test\r\n{''.join(h + chr(13) + chr(10) for h in headers)}\r\n".encode()
    )


@pytest.mark.parametrize("named", ["close, Host", "Content-Length", "keep-alive, transfer-encoding"])
def test_a_tunnelled_request_whose_connection_header_names_what_was_checked_is_refused(named):
    with pytest.raises(BadRequest):
        check_request(_head("/x", f"Connection: {named}"), "allowed.test", 80)


def test_a_tunnelled_request_with_a_url_in_its_query_is_origin_form_and_passes():
    check_request(_head("/login?redirect_uri=https://app.example/cb"), "allowed.test", 80)
    check_request(_head("/x", "Connection: keep-alive"), "allowed.test", 80)
    with pytest.raises(Refused):
        check_request(_head("http://other.test/x"), "allowed.test", 80)
