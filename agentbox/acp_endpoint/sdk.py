"""The `acp` SDK, its framing first and its schema in the background.

Importing the `acp` package builds its whole protocol schema (several thousand pydantic models): about a
second of CPU, which would sit between the editor's `initialize` and its answer. The relay needs only the
SDK's connection (framing, request ids, error objects) to pass `initialize` on, and nothing of `initialize`
needs the schema (the policy rebuilds the client's capabilities from the keys it knows). So the connection
modules are loaded alone (while the agent starts), and the package (with the schema) finishes loading in a
thread once `initialize` is answered; every later message waits for it before it is judged. (Loading it during
`initialize` would take the interpreter from the relay just when the answer arrives.)

Pinned SDK (agent-client-protocol 0.12.1): the split relies on `acp.connection` importing no sibling that
needs the package's `__init__`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
from concurrent.futures import Future, wait
from typing import Any

__all__ = ["framing", "load_schema", "load_after", "schema"]

_loaded: Future | None = None
_lock = threading.Lock()
_after: list[Future] = []  # work in other threads the schema's load waits for (see load_after)


def framing():
    """`acp.connection` and its few siblings, without running the package's `__init__` (and so its schema)."""
    if "acp" not in sys.modules:
        spec = importlib.util.find_spec("acp")
        package = importlib.util.module_from_spec(spec)
        package.__agentbox_pending__ = spec  # finished by load_schema
        sys.modules["acp"] = package
    from acp import connection, exceptions, task  # noqa: F401  (the light modules)

    return connection


def _finish() -> Any:
    package = sys.modules["acp"]
    spec = getattr(package, "__agentbox_pending__", None)
    if spec is not None:
        del package.__agentbox_pending__
        spec.loader.exec_module(package)  # the package's own __init__, on the module object already in use
    from acp import schema as loaded

    return loaded


def load_after(work: Future) -> None:
    """Make the schema's load (when it starts) wait until `work`, running in another thread, is done (whatever its
    outcome): two threads importing the same package (pydantic) at once can meet the import system's deadlock
    detection, and the schema's load is the longest import of all."""
    with _lock:
        _after.append(work)


def load_schema() -> Future:
    """Start finishing the package in a thread (once); its Future gives `acp.schema`."""
    global _loaded
    with _lock:
        if _loaded is None:
            future: Future = Future()

            after = list(_after)

            def run() -> None:
                try:
                    wait(after)
                    future.set_result(_finish())
                except BaseException as exc:  # surfaced to whoever waits for the schema
                    future.set_exception(exc)

            threading.Thread(target=run, name="agentbox-acp-schema", daemon=True).start()
            _loaded = future
        return _loaded


async def schema() -> Any:
    """`acp.schema`, once loaded (starting the load if nobody has); without yielding once it is."""
    loaded = load_schema()
    return loaded.result() if loaded.done() else await asyncio.wrap_future(loaded)
