"""Real loopback servers and clients for the egress proxy tests: nothing here is a mock of the network.

An Origin counts every connection it accepts and every byte it receives, so a test can assert that a
denied request never reached it (zero connections) or that a refused message never got through
(zero bytes).
"""

from __future__ import annotations

import json
import os
import select
import socket
import ssl
import subprocess
import threading
import time

__all__ = ["Origin", "Reflector", "exchange", "client_hello", "read_log", "wait_log", "self_signed", "connect_tunnel"]


class Origin:
    """A loopback TCP server: `http` answers one request, then counts what else arrives until EOF;
    `echo` echoes until EOF; `line` echoes one line and closes.

    With `tls` (a server SSLContext) it does the TLS handshake first, then the same.
    """

    def __init__(self, mode: str = "http", tls: ssl.SSLContext | None = None, name: str = "origin"):
        self.mode, self.tls, self.name = mode, tls, name
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.received = 0
        self.requests: list[bytes] = []
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._active = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                select.select([self.sock], [], [])
                with self._lock:
                    self._active += 1  # counted while still queued, so settle() cannot miss it
                conn, _ = self.sock.accept()
            except (OSError, ValueError):
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            if self.mode == "line":
                line = conn.makefile("rb").readline()
                self._count(line)
                conn.sendall(line)
                return
            if self.mode == "echo":
                while data := conn.recv(65536):
                    self._count(data)
                    conn.sendall(data)
                return
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(65536)
                if not data:
                    return
                self._count(data)
                head += data
            self.requests.append(head)
            host = next(
                (line.split(b":", 1)[1].strip() for line in head.split(b"\r\n") if line.lower().startswith(b"host:")),
                b"-",
            )
            body = b"%s host=%s line=%s\n" % (self.name.encode(), host, head.split(b"\r\n", 1)[0])
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            if self.tls is None:
                conn.shutdown(socket.SHUT_WR)
            while data := conn.recv(65536):  # whatever else arrives (a body, a smuggled request) is counted
                self._count(data)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()
            with self._done:
                self._active -= 1
                self._done.notify_all()

    def settle(self, timeout: float = 5.0) -> "Origin":
        """Wait until every accepted connection has been served to its end, so the counts are final."""

        def quiet() -> bool:
            return self._active == 0 and not select.select([self.sock], [], [], 0)[0]

        with self._done:
            self._done.wait_for(quiet, timeout)
        return self

    def _count(self, data: bytes) -> None:
        with self._lock:
            self.received += len(data)

    def close(self) -> None:
        self.sock.close()


class Reflector:
    """A loopback HTTP server that hands the request's credential back, as header-echo endpoints do (httpbin's
    /headers, an error page quoting what it got). The path says how; the credential is the value of the
    request's Authorization (or x-api-key) header without its scheme word:

    /header     in a response header          /body      in a JSON body, as httpbin does
    /split      in a JSON body written twice, cut inside the value, with a pause between
    /chunked    in a chunked body, each chunk written apart, the chunk boundary inside the value
    /base64     base64 of `user:credential`    /percent   percent-encoded    /json   JSON with `\\/`
    /upper      upper-cased                    /gzip      in a gzip body, whatever Accept-Encoding says
    /prefix-then-wait  a body ending in the credential's first 3 characters; the connection then stays open
    /ends-cut   a body ending in the credential's first 12 characters (an echo cut short)

    Each connection takes one request and is closed after its response (after a pause for /prefix-then-wait).
    """

    def __init__(self, tls: ssl.SSLContext | None = None, pause: float = 0.3):
        self.tls, self.pause = tls, pause
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(65536)
                if not data:
                    return
                head += data
            self.requests.append(head)
            lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            credential = (fields.get("authorization") or fields.get("x-api-key") or "").split(" ")[-1]
            for part in self._answer(lines[0].split(" ")[1], fields, credential):
                if isinstance(part, float):
                    time.sleep(part)
                else:
                    conn.sendall(part)
            if self.tls is None:
                conn.shutdown(socket.SHUT_WR)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def _answer(self, path: str, fields: dict, credential: str) -> list:
        import base64
        import urllib.parse

        def whole(body: str, *extra: str) -> list:
            data = body.encode()
            head = "".join(f"{h}\r\n" for h in extra)
            return [
                f"HTTP/1.1 200 OK\r\n{head}Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data
            ]

        mid = len(credential) // 2
        if path == "/header":
            return whole("ok", f"X-Seen-Credential: {credential}")
        if path == "/body":
            return whole(json.dumps({"headers": fields}))
        if path == "/split":
            [reply] = whole(json.dumps({"credential": credential}))
            cut = reply.index(credential.encode()) + mid
            return [reply[:cut], self.pause, reply[cut:]]
        if path == "/chunked":
            body = json.dumps({"credential": credential}).encode()
            cut = body.index(credential.encode()) + mid
            return [
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                b"%x\r\n%s\r\n" % (cut, body[:cut]),
                self.pause,
                b"%x\r\n%s\r\n" % (len(body) - cut, body[cut:]),
                b"0\r\n\r\n",
            ]
        if path == "/base64":
            return whole(base64.b64encode(f"user:{credential}".encode()).decode())
        if path == "/percent":
            return whole(urllib.parse.quote(credential, safe=""))
        if path == "/json":
            return whole(json.dumps({"credential": credential}).replace("/", "\\/"))
        if path == "/upper":
            return whole(credential.upper())
        if path == "/gzip":
            import gzip

            data = gzip.compress(json.dumps({"credential": credential}).encode())
            return [
                b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                % (len(data), data)
            ]
        if path == "/prefix-then-wait":
            return [*whole(f"ok {credential[:3]}"), 3.0]
        if path == "/ends-cut":
            return whole(f"ok {credential[:12]}")
        return whole("unknown path")

    def close(self) -> None:
        self.sock.close()


def exchange(address, data: bytes, timeout: float = 10.0) -> bytes:
    """Send `data` to the proxy (a (host, port) or a unix socket path) and read until it closes."""
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(address)
        sock.sendall(data)
        out = b""
        while chunk := _recv(sock):
            out += chunk
        return out


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except ConnectionResetError:
        return b""


def connect_tunnel(address, target: str, timeout: float = 10.0) -> tuple[socket.socket, bytes]:
    """Open a CONNECT tunnel; (socket, the proxy's reply head)."""
    sock = socket.create_connection(address, timeout=timeout)
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = sock.recv(4096)
        if not chunk:
            break
        reply += chunk
    return sock, reply


def client_hello(server_name: str | None) -> bytes:
    """The bytes of a real TLS ClientHello, made by the ssl module in memory (no network)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_name)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def read_log(path) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f]


def wait_log(path, n: int = 1, timeout: float = 5.0) -> list[dict]:
    """The decision lines once there are at least n: a line is written when its connection ends, which
    can be just after the client has had its answer."""
    deadline = time.monotonic() + timeout
    while len(lines := read_log(path)) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    return lines


def self_signed(folder, name: str) -> ssl.SSLContext | None:
    """A server context with a self-signed certificate for `name` (None when openssl is missing)."""
    cert, key = os.path.join(folder, f"{name}.crt"), os.path.join(folder, f"{name}.key")
    try:
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-days",
                "1",
                "-subj",
                f"/CN={name}",
                "-addext",
                f"subjectAltName=DNS:{name}",
                "-keyout",
                key,
                "-out",
                cert,
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context
