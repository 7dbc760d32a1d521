"""What comes back from an upstream: the real value of a secret never reaches the sandbox.

The proxy swaps a run's real credentials into requests (swap.py). A host that reflects request headers
(an echo endpoint such as httpbin's /headers, an error page quoting the Authorization header it got)
would hand the value straight back. So while a run has a secret, every byte an upstream sends that the
proxy can read (the model route, plain requests, plaintext tunnels, TLS tunnels ended here, fixed
routes) passes a Scrubber before the client gets it.

Rule: a real value seen on the way back refuses the response. Both sides are closed at once, and the
connection's decision-log line says which variable (never the value). The value is not replaced by its
placeholder: the two differ in length, so a replacement would break Content-Length and chunk sizes,
and the encoded forms below have no placeholder that could stand in for them. From where a secret is
bound (a bound host, the model route) a body the search cannot read (gzip, br: a content or transfer
coding) is refused the same way (`unreadable_response`); requests there ask for `identity` (swap.py),
so an honest host sends none.

What is looked for, case-insensitively (a host may change the case of what it quotes), for each value:
the value; percent-encoded (as quote, quote_plus and encodeURIComponent write it); JSON-escaped
(also with `\\/`); HTML-escaped; hex; base64 and base64url of any text that holds the value, at each of
the three alignments (this catches the Basic credential `user:value` and any other base64 around the
value); and for a value that is itself base64 of `user:password`, the decoded text and the password.
Derived forms shorter than MIN_FORM are not looked for (they would turn up by chance).

Across reads: the scrubber holds back the longest tail of what it has that could still begin a form,
so a value split over two writes, TCP segments or TLS records is seen whole. It searches the text of
the responses only (responses.py follows their framing exactly), so a value split across two chunks of
a chunked body is seen whole too. A held tail of at most SHORT_HOLD characters is let go after
RELEASE_AFTER seconds without more data (a response may simply end in them; a client waiting for its
last bytes must get them); the bytes stay in the search, so a value completed later still closes the
connection, and the client has had at most SHORT_HOLD characters of it. A longer held tail is let go
only once more data shows it is no form; if the stream ends on it, it is refused as the value.

Not caught (see the README): compressed data inside an identity body (a .gz or .zip file holding the
value); a coded body from a host no secret is bound to (that got the value some other way); a host
that transforms the value otherwise (other encodings, base64 wrapped over lines, double encoding,
encryption, hashing, reversal, its characters apart); a host that returns only part of the value (a
byte Range of a reflecting page, an echo cut short: only a cut in the value's first characters ends on
a held tail, which is refused); and a value a host keeps and serves back later over TLS the proxy does
not end (a tunnel to a host no secret is bound to).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import bisect
import html
import json
import re
from collections import deque
from typing import Iterable
from urllib.parse import quote, quote_plus

from agentbox.egress.responses import Responses
from agentbox.egress.streams import CHUNK, Idle, Tally, half_close

__all__ = [
    "Forms",
    "Scrubber",
    "Refusal",
    "Seen",
    "Unreadable",
    "scrubbed_pump",
    "MIN_FORM",
    "SHORT_HOLD",
    "RELEASE_AFTER",
]

MIN_FORM = 8  # a derived form shorter than this is not looked for
SHORT_HOLD = 4  # a held tail this short may be let go on a timer
RELEASE_AFTER = 0.1  # seconds without more data before a short held tail is let go


class Refusal(Exception):
    """What comes back is refused: `reason` for the decision log."""

    reason = "secret_in_response"


class Seen(Refusal):
    """A real value (or a form of it) came back."""

    def __init__(self, variable: str, form: str):
        super().__init__(f"it carried the real value of {variable} ({form})")
        self.variable, self.form = variable, form


class Unreadable(Refusal):
    """A body from where a secret is bound that the search cannot read."""

    reason = "unreadable_response"

    def __init__(self, coding: str):
        super().__init__(f"its body is {coding}-coded, which the search for the run's secrets cannot read")


class Forms:
    """Every form looked for, lower-cased, with its variable and how it is written; made once per run."""

    def __init__(self, secrets: Iterable[tuple[str, str]]):
        found: dict[bytes, tuple[str, str]] = {}
        for variable, value in secrets:
            for form, text in _forms(value):
                found.setdefault(text.lower(), (variable, form))
        self.items = tuple((text, variable, form) for text, (variable, form) in found.items())

    def __bool__(self) -> bool:
        return bool(self.items)


def _forms(value: str) -> list[tuple[str, bytes]]:
    texts = [("as is", value), *_inside_basic(value)]
    out: list[tuple[str, bytes]] = []
    for how, text in texts:
        data = text.encode("utf-8")
        out.append((how, data))
        out += [
            (f"{how}, percent-encoded", q.encode())
            for q in (
                quote(text, safe=""),
                quote(text, safe="/"),
                quote_plus(text, safe=""),
                quote(text, safe="!~*'()"),
            )
        ]
        out += [(f"{how}, JSON-escaped", j) for j in _json(text)]
        out.append((f"{how}, HTML-escaped", html.escape(text).encode()))
        out.append((f"{how}, hex", data.hex().encode()))
        for core in _base64_cores(data):
            out += [
                (f"{how}, base64", core),
                (f"{how}, base64, percent-encoded", quote(core.decode(), safe="").encode()),
            ]
    out += [(f"{how}, JSON-escaped", text.replace(b"/", b"\\/")) for how, text in out if b"/" in text]
    return [(how, text) for how, text in out if how == "as is" or len(text) >= MIN_FORM]


def _json(text: str) -> set[bytes]:
    return {json.dumps(text)[1:-1].encode(), json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")}


def _base64_cores(data: bytes) -> list[bytes]:
    """The part of the base64 of any text holding `data` that depends on `data` alone, for each of the three
    offsets `data` can have in it, in both alphabets: the group that mixes in what comes before is dropped,
    and so is a last group that what follows would complete."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data)
        core = encoded[4 if offset else 0 : 4 * ((offset + len(data)) // 3)]
        if core:
            cores += [core, core.translate(bytes.maketrans(b"+/", b"-_"))]
    return cores


def _inside_basic(value: str) -> list[tuple[str, str]]:
    """A value that is base64 of `user:password` (a whole Basic credential): the text and the password."""
    if not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", value) or len(value) % 4:
        return []
    try:
        text = base64.b64decode(value, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return []
    if ":" not in text or not text.isprintable():
        return []
    return [("decoded from base64", text), ("the password decoded from base64", text.split(":", 1)[1])]


class Scrubber:
    """One upstream -> client stream: feed it what the upstream sent, forward what it gives back.

    `methods`: the methods of the requests forwarded on the stream, appended as each goes (responses.py);
    None for a stream that is not HTTP (a fixed route), searched as it is. Raw bytes not forwarded yet are
    `held` (from stream offset `held_at`); `tail` is the end of the text that may still begin a form (it may
    start in bytes already forwarded, after a timed release), `tail_at` where its pieces start (text index,
    stream offset). All three stay shorter than the longest form."""

    def __init__(self, forms: Forms, methods: deque | None = None, bound: bool = False):
        self.forms, self.responses, self.bound = forms, Responses(methods), bound  # bound: see Unreadable
        self.fed = 0  # stream offset of the next byte
        self.held, self.held_at = b"", 0
        self.tail = b""
        self.tail_at: tuple[list[int], list[int]] = ([], [])
        self.partial = 0  # characters of a form at the end of the text (0: nothing held)
        self.partial_of: tuple[str, str] | None = None  # its (variable, form)

    def feed(self, data: bytes) -> bytes:
        """The bytes that may go to the client now; raises Seen."""
        text, (at_text, at_raw) = self.tail, (list(self.tail_at[0]), list(self.tail_at[1]))
        for start, end, is_text in self.responses.split(data):
            if is_text:
                at_text.append(len(text))
                at_raw.append(self.fed + start)
                text += data[start:end].lower()
        self.fed += len(data)
        if self.bound and self.responses.encoded:
            raise Unreadable(self.responses.encoded)
        for form, variable, how in self.forms.items:
            if form in text:
                raise Seen(variable, how)
        self.partial, self.partial_of = _longest_start(text, self.forms)
        keep = len(text) - self.partial
        hold = _raw((at_text, at_raw), keep) if self.partial else self.fed
        self.tail, self.tail_at = text[keep:], (_rebased((at_text, at_raw), keep) if self.partial else ([], []))
        pending = self.held + data
        cut = max(0, hold - self.held_at)
        self.held, self.held_at = pending[cut:], self.held_at + cut
        return pending[:cut]

    def short(self) -> bool:
        """Is a held tail waiting that the timer may let go?"""
        return bool(self.held) and self.partial <= SHORT_HOLD

    def release(self) -> bytes:
        """The held bytes, let go (their text stays searched: see the module docstring)."""
        out, self.held, self.held_at = self.held, b"", self.held_at + len(self.held)
        return out

    def end(self) -> bytes:
        """The upstream finished: the rest, unless it ends in more than SHORT_HOLD characters of a form."""
        if self.partial > SHORT_HOLD:
            assert self.partial_of is not None  # set together with a nonzero partial
            variable, form = self.partial_of
            raise Seen(variable, f"{form}, cut short at the end of the response")
        return self.release()


def _raw(pieces: tuple[list[int], list[int]], index: int) -> int:
    """The stream offset of a character of the text."""
    at_text, at_raw = pieces
    k = bisect.bisect_right(at_text, index) - 1  # the piece holding that character
    return at_raw[k] + index - at_text[k]


def _rebased(pieces: tuple[list[int], list[int]], keep: int) -> tuple[list[int], list[int]]:
    """The pieces of text[keep:] (`keep` is at most the text's length)."""
    at_text, at_raw = pieces
    k = bisect.bisect_right(at_text, keep) - 1
    if k < 0:
        return [], []
    starts = [0] + [t - keep for t in at_text[k + 1 :]]
    raws = [at_raw[k] + keep - at_text[k]] + at_raw[k + 1 :]
    return starts, raws


def _longest_start(text: bytes, forms: Forms) -> tuple[int, tuple[str, str] | None]:
    """The length of the longest end of `text` that a form begins with (whole forms were looked for already,
    so it is shorter than its form), and that form's (variable, how)."""
    best, of, end = 0, None, len(text)
    for form, variable, how in forms.items:
        first = form[:1]
        at = text.find(first, max(0, end - len(form) + 1))
        while 0 <= at and end - at > best:
            if form.startswith(text[at:]):
                best, of = end - at, (variable, how)
                break
            at = text.find(first, at + 1)
    return best, of


async def scrubbed_pump(
    reader, writer: asyncio.StreamWriter, idle: Idle, tally: Tally, scrubber: Scrubber, on_refused
) -> None:
    """As streams.pump, through `scrubber`; a refusal (a value seen) calls `on_refused(Refusal)` and stops the
    copy (the caller closes both sides: nothing after it is forwarded, not even what came before it in the
    same read)."""
    try:
        while True:
            if scrubber.short():
                try:
                    async with asyncio.timeout(RELEASE_AFTER):
                        data = await reader.read(CHUNK)
                except TimeoutError:
                    _send(writer, tally, idle, scrubber.release())
                    continue
            else:
                data = await reader.read(CHUNK)
            if writer.is_closing():
                return
            if not data:
                _send(writer, tally, idle, scrubber.end())
                break
            _send(writer, tally, idle, scrubber.feed(data))
            if writer.transport.get_write_buffer_size() > CHUNK:
                await writer.drain()
    except Refusal as refusal:
        on_refused(refusal)
        return
    except (ConnectionError, OSError):
        pass
    half_close(writer)


def _send(writer, tally: Tally, idle: Idle, data: bytes) -> None:
    if data:
        writer.write(data)
        tally.n += len(data)
    idle.touch()
