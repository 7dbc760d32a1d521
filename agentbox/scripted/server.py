"""ScriptedModel: the stand-in for the remote model API, a real HTTP server on 127.0.0.1.

The listening socket is bound in start() before it returns, so callers never wait or poll for
readiness. Requests are served on threads; every request becomes a transcript record.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Mapping

from agentbox.compile.adapters.base import ToolVocabulary
from agentbox.scripted.responder import respond
from agentbox.scripted.scenario import Scenario, load_scenario, load_vocabulary
from agentbox.scripted.script import Script
from agentbox.scripted.transcript import Record, ToolResult, Transcript

# Where the wire APIs carry a key: Anthropic's x-api-key, a bearer token, Azure's api-key
_KEY_HEADERS = ("x-api-key", "authorization", "api-key")

__all__ = ["ScriptedModel"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: Node and Rust clients reuse connections
    # A response is written in pieces (the head, then the body or one chunk per SSE event). With Nagle's
    # algorithm on, each piece after the first waits for the client's delayed ACK: 40 ms a piece on loopback,
    # which made every model answer (and each of Hermes's five start-up probes of a local server) slow.
    disable_nagle_algorithm = True
    server_version = "agentbox-scripted/1"
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # the transcript is the log
        pass

    def do_GET(self) -> None:
        self._serve(b"")

    def do_POST(self) -> None:
        self._serve(self._body())

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self, raw: bytes) -> None:
        model = self.server.model
        credential = model.credential_of(self.headers)
        # A real API refuses a wrong key before it reads anything else (a placeholder that was never swapped is
        # one); a request with no key at all is answered and recorded as such, for tests that just ask the model
        if credential == "other":
            body = json.dumps({"error": {"type": "authentication_error", "message": "invalid x-api-key"}}).encode()
            model._append(
                Record(
                    wire_api=None,
                    method=self.command,
                    path=self.path,
                    model=None,
                    stream=False,
                    tools_offered=(),
                    tool_results=(),
                    side=True,
                    step_index=None,
                    emitted=None,
                    credential=credential,
                )
            )
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        answer = respond(
            model._script, self.command, self.path, raw, self.headers.get("Content-Encoding"), model.models
        )
        if credential is not None:
            answer.record = dataclasses.replace(answer.record, credential=credential)
        if model.before_reply is not None and not answer.record.side and answer.record.emitted is not None:
            # before the harness has the next step (or the closing words), so that what the steps before it did
            # is settled: a batched session looks at its shared folders here (agentbox.testing.batch)
            model.before_reply(answer.record.step_index)
        model._append(answer.record)
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        if isinstance(answer.body, bytes):
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
            return
        self.send_header("Cache-Control", "no-cache")
        chunked = self.request_version != "HTTP/1.0"  # 1.0 clients get the stream up to connection close
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.close_connection = True
        self.end_headers()
        try:
            for event in answer.body:  # one HTTP chunk per SSE event: a real stream, flushed as it goes
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event) if chunked else event)
                self.wfile.flush()
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the harness hung up mid-stream (cancelled, killed): not our error


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], model: "ScriptedModel"):
        self.model = model
        self.connections: set[socket.socket] = set()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.model._lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.model._lock:
            self.connections.discard(request)
        super().shutdown_request(request)


class ScriptedModel:
    """Answers Anthropic Messages, OpenAI Responses and Chat Completions from a loaded scenario."""

    def __init__(
        self,
        scenario: Scenario | Mapping[str, Any] | str | Path | None = None,
        vocabulary: ToolVocabulary | Mapping[str, Any] | str | Path | None = None,
        host: str = "127.0.0.1",
        models: tuple[str, ...] = ("scripted",),
        key: str | None = None,
    ):
        self.host = host
        self.models = tuple(models)
        # With a key, the model refuses requests that carry another (401, as a real API does) and records what
        # each carried: a harness in the sandbox holds a placeholder, so a request answered with "real" there
        # proves the egress proxy swapped the key in.
        self.key = key
        self._lock = threading.Lock()
        self._records: list[Record] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._script = Script(Scenario(), None)
        # called with the step about to be sent (None: the closing words) on each main-loop reply, before it is sent
        self.before_reply: Callable[[int | None], None] | None = None
        if scenario is not None:
            self.load(scenario, vocabulary)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "ScriptedModel":
        if self._server is not None:
            return self
        self._server = _Server((self.host, 0), self)  # bound and listening when this returns
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-model-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        with self._lock:  # wake handlers idling on keep-alive connections so no thread outlives us
            for conn in list(server.connections):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        server.server_close()
        if thread is not None:
            thread.join()
        self._server = self._thread = None

    def __enter__(self) -> "ScriptedModel":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the scripted model is not started")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def credential_of(self, headers) -> str | None:
        """ "real", "other" or "none": what the key headers of a request carry (None: the model expects no key)."""
        if self.key is None:
            return None
        values = [v.strip() for name in _KEY_HEADERS for v in headers.get_all(name, [])]
        if not values:
            return "none"
        keys = {v.split(" ", 1)[1].strip() if v.lower().startswith("bearer ") else v for v in values}
        return "real" if keys == {self.key} else "other"

    # -- script ----------------------------------------------------------------------------------
    def load(
        self,
        scenario: Scenario | Mapping[str, Any] | str | Path,
        vocabulary: ToolVocabulary | Mapping[str, Any] | str | Path | None = None,
    ) -> Script:
        """Translate now, so a step the harness has no tool for fails here, not mid-run. Keeps the transcript."""
        script = Script(load_scenario(scenario), load_vocabulary(vocabulary) if vocabulary is not None else None)
        self._script = script  # one reference swap: requests in flight keep the script they started with
        return script

    # -- transcript ------------------------------------------------------------------------------
    def _append(self, record: Record) -> None:
        with self._lock:
            self._records.append(record)

    @property
    def transcript(self) -> Transcript:
        with self._lock:
            return Transcript(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def offered_tools(self) -> set[str]:
        return self.transcript.offered_tools()

    def tool_results(self) -> list[ToolResult]:
        return self.transcript.tool_results()

    def requests_for(self, path: str) -> list[Record]:
        return self.transcript.requests_for(path)
