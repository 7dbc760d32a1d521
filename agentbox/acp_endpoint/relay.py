"""The ACP relay: the client on one side, the sandboxed agent on the other, the policy in between.

Two `acp` SDK connections (the SDK frames, numbers and matches the JSON-RPC messages): one speaks to the
client as an agent would, the other to the sandboxed agent as a client would. Every message is checked
against the protocol's own schema (`acp.schema`) before it is judged, then passed on as the peer sent it,
less what the policy strips. Only methods the endpoint knows are relayed: a method it cannot judge (an
extension, a newer protocol's method) is refused, since a client method it let through unjudged is
exactly the bypass this module exists to close.

The relay ends when either side does. Client EOF: the agent's stdin is closed. The agent exits (or garbles
its stream): the client's pending requests get an error naming why, and the client's stream is closed, so
neither side is left waiting.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from acp.connection import Connection
from acp.exceptions import RequestError
from acp.task import MessageSender, TaskSupervisor
from pydantic import ValidationError

from agentbox.acp_endpoint.notes import note
from agentbox.acp_endpoint.policy import SESSION_METHODS, Refusal, SurfacePolicy
from agentbox.acp_endpoint.sdk import load_schema, schema
from agentbox.acp_endpoint.terminals import Terminals
from agentbox.acp_endpoint.transport import CheckedTransport, describe

__all__ = ["Relay", "Ending", "REFUSED", "refused", "connect"]

# JSON-RPC's implementation-defined range: the code of every refusal by Agent-Box (its gate, its policy)
REFUSED = -32003
_AFTER_ANSWER = 0.005  # seconds after the agent's `initialize` answer is handed to the SDK: it has been written

# What each relayed method's params must be (a model of the protocol's schema, `acp.schema`), per direction. Not
# listed: refused. None: checked by the policy alone (`initialize`, whose capabilities the policy rebuilds from the
# keys it knows, so it needs no schema and is relayed while the schema still loads; two-shaped set_config_option).
_FROM_CLIENT: dict[str, str | None] = {
    "initialize": None,
    "authenticate": "AuthenticateRequest",
    "session/new": "NewSessionRequest",
    "session/load": "LoadSessionRequest",
    "session/resume": "ResumeSessionRequest",
    "session/fork": "ForkSessionRequest",
    "session/list": "ListSessionsRequest",
    "session/close": "CloseSessionRequest",
    "session/set_mode": "SetSessionModeRequest",
    "session/set_config_option": None,
    "session/prompt": "PromptRequest",
    "session/cancel": "CancelNotification",
    "logout": None,
}
_FROM_AGENT: dict[str, str | None] = {
    # display only, and relayed in the order the agent sent it: a prompt's answer must never overtake its updates,
    # so it is not held back to wait for the schema (the policy does not act on it)
    "session/update": None,
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
    "terminal/create": "CreateTerminalRequest",
    "terminal/output": "TerminalOutputRequest",
    "terminal/wait_for_exit": "WaitForTerminalExitRequest",
    "terminal/kill": "KillTerminalRequest",
    "terminal/release": "ReleaseTerminalRequest",
}
_TERMINAL = {
    "terminal/output": "output",
    "terminal/wait_for_exit": "wait_for_exit",
    "terminal/kill": "kill",
    "terminal/release": "release",
}

log = logging.getLogger("agentbox.harnesses.acp")


def refused(reason: str, data: dict | None = None) -> RequestError:
    return RequestError(REFUSED, f"agent-box: {reason}", {"refusedBy": "agent-box", **(data or {})})


@dataclass
class Ending:
    """Why the relay stopped: `client_eof`, `agent_exit`, `agent_garbled`, `stopped` (a signal to the endpoint)."""

    kind: str = "stopped"
    detail: str = ""
    status: int | None = None  # the agent's exit status, or 128+N for the signal that stopped the endpoint
    prompts_in_flight: int = 0  # prompts still running when it stopped


def connect(
    handler,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    on_bad: Callable[[str, bytes], Any],
    source: str,
) -> tuple[Connection, CheckedTransport]:
    """An SDK connection over the SDK's NDJSON framing whose malformed input goes to `on_bad`."""
    sender = MessageSender(writer, TaskSupervisor(source=source))
    transport = CheckedTransport(reader, sender, on_bad)
    return Connection(handler, transport), transport


class AgentProcess(Protocol):
    """What the relay uses of the agent's process: an asyncio subprocess, or the endpoint's `sandboxed.Agent`."""

    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...

    async def wait(self) -> int: ...


@dataclass
class Relay:
    policy: SurfacePolicy
    terminals: Terminals
    on_session: Callable[[str], None] = lambda sid: None
    # called (maybe more than once) when `initialize` is answered, or the client sends anything else first: the
    # endpoint starts its egress proxy then
    on_ready: Callable[[], None] = lambda: None
    client: Connection | None = None
    agent: Connection | None = None
    ending: Ending = field(default_factory=Ending)
    _done: asyncio.Event = field(default_factory=asyncio.Event)
    # holds every process of the run still while the client acts on a path (`hold.Hold`; the command always
    # gives one, a control of the `acp` layer a stand-in that holds nothing)
    hold: Any = None
    _offered: dict = field(default_factory=dict)  # what the agent was told the client can do
    _prompts: int = 0  # session/prompt requests the agent has not answered yet
    _still: asyncio.Lock = field(default_factory=asyncio.Lock)  # one file request (or terminal start) at a time

    # -- running ----------------------------------------------------------------------------------------------
    async def run(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter, proc: AgentProcess
    ) -> Ending:
        assert proc.stdin is not None and proc.stdout is not None
        self.client, client_t = connect(self.from_client, client_in, client_out, self._client_garbled, "acp.client")
        self.agent, agent_t = connect(self.from_agent, proc.stdout, proc.stdin, self._agent_garbled, "acp.agent")
        watch = [
            asyncio.create_task(self._eof(self.client, "client_eof", "the client closed its stream")),
            asyncio.create_task(self._agent_eof(proc)),
            asyncio.create_task(self._exited(proc)),
        ]
        try:
            await self._done.wait()
        finally:
            for task in watch:
                task.cancel()
            if self.ending.kind != "client_eof":
                # the agent is gone: fail what the client still waits for, then end the client's stream
                self.agent._reject_all_outgoing(ConnectionError(self.ending.detail))
                await asyncio.sleep(0)  # let the failed handlers answer the client
                await _drain(self.client)
            if self.hold is not None:
                self.hold.close()  # a file request cut short by the end leaves nothing stopped
            await self.terminals.close()
            await self.agent.close()
            await self.client.close()
        return self.ending

    def _end(self, kind: str, detail: str, status: int | None = None) -> None:
        if not self._done.is_set():
            self.ending.kind, self.ending.detail = kind, detail
            self.ending.prompts_in_flight = self._prompts
            if status is not None:
                self.ending.status = status
            self._done.set()

    async def _eof(self, conn: Connection, kind: str, detail: str) -> None:
        task = conn._recv_task  # the SDK's receive loop ends at EOF
        if task is not None:
            await asyncio.shield(task)
        self._end(kind, detail)

    async def _exited(self, proc: AgentProcess) -> None:
        status = await proc.wait()
        self._end("agent_exit", f"the agent exited with status {status}", status)

    async def _agent_eof(self, proc: AgentProcess) -> None:
        """The agent's stream ended: name its exit status if it exits right after (it usually does)."""
        assert self.agent is not None
        if self.agent._recv_task is not None:
            await asyncio.shield(self.agent._recv_task)
        try:
            status = await asyncio.wait_for(asyncio.shield(proc.wait()), 1.0)
            self._end("agent_exit", f"the agent exited with status {status}", status)
        except asyncio.TimeoutError:
            self._end("agent_exit", "the agent closed its stream")

    async def _client_garbled(self, reason: str, line: bytes) -> None:
        """A bad line from the client: answer it (the agent never sees it), keep serving."""
        note(f"malformed message from the client ({reason}): {describe(line)}")
        code = -32700 if reason.startswith("not JSON") else -32600
        msg_id = _id_of(line)
        assert self.client is not None
        await self.client._transport.send(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {
                    "code": code,
                    "message": "Parse error" if code == -32700 else "Invalid request",
                    "data": {"details": f"agent-box: {reason}", "line": describe(line)},
                },
            }
        )

    def _agent_garbled(self, reason: str, line: bytes) -> None:
        """A bad line from the agent: it can no longer be trusted to answer anything; end the session."""
        note(f"malformed message from the agent ({reason}): {describe(line)}; ending the session")
        self._end("agent_garbled", f"the agent sent a malformed message ({reason}): {describe(line)}")

    # -- client -> agent --------------------------------------------------------------------------------------
    async def from_client(self, method: str, params: Any, is_notification: bool) -> Any:
        if method not in _FROM_CLIENT:
            if is_notification:
                note(f"dropped the client's notification {method}: agent-box acp does not relay it")
                return None
            raise refused(f"{method} is not relayed: agent-box acp cannot judge what it would do", {"method": method})
        if method != "initialize":
            self.on_ready()
        params = await _checked(_FROM_CLIENT[method], params)
        try:
            params = self._judge_client(method, params)
        except Refusal as exc:
            note(str(exc))
            if is_notification:
                return None
            raise refused(str(exc)) from None
        assert self.agent is not None
        if is_notification:
            await self.agent.send_notification(method, params)
            return None
        if method == "session/prompt":
            self._prompts += 1
        try:
            result = await self._ask(self.agent, method, params, "the agent")
        finally:
            if method == "session/prompt":
                self._prompts -= 1
        return self._judge_agent_answer(method, params, result)

    def _judge_client(self, method: str, params: dict) -> dict:
        if method == "initialize":
            self._offered = self.policy.client_capabilities(params.get("clientCapabilities"))
            out = {k: v for k, v in params.items() if k != "_meta"}
            out["clientCapabilities"] = self._offered
            return out
        if method in SESSION_METHODS:
            out, notes = self.policy.session_params(method, params)
            for n in notes:
                note(f"{method}: {n}")
            return out
        if method == "session/set_mode":
            self.policy.mode(method, params.get("modeId"))
        if method == "session/set_config_option":
            self.policy.config_option(params)
        _, notes = self.policy.meta(method, params.get("_meta"))
        for n in notes:
            note(f"{method}: {n}")
        return {k: v for k, v in params.items() if k != "_meta"}

    def _judge_agent_answer(self, method: str, params: dict, result: Any) -> Any:
        if method == "initialize":
            # the schema every later message is checked against (sdk.py) loads once this answer is on its way, and the
            # endpoint's proxy starts: threads that import at once would take the interpreter from the relay just as
            # the answer leaves (measured: +45 ms). The SDK writes it from its sender task within an iteration or
            # two of the loop; a timer a few ms out fires after that.
            asyncio.get_running_loop().call_later(_AFTER_ANSWER, self._answered)
            return self.policy.agent_answer(result)
        if method in SESSION_METHODS:
            sid = result.get("sessionId") if isinstance(result, dict) else None
            sid = sid or params.get("sessionId")
            if isinstance(sid, str):
                self.on_session(sid)
        return result

    def _answered(self) -> None:
        self.on_ready()
        load_schema()

    # -- agent -> client --------------------------------------------------------------------------------------
    async def from_agent(self, method: str, params: Any, is_notification: bool) -> Any:
        if method not in _FROM_AGENT:
            if is_notification:
                note(f"dropped the agent's notification {method}: agent-box acp does not relay it")
                return None
            note(f"refused the agent's {method}: agent-box acp does not relay it")
            raise refused(
                f"{method} is not relayed to the client: agent-box acp cannot hold it to the intent", {"method": method}
            )
        params = await _checked(_FROM_AGENT[method], params)
        assert self.client is not None
        if method == "session/update":
            await self.client.send_notification(method, params)
            return None
        try:
            if method == "session/request_permission":
                return await self._permission(params)
            if method in ("fs/read_text_file", "fs/write_text_file"):
                return await self._file_request(method, params)
            if method == "terminal/create":
                how = self.policy.terminal()
                self._need("terminal", None, method)
                if how == "ask" and not await self._approve_terminal(params):
                    raise Refusal(f"terminal/create {params['command']}: the client did not approve it (shell: ask)")
                async with self._still:  # never a new process of the run while it is held still
                    return await self.terminals.create(params)
            return await getattr(self.terminals, _TERMINAL[method])(params)
        except Refusal as exc:
            note(str(exc))
            raise refused(str(exc)) from None

    async def _file_request(self, method: str, params: dict) -> Any:
        """A client file request, judged and handed to the client with every process of the run stopped (`hold`):
        nothing in the sandbox can swap a folder of the path for a symlink between the judgement and the client's
        act. The client is sent the resolved path. (A client that answers before it has written reopens that
        window: README.md, "An ACP agent for editors".)"""
        from agentbox.acp_endpoint.hold import HoldFailed

        assert self.client is not None
        async with self._still:
            if self.hold is not None:
                try:
                    self.hold.stop()
                except HoldFailed as exc:
                    raise Refusal(
                        f"{method} {params.get('path')}: the run could not be held still while the client "
                        f"acts ({exc}), so the client is not asked"
                    ) from None
            try:
                # the intent first (its refusal names the item), then what the client offered
                if method == "fs/read_text_file":
                    path = self.policy.check_read(params["path"])
                    self._need("fs", "readTextFile", method)
                else:
                    path = self.policy.check_write(params["path"])
                    self._need("fs", "writeTextFile", method)
                if self.hold is not None and self.hold.held:
                    note(
                        f"{method} {path}: handed to the client with the run held still "
                        f"({self.hold.held} process(es) stopped)"
                    )
                return await self._ask(self.client, method, {**params, "path": path}, "the client")
            finally:
                if self.hold is not None:
                    self.hold.resume()

    def _need(self, group: str, key: str | None, method: str) -> None:
        offered = self._offered.get(group)
        if not (offered.get(key) if key and isinstance(offered, dict) else offered):
            raise Refusal(
                f"{method}: not among the capabilities the agent was given (the client's, narrowed by the intent)"
            )

    async def _permission(self, params: dict) -> dict:
        decision = self.policy.permission(params)
        if decision.note:
            note(f"session/request_permission {_title(params)}: {decision.note}")
        if decision.answer is not None:
            return _outcome(decision.answer)
        assert self.client is not None
        answer = await self._ask(
            self.client, "session/request_permission", {**params, "options": list(decision.options)}, "the client"
        )
        chosen = ((answer or {}).get("outcome") or {}).get("optionId")
        if ((answer or {}).get("outcome") or {}).get("outcome") == "selected" and chosen not in {
            o.get("optionId") for o in decision.options
        }:
            # an option the agent never offered, or one the policy held back: never an approval
            note(
                f"session/request_permission {_title(params)}: the client chose {chosen!r}, which was not offered; "
                "answered as a rejection"
            )
            return _outcome(
                next((o["optionId"] for o in decision.options if o.get("kind") in ("reject_once", "reject_always")), "")
            )
        return answer

    async def _approve_terminal(self, params: dict) -> bool:
        """Under `shell: ask` the endpoint asks the client itself before it runs a terminal in the sandbox."""
        assert self.client is not None
        command = " ".join([params["command"], *(params.get("args") or [])])
        answer = await self._ask(
            self.client,
            "session/request_permission",
            {
                "sessionId": params["sessionId"],
                "toolCall": {
                    "toolCallId": f"agentbox-terminal-{id(params)}",
                    "title": f"Run in the sandbox: {command}",
                    "kind": "execute",
                    "status": "pending",
                    "rawInput": {
                        "command": params["command"],
                        "args": params.get("args") or [],
                        "cwd": params.get("cwd"),
                    },
                },
                "options": [
                    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                ],
            },
            "the client",
        )
        outcome = (answer or {}).get("outcome") or {}
        return outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow"

    # -- both ways --------------------------------------------------------------------------------------------
    async def _ask(self, conn: Connection, method: str, params: dict, who: str) -> Any:
        try:
            return await conn.send_request(method, params)
        except ConnectionError:
            try:  # the stream's end and the process's exit arrive in either order: name the real cause
                await asyncio.wait_for(self._done.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
            detail = self.ending.detail or f"{who} is gone"
            raise RequestError.internal_error({"details": f"agent-box: {method} got no answer: {detail}"}) from None


async def _checked(model: str | None, params: Any) -> dict:
    """The params as sent, once the protocol's schema accepts them (a malformed request is refused, never relayed)."""
    if not isinstance(params, dict):
        raise RequestError.invalid_params({"details": "params must be an object"})
    if model is not None:
        try:
            getattr(await schema(), model).model_validate(params)
        except ValidationError as exc:
            raise RequestError.invalid_params(
                {"errors": exc.errors(include_url=False, include_context=False)}
            ) from None
    return params


def _outcome(option_id: str) -> dict:
    if not option_id:
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


def _title(params: dict) -> str:
    call = params.get("toolCall") or {}
    return repr(call.get("title") or call.get("toolCallId") or "?")


def _id_of(line: bytes) -> Any:
    import json

    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value.get("id") if isinstance(value, dict) and isinstance(value.get("id"), (int, str)) else None


async def _drain(conn: Connection, timeout: float = 3.0) -> None:
    """Let the client's requests that are still being answered (with the agent's failure) send their answers before
    its stream closes: the SDK's close cancels whatever is in flight. (The SDK's task registry, acp 0.12.)"""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (left := deadline - loop.time()) > 0:
        pending = [t for t in getattr(conn._tasks, "_tasks", ()) if t is not conn._recv_task and not t.done()]
        if not pending:
            return
        await asyncio.wait(pending, timeout=left)
