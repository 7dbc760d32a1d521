"""The one lifecycle of a sandboxed run: what `launch`, `acp`, `sandbox run` and the suite's composed runs share.

In order, as one context manager: record the Run's start (when there is a store), make the run folder and the
project masks' backings, the environment, the egress proxy and the sandbox's argv (`startup.Started`), the model
key's first-run answer, the profile's kept answers; then the caller drives its process (an attached terminal, an
ACP relay, a captured vector, a forwarded signal) and says how it ended (`SandboxedRun.ended`); afterwards: the
run's last processes killed, what the harness answered that widens nothing kept, the proxy stopped, leftovers
killed, the workspace's hold released, the run folder removed, and the Run's end recorded.

Failures are one error class with one exit code, whoever drives: an OSError while the sandbox is made (bwrap
missing, a backing that cannot be created) is a SandboxError; a proxy that died during the run (it takes the run
down: not the process's own ending) is `ProxyDied`, a SandboxError raised once everything is cleaned up and
recorded. So a run that could not be proven contained never ends with its command's exit status.

Plain data and the standard library only: `launch` and `sandbox run` start from their caches through here.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

from agentbox.errors import AgentBoxError, SandboxError
from agentbox.run.profile_state import keep, restore
from agentbox.sandbox.session import (
    cleanup,
    environment,
    for_the_user,
    kill_marked,
    materialize,
    settle_key_approvals,
)
from agentbox.sandbox.startup import Started

# `typing` itself is not imported: it costs ~3 ms of the measured hot paths (benchmarks/sandbox_run.py)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from agentbox.run.runs import RunStore

__all__ = [
    "SandboxedRun",
    "ProxyDied",
    "Record",
    "sandboxed",
    "cannot_start",
    "say",
    "NAMESPACE_GRACE",
    "AFTER_THE_RUN",
]

# How long a run's processes get to end with its PID namespace before they count as outliving it (only spent when
# some process is still there: the kernel ends a namespace in milliseconds).
NAMESPACE_GRACE = 3.0
AFTER_THE_RUN = "after the run: "  # how a line for the user about what the run left begins


class ProxyDied(SandboxError):
    """The egress proxy died during the run and took it down: the run ends failed, exit 4 (SandboxError's)."""


def cannot_start(exc: OSError) -> SandboxError:
    """An OSError while the sandbox is made or its first process spawned (bwrap missing, a backing that cannot be
    created), as the sandbox error it is."""
    return SandboxError(f"cannot start the sandbox: {exc}")


def say(line: str) -> None:
    """One line for the user, on stderr, as every command of Agent-Box writes them."""
    print(f"agent-box: {line}", file=sys.stderr)


# Plain classes, not dataclasses: `dataclasses` loads `inspect` (~9 ms) on the measured hot path of `sandbox run`
# and `launch` (benchmarks/sandbox_run.py, benchmarks/launch.py).
class Record:
    """Where a Run is recorded (a runs.RunStore) and its columns; `mode` among them for ACP."""

    def __init__(self, store: RunStore, fields: dict) -> None:
        self.store, self.fields = store, fields


class SandboxedRun:
    """A run ready to drive: `argv` (the sandbox's, up to and with its `--`), `env`, and after the run what ended
    it (`status`, `state`) and what cleanup said (`note`)."""

    def __init__(
        self,
        entry: dict,
        run_dir: str,
        run_id: str,
        started: Started,
        env: dict[str, str],
        artifacts: list[str] | None = None,
    ) -> None:
        self.entry, self.run_dir, self.run_id, self.started, self.env = entry, run_dir, run_id, started, env
        self.artifacts: list[str] = artifacts if artifacts is not None else []
        self.status: int | None = None
        self.state = "failed"
        self.note = ""

    @property
    def argv(self) -> list[str]:
        return self.started.argv

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return self.started.pass_fds

    @property
    def failure(self) -> str | None:
        """What ended the run from outside (the egress proxy's death), or None."""
        return "; ".join(self.started.notes) if self.started.notes else None

    def ended(self, status: int | None, state: str = "finished") -> None:
        """How the driven process ended: its exit status, and the Run's state (finished, interrupted, failed)."""
        self.status, self.state = status, state


@contextmanager
def sandboxed(
    entry: dict,
    run_dir: str,
    *,
    run_id: str | None = None,
    record: Record | None = None,
    source=None,
    extra_env: dict[str, str] | None = None,
    resolve: dict[str, str] | None = None,
    upstream_ca: str | None = None,
    serve_later: bool = False,
    state_dir: str | None = None,
    egress_copy: str | Callable[[str], str] | None = None,
    keep_run_dir: bool = False,
    tell: Callable[[str], None] = say,
) -> Iterator[SandboxedRun]:
    """The run of `entry` (a plan's sandbox as plain data, `session.entry_from_plan`) in `run_dir`, a fresh private
    folder. `record`: the Run store and columns (its id is the run's); else `run_id`, or a random one. `source`: the
    environment the run's allowed variables and real credentials are read from (default this process's);
    `extra_env`: variables the caller adds. `state_dir`: the profile's kept answers, restored at the start and kept
    at the end. `egress_copy`: where the proxy's decisions are copied (or a function of the run's id that says). `tell`: where the lines for the user go
    (what was kept, what cleanup names for review). `resolve`, `upstream_ca`, `keep_run_dir`: testing aids."""
    store = record.store if record is not None else None
    if record is not None:
        run_id = record.store.start({**record.fields, "run_dir": run_dir})
    run_id = run_id or os.urandom(8).hex()
    started: Started | None = None
    run: SandboxedRun | None = None
    status: int | None = None
    state = "failed"
    note = ""
    try:
        try:
            artifacts = materialize(entry, run_dir)
            env = environment(entry, run_id, source, extra_env)
            # the proxy runs before the command exists; it alone holds the real credentials, the run gets
            # placeholders (written into `env` here)
            started = Started(
                entry,
                run_dir,
                run_id,
                resolve,
                env=env,
                source=None if source is None and not extra_env else {**(source or os.environ), **(extra_env or {})},
                upstream_ca=upstream_ca,
                serve_later=serve_later,
            )
            settle_key_approvals(entry, run_dir, env)  # of the key the command is given: its placeholder
            if state_dir is not None:
                for problem in restore(entry, run_dir, state_dir):  # the profile's answers from earlier runs
                    tell(problem)
        except OSError as exc:
            raise cannot_start(exc) from exc
        run = SandboxedRun(entry, run_dir, run_id, started, env, artifacts)
        yield run
        if state_dir is not None:  # the command ran: what it answered that widens nothing is kept for the next run
            kill_marked(run_id, NAMESPACE_GRACE)  # nothing of the run writes its state any more
            for line in keep(entry, run_dir, state_dir):
                tell(line)
        if run.failure:
            raise ProxyDied(run.failure)
        status, state = run.status, run.state
    except AgentBoxError as exc:
        status = exc.exit_code
        raise
    finally:
        copy = egress_copy(run_id) if callable(egress_copy) else egress_copy
        note = cleanup(run_id, run_dir, started, keep_run_dir=keep_run_dir, egress_copy=copy)
        for line in for_the_user(note):  # what the run left that is the user's to judge
            tell(f"{AFTER_THE_RUN}{line}")
        if run is not None:
            run.note = note
        if store is not None:
            store.finish(run_id, status, note, state)
