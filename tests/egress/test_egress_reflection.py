"""The real value of a secret never comes back into the sandbox: a bound host that reflects request headers
(httpbin's /headers, an error page quoting them) has its response refused, on every way through the proxy
that swaps a value in (a plain forwarded request, a plaintext CONNECT tunnel, a TLS tunnel ended with the
run's CA, the model route). Each test first asks the same reflecting host directly, with the real value,
and sees it come back: without the scrubber the test would fail.

The Scrubber itself (scrub.py) is tested on its own below: values split at every byte, across chunks, in
their cheap encodings, and clean streams passed whole.
"""

from __future__ import annotations

import base64
import json
from collections import deque
import socket
import ssl
import time
import urllib.parse

import pytest
from egress_servers import Reflector, connect_tunnel, read_log, self_signed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentbox.egress import EgressPolicy, EgressProxy, Endpoint
from agentbox.egress.policy import parse_entry
from agentbox.egress.responses import Responses
from agentbox.egress.scrub import SHORT_HOLD, Forms, Scrubber, Seen, Unreadable
from agentbox.egress.swap import Swap, SwapTable

# values with characters that encodings change, so each encoded form differs from the value itself
TOKEN, TOKEN_PH = "ghs_real/Token+4567=abc&xyz09", "agentbox-placeholder-BBBBBBBBBBBB"
KEY, KEY_PH = "sk-ant-real/model+key=0123&45", "sk-agentbox-placeholder-AAAAAAAAAAAA"


class Setup:
    def __init__(self, folder: str):
        server = self_signed(folder, "tls.test")
        if server is None:
            pytest.skip("openssl is not installed")
        self.plain, self.tls = Reflector(), Reflector(tls=server)
        self.upstream_ca = f"{folder}/tls.test.crt"
        from agentbox.egress.run_ca import Authority

        bound = (f"reflect.test:{self.plain.port}", f"tls.test:{self.tls.port}")
        authority = Authority(tuple(parse_entry(b) for b in bound))
        self.run_ca = f"{folder}/run-ca.pem"
        with open(self.run_ca, "wb") as f:
            f.write(authority.cert_pem())
        policy = EgressPolicy(
            model_endpoint=Endpoint(host="model.test", port=self.plain.port),
            allow_domains=bound,
            resolver_overrides={n: "127.0.0.1" for n in ("reflect.test", "tls.test", "model.test")},
        )
        swaps = SwapTable(
            [
                Swap.make("GITHUB_TOKEN", TOKEN_PH, TOKEN, ["Authorization: token {value}"], hosts=bound),
                Swap.make("MODEL_KEY", KEY_PH, KEY, ["x-api-key: {value}"], model=True),
            ]
        )
        self.log = f"{folder}/log.jsonl"
        self.proxy = EgressProxy(
            policy, self.log, tcp_port=0, model_tcp=True, swaps=swaps, authority=authority, upstream_ca=self.upstream_ca
        ).start()
        # without a run CA a tunnel to a bound host is not ended here: plaintext HTTP in it is swapped in place
        self.untrusted = EgressProxy(policy, self.log, tcp_port=0, swaps=swaps).start()

    def close(self) -> None:
        self.proxy.stop()
        self.untrusted.stop()
        self.plain.close()
        self.tls.close()

    # -- the four ways a swapped value goes out, each returning everything the client got back --

    def forward(self, path: str, *headers: str) -> bytes:
        authority = f"reflect.test:{self.plain.port}"
        return _send(
            socket.create_connection(self.proxy.tcp_address, timeout=10),
            _request(f"http://{authority}{path}", authority, f"Authorization: token {TOKEN_PH}", *headers),
        )

    def tunnel(self, path: str, *headers: str) -> bytes:
        authority = f"reflect.test:{self.plain.port}"
        sock, reply = connect_tunnel(self.untrusted.tcp_address, authority)
        assert reply.startswith(b"HTTP/1.1 200")
        return _send(sock, _request(path, authority, f"Authorization: token {TOKEN_PH}", *headers))

    def terminated(self, path: str, *headers: str) -> bytes:
        authority = f"tls.test:{self.tls.port}"
        sock, reply = connect_tunnel(self.proxy.tcp_address, authority)
        assert reply.startswith(b"HTTP/1.1 200")
        tls = ssl.create_default_context(cafile=self.run_ca).wrap_socket(sock, server_hostname="tls.test")
        return _send(tls, _request(path, authority, *(headers or (f"Authorization: token {TOKEN_PH}",))))

    def model(self, path: str, *headers: str) -> bytes:
        return _send(
            socket.create_connection(self.proxy.model_address, timeout=10),
            _request(path, "127.0.0.1", f"x-api-key: {KEY_PH}", *headers),
        )

    # -- the control: the same reflecting host asked directly, with the real value --

    def direct(self, route: str, path: str) -> bytes:
        if route == "terminated":
            context = ssl.create_default_context(cafile=self.upstream_ca)
            sock = context.wrap_socket(
                socket.create_connection(("127.0.0.1", self.tls.port), timeout=10), server_hostname="tls.test"
            )
            return _send(sock, _request(path, "tls.test", f"Authorization: token {TOKEN}"))
        header = f"x-api-key: {KEY}" if route == "model" else f"Authorization: token {TOKEN}"
        return _send(
            socket.create_connection(("127.0.0.1", self.plain.port), timeout=10), _request(path, "reflect.test", header)
        )

    def lines(self) -> list[dict]:
        deadline = time.monotonic() + 5
        while not any(d.get("method") in ("GET", "CONNECT", "ROUTE") for d in read_log(self.log)):
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        time.sleep(0.1)  # the connection's line is written as it ends
        return read_log(self.log)


def _request(target: str, host: str, *headers: str) -> bytes:
    return ("\r\n".join([f"GET {target} HTTP/1.1", f"Host: {host}", *headers]) + "\r\n\r\n").encode()


def _send(sock: socket.socket, data: bytes) -> bytes:
    """Send `data`, read until the other side closes (or cuts the connection), or a response with a
    Content-Length is whole (a TLS tunnel ended at the proxy cannot pass the host's half-close on)."""
    out = b""
    with sock:
        sock.sendall(data)
        while not _whole(out):
            try:
                chunk = sock.recv(65536)
            except (ConnectionError, ssl.SSLError, TimeoutError):
                break
            if not chunk:
                break
            out += chunk
    return out


def decoded(reply: bytes) -> bytes:
    """A response as its client reads it: a chunked body put together again."""
    head, _, body = reply.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return reply
    out = b""
    while body:
        size, _, body = body.partition(b"\r\n")
        out, body = out + body[: int(size, 16)], body[int(size, 16) + 2 :]
    return head + b"\r\n\r\n" + out


def _whole(reply: bytes) -> bool:
    head, blank, body = reply.partition(b"\r\n\r\n")
    lengths = [line.split(b":", 1)[1] for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
    return bool(blank and lengths) and len(body) >= int(lengths[0])


@pytest.fixture
def setup(short_dir):
    made = Setup(short_dir)
    yield made
    made.close()


def value_of(route: str) -> str:
    return KEY if route == "model" else TOKEN


def variable_of(route: str) -> str:
    return "MODEL_KEY" if route == "model" else "GITHUB_TOKEN"


def refusal(setup: Setup, variable: str) -> dict:
    lines = setup.lines()
    assert TOKEN not in json.dumps(lines) and KEY not in json.dumps(lines), "the log names variables, never values"
    [line] = [d for d in lines if d["reason"] == "secret_in_response"]
    assert not line["allowed"] and variable in line["detail"]
    return line


@pytest.mark.parametrize("route", ["forward", "tunnel", "terminated", "model"])
@pytest.mark.parametrize("path", ["/header", "/body", "/split", "/chunked"])
def test_a_reflecting_bound_host_never_hands_the_real_value_back(setup, route, path):
    value = value_of(route).encode()
    assert value in decoded(setup.direct(route, path)), "control: the host does reflect the value"
    reply = getattr(setup, route)(path)
    assert value not in reply and value.lower() not in reply.lower()
    reflector = setup.tls if route == "terminated" else setup.plain
    assert any(value in r for r in reflector.requests[1:]), "the value was swapped in on the way out"
    refusal(setup, variable_of(route))


@pytest.mark.parametrize(
    "path, form",
    [
        ("/base64", lambda v: base64.b64encode(f"user:{v}".encode())),
        ("/percent", lambda v: urllib.parse.quote(v, safe="").encode()),
        ("/json", lambda v: v.replace("/", "\\/").encode()),
        ("/upper", lambda v: v.upper().encode()),
    ],
)
def test_a_reflected_value_is_caught_in_its_cheap_encodings(setup, path, form):
    direct = setup.direct("tunnel", path)
    assert form(TOKEN) in direct and TOKEN.encode() not in direct, "control: only the encoded form comes back"
    reply = setup.tunnel(path)
    assert form(TOKEN) not in reply and not reply.startswith(b"HTTP/1.1 200")
    refusal(setup, "GITHUB_TOKEN")


def test_a_compressed_body_from_a_bound_host_is_refused_unread(setup):
    """A host may compress though asked for identity; the search cannot read gzip, so it does not pass."""
    import gzip

    direct = setup.direct("tunnel", "/gzip")
    assert TOKEN.encode() in gzip.decompress(direct.split(b"\r\n\r\n", 1)[1]), "control: the value is in there"
    reply = setup.terminated("/gzip")
    assert b"\x1f\x8b" not in reply and not reply.startswith(b"HTTP/1.1 200")
    [line] = [d for d in setup.lines() if not d["allowed"]]
    assert line["reason"] == "unreadable_response" and "gzip" in line["detail"]


def test_an_echo_cut_short_inside_the_value_is_refused(setup):
    assert TOKEN[:12].encode() in setup.direct("tunnel", "/ends-cut")
    assert TOKEN[:12].encode() not in setup.terminated("/ends-cut")
    assert "cut short" in refusal(setup, "GITHUB_TOKEN")["detail"]


def test_a_response_ending_in_a_few_characters_of_the_value_is_let_go_after_a_pause(setup):
    """A response may end in the first characters of a value by chance; a client reading by length gets them
    (after RELEASE_AFTER) though the host keeps the connection open."""
    sock, _ = connect_tunnel(setup.untrusted.tcp_address, f"reflect.test:{setup.plain.port}")
    started = time.monotonic()
    with sock:
        sock.sendall(
            _request("/prefix-then-wait", f"reflect.test:{setup.plain.port}", f"Authorization: token {TOKEN_PH}")
        )
        reply = b""
        while not reply.endswith(f"ok {TOKEN[:3]}".encode()):
            reply += sock.recv(65536)
    assert time.monotonic() - started < 2.5, "not held until the host closed"


def test_requests_to_a_bound_host_ask_for_an_identity_encoded_response(setup):
    """What comes back must be readable to be scanned: no gzip or br body, no transfer coding but chunked."""
    setup.forward("/body", "Accept-Encoding: gzip, br", "TE: gzip")
    [request] = setup.plain.requests
    assert b"Accept-Encoding: identity\r\n" in request and b"gzip" not in request and b"TE:" not in request


def test_a_bound_hosts_response_without_the_value_comes_back_whole(setup):
    reply = setup.terminated("/body", "X-Other: 1")  # no credential sent, so none reflected
    assert reply.startswith(b"HTTP/1.1 200 OK") and b'"x-other": "1"' in reply
    assert all(d["allowed"] for d in setup.lines())


# -- the Scrubber on its own --

FORMS = Forms([("GITHUB_TOKEN", TOKEN), ("MODEL_KEY", KEY)])


def scrub(pieces: list[bytes], *methods: str) -> bytes:
    """What the client would get for `pieces` read one after the other (responses to requests of `methods`,
    or no HTTP without); raises Seen."""
    scrubber = Scrubber(FORMS, deque(methods) if methods else None)
    return b"".join(scrubber.feed(p) for p in pieces) + scrubber.end()


def test_a_value_split_at_any_byte_between_two_reads_is_seen():
    body = b'{"headers": {"Authorization": "token ' + TOKEN.encode() + b'"}}'
    start = body.index(TOKEN.encode())
    for cut in range(1, start + len(TOKEN)):  # the value whole only in the second read
        scrubber = Scrubber(FORMS)
        first = scrubber.feed(body[:cut])
        with pytest.raises(Seen):
            scrubber.feed(body[cut:])
        assert TOKEN[: SHORT_HOLD + 1].encode() not in first


def test_a_value_split_across_two_chunks_at_any_byte_is_seen():
    body = b"say " + TOKEN.encode() + b" again"
    for cut in range(1, len(body)):
        framed = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (
            cut,
            body[:cut],
            len(body) - cut,
            body[cut:],
        )
        for read in (len(framed), 7, 1):  # one read, and reads cut anywhere in the framing
            with pytest.raises(Seen, match="GITHUB_TOKEN"):
                scrub([framed[i : i + read] for i in range(0, len(framed), read)], "GET")


@pytest.mark.parametrize("user", ["", "u", "us", "x-access-token"])
def test_base64_of_user_and_value_is_seen_at_every_alignment(user):
    with pytest.raises(Seen, match=r"GITHUB_TOKEN \(as is, base64\)"):
        scrub([b"Basic " + base64.b64encode(f"{user}:{TOKEN}".encode())])
    with pytest.raises(Seen, match="base64"):
        scrub([base64.urlsafe_b64encode(f"{user}:{TOKEN}".encode())])


def test_a_value_that_is_a_basic_credential_is_seen_decoded_too():
    basic = base64.b64encode(b"someone:an-actual-password-99").decode()
    forms = Forms([("BASIC", basic)])
    for text in (b"someone:an-actual-password-99", b"pw=an-actual-password-99"):
        with pytest.raises(Seen, match="decoded from base64"):
            Scrubber(forms).feed(text)


def test_a_response_ending_in_the_start_of_a_value_gives_those_bytes_only_when_short():
    assert scrub([b"fine: " + TOKEN[:SHORT_HOLD].encode()]) == b"fine: " + TOKEN[:SHORT_HOLD].encode()
    with pytest.raises(Seen, match="cut short"):
        scrub([b"fine: " + TOKEN[: SHORT_HOLD + 1].encode()])


def test_a_coded_body_is_refused_only_from_where_a_secret_is_bound():
    coded = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00"
    assert Scrubber(FORMS, deque(["GET"])).feed(coded) == coded
    with pytest.raises(Unreadable, match="gzip"):
        Scrubber(FORMS, deque(["GET"]), bound=True).feed(coded)
    bodiless = b"HTTP/1.1 304 Not Modified\r\nContent-Encoding: gzip\r\n\r\n"
    assert Scrubber(FORMS, deque(["GET"]), bound=True).feed(bodiless) == bodiless


def test_a_short_tail_let_go_on_the_timer_still_closes_when_the_value_completes():
    scrubber = Scrubber(FORMS)
    assert scrubber.feed(b"x " + TOKEN[:3].encode()) == b"x "
    assert scrubber.short() and scrubber.release() == TOKEN[:3].encode()
    with pytest.raises(Seen):
        scrubber.feed(TOKEN[3:].encode())


def _clean(data: bytes) -> bool:
    return b"ghs_" not in data.lower() and b"sk-ant" not in data.lower()


# text around a value: random bytes, and bits of chunked framing (hex digits on lines of their own)
_CLEAN = st.one_of(
    st.binary(max_size=3000),
    st.lists(
        st.sampled_from([b"\r\n", b"\n", b"\r", b"0", b"5", b"1e", b"a", b";", b" ", b"x", b"ok"]), max_size=40
    ).map(b"".join),
).filter(_clean)


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


def chunked(data: bytes, cuts: list[int]) -> bytes:
    """A response with `data` as its chunked body, cut into chunks at `cuts`."""
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces(data, cuts) if p) + b"0\r\n\r\n"
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_CLEAN,
    cuts=st.lists(st.integers(0, 3000), max_size=8),
    chunks=st.none() | st.lists(st.integers(0, 3000), max_size=4),
)
def test_a_stream_without_the_values_comes_through_byte_for_byte(data, cuts, chunks):
    if chunks is None:
        assert scrub(pieces(data, cuts)) == data
    else:
        assert scrub(pieces(chunked(data, chunks), cuts), "GET") == chunked(data, chunks)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=_CLEAN,
    after=_CLEAN,
    form=st.sampled_from([t for t, _, _ in FORMS.items]),
    reads=st.lists(st.integers(0, 7000), max_size=8),
    chunks=st.none() | st.lists(st.integers(0, 7000), max_size=4),
)
def test_a_stream_holding_a_value_never_hands_it_over(before, after, form, reads, chunks):
    data = before + form + after
    if chunks is not None:
        data = chunked(data, chunks)
    scrubber, out = Scrubber(FORMS, deque(["GET"]) if chunks is not None else None), b""
    with pytest.raises(Seen):
        for piece in pieces(data, reads):
            out += scrubber.feed(piece)
            if scrubber.short():
                out += scrubber.release()  # the timer's worst case: every short tail let go
        out += scrubber.end()
    assert form[: SHORT_HOLD + 1] not in out.lower()


# -- following the framing of responses --


def text_of(stream: bytes, *methods: str, read: int = 0) -> bytes:
    """The text the scrub searches in `stream` (responses to requests of `methods`), fed `read` bytes at a time."""
    responses, text = Responses(deque(methods)), b""
    for at in range(0, len(stream), read or len(stream)):
        data = stream[at : at + (read or len(stream))]
        text += b"".join(data[a:b] for a, b, is_text in responses.split(data) if is_text)
    return text


def test_the_text_of_a_chunked_body_is_its_chunks_put_together_whatever_the_reads():
    stream = chunked(b"say " + TOKEN.encode() + b" again", [3, 9, 20])
    for read in (0, 1, 2, 7):
        assert text_of(stream, "GET", read=read).endswith(b"\r\n\r\nsay " + TOKEN.encode() + b" again\r\n")


def test_what_only_looks_like_framing_in_a_body_is_text():
    body = b"\r\n5\r\nhello\r\n0\r\n\r\n"  # a chunked body, as the content of a Content-Length one
    stream = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    assert text_of(stream, "GET") == stream


def test_interim_head_and_bodiless_responses_keep_the_framing_in_step():
    stream = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"  # to a HEAD: no body follows
        b"HTTP/1.1 304 Not Modified\r\n\r\n" + chunked(b"xyz", [1])
    )
    assert text_of(stream, "POST", "HEAD", "GET", "GET").endswith(b"\r\n\r\nxyz\r\n")


def test_a_stream_the_framing_cannot_follow_is_searched_as_it_is():
    switched = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\r\n5\r\nab"
    assert text_of(switched, "GET") == switched
    assert text_of(b"SSH-2.0-x\r\n\r\n1\r\n", "GET") == b"SSH-2.0-x\r\n\r\n1\r\n"
