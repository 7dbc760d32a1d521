"""Where the text is in a stream of HTTP/1.x responses: status lines, header lines and body data, apart
from the framing around them (chunk-size lines, the CRLF after each chunk).

The scrub of what comes back (scrub.py) searches the text only, so a value a host writes across two
chunks of a chunked body is one string again. Framing is followed exactly as a client would follow it,
never guessed from the bytes: a body holding something that looks like a chunk-size line is body text.
That needs the method of each request the responses answer (a HEAD response has no body), which the
proxy knows: it forwarded them (`request`).

Responses come from the upstream, which the sandbox does not control (only what a host reflects into
them). A stream this cannot follow (no status line, a bad chunk-size line, a 101 switch to another
protocol) is text from there on: every byte is searched as it is.

`encoded` names the coding of the last response whose body is content- or transfer-coded (gzip, br ...):
a search cannot read into it, so the scrub refuses it from where a secret is bound.
"""

from __future__ import annotations

import re
from collections import deque

__all__ = ["Responses"]

_HEAD_MAX = 1 << 16
_LINE_MAX = 1024
_STATUS = re.compile(rb"HTTP/1\.[01] ([0-9]{3})(?: [^\r\n]*)?")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})(?:;[^\r\n]*)?")


class Responses:
    """Fed the stream as it comes; `split(data)` says which parts of `data` are text."""

    def __init__(self, methods: deque | None):
        self.methods = methods  # of the requests sent and not yet answered; None: not HTTP, all text
        self.state = "head" if methods is not None else "text"
        self.left = 0  # bytes left of the body or chunk
        self.line = bytearray()  # the head, chunk-size line or trailer line being read
        self.encoded = ""  # the coding of a body that is not as it is (see the module docstring)

    def split(self, data: bytes) -> list[tuple[int, int, bool]]:
        """(start, end, is_text) spans covering `data`, in order."""
        spans: list[tuple[int, int, bool]] = []
        at = 0
        while at < len(data):
            end, text = self._step(data, at)
            if spans and spans[-1][2] == text and spans[-1][1] == at:
                spans[-1] = (spans[-1][0], end, text)
            else:
                spans.append((at, end, text))
            at = end
        return spans

    def _step(self, data: bytes, at: int) -> tuple[int, bool]:
        state = self.state
        if state == "text":
            return len(data), True
        if state in ("body", "data"):
            end = min(len(data), at + self.left)
            self.left -= end - at
            if not self.left:
                self.state = "head" if state == "body" else "crlf"
            return end, True
        if state == "head":
            return self._line(data, at, b"\r\n\r\n", _HEAD_MAX, self._head, text=True)
        if state == "size":
            return self._line(data, at, b"\r\n", _LINE_MAX, self._size, text=False)
        if state == "crlf":  # the two bytes after a chunk's data
            end = min(len(data), at + 2 - len(self.line))
            self.line += data[at:end]
            if len(self.line) == 2:
                self.state, self.line = ("size" if self.line == b"\r\n" else "text"), bytearray()
            return end, False
        return self._line(data, at, b"\r\n", _HEAD_MAX, self._trailer, text=True)  # "trailers"

    def _line(self, data: bytes, at: int, end_with: bytes, limit: int, then, text: bool) -> tuple[int, bool]:
        """Take bytes into the line being read, up to and with `end_with`; at its end `then(line)` sets the next
        state. A line longer than `limit` is none a response has: the stream is text from there on."""
        searched = max(0, len(self.line) - len(end_with) + 1)
        before = len(self.line)
        piece = data[at : at + limit + len(end_with) - before]
        self.line += piece
        found = self.line.find(end_with, searched)
        if found < 0:
            if len(self.line) >= limit + len(end_with):
                self.state, self.line = "text", bytearray()
            return at + len(piece), text
        size = found + len(end_with)
        line, self.line = bytes(self.line[:size]), bytearray()
        then(line)
        return at + size - before, text

    def _head(self, head: bytes) -> None:
        lines = head[:-4].split(b"\r\n")
        status = _STATUS.fullmatch(lines[0])
        if not status:
            self.state = "text"
            return
        code = int(status.group(1))
        if code == 101 or not self.methods:  # another protocol, or an answer to nothing the proxy sent
            self.state = "text"
            return
        if 100 <= code < 200:  # an interim response: the final one follows, for the same request
            self.state = "head"
            return
        method = self.methods.popleft()
        fields = [line.partition(b":") for line in lines[1:]]
        codings = [
            c.strip().lower() for k, _, v in fields if k.strip().lower() == b"transfer-encoding" for c in v.split(b",")
        ]
        lengths = {v.strip() for k, _, v in fields if k.strip().lower() == b"content-length"}
        if method == "HEAD" or code in (204, 304):
            self.state = "head"
        elif method == "CONNECT" and code < 300:
            self.state = "text"
        elif codings:
            self.state = "size" if codings[-1] == b"chunked" else "text"  # else: read until the end
        elif len(lengths) == 1 and (n := lengths.pop()).isdigit():
            self.state, self.left = ("body", int(n)) if int(n) else ("head", 0)
        else:
            self.state = "text"  # no length: the body runs to the end of the connection
        if self.state != "head":
            content = [
                c.strip().lower()
                for k, _, v in fields
                if k.strip().lower() == b"content-encoding"
                for c in v.split(b",")
            ]
            coded = [c for c in content + codings if c not in (b"", b"identity", b"chunked")]
            self.encoded = b", ".join(coded).decode("latin-1")

    def _size(self, line: bytes) -> None:
        size = _CHUNK_SIZE.fullmatch(line[:-2])
        if not size:
            self.state = "text"
        elif int(size.group(1), 16):
            self.state, self.left = "data", int(size.group(1), 16)
        else:
            self.state = "trailers"

    def _trailer(self, line: bytes) -> None:
        if line == b"\r\n":
            self.state = "head"
