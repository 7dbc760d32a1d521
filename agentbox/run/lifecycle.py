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

from agentbox.core.console import plain
from agentbox.errors import AgentBoxError, SandboxError
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
    from collections.abc import Callable

    from agentbox.run.runs import RunStore

__all__ = [
    "SandboxedRun",
    "Lifecycle",
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
    """One line for the user, on stderr, as every command of Agent-Box writes them (what the run named in it
    escaped: `console.printable`)."""
    plain(line)


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
) -> Lifecycle:
    """The run of `entry` (a plan's sandbox as plain data, `session.entry_from_plan`) in `run_dir`, a fresh private
    folder, as a context manager giving the `SandboxedRun` to drive. `record`: the Run store and columns (its id is
    the run's); else `run_id`, or a random one. `source`: the environment the run's allowed variables and real
    credentials are read from (default this process's); `extra_env`: variables the caller adds. `state_dir`: the
    profile's kept answers, restored at the start and kept at the end. `egress_copy`: where the proxy's decisions are
    copied (or a function of the run's id that says). `tell`: where the lines for the user go (what was kept, what
    cleanup names for review). `resolve`, `upstream_ca`, `keep_run_dir`: testing aids."""
    return Lifecycle(
        entry,
        run_dir,
        run_id=run_id,
        record=record,
        source=source,
        extra_env=extra_env,
        resolve=resolve,
        upstream_ca=upstream_ca,
        serve_later=serve_later,
        state_dir=state_dir,
        egress_copy=egress_copy,
        keep_run_dir=keep_run_dir,
        tell=tell,
    )


# A class with __enter__ and __exit__ rather than a generator under contextlib.contextmanager: contextlib loads
# collections and functools, ~2.5 ms of the measured hot paths (benchmarks/sandbox_run.py, benchmarks/launch.py).
class Lifecycle:
    """`sandboxed`'s steps. Entering makes the run; leaving ends it, however the block ended: after a block that
    returned, what the run answered is kept and a dead proxy raises `ProxyDied`; in every case (a failed start
    included) the run is cleaned up and its end recorded, with the exit code of the AgentBoxError that ended it."""

    def __init__(self, entry: dict, run_dir: str, *, record: Record | None, run_id: str | None, **options) -> None:
        self.entry, self.run_dir, self.record, self.run_id = entry, run_dir, record, run_id
        self.source, self.extra_env, self.state_dir = options["source"], options["extra_env"], options["state_dir"]
        self.resolve, self.upstream_ca, self.serve_later = (
            options["resolve"],
            options["upstream_ca"],
            options["serve_later"],
        )
        self.egress_copy, self.keep_run_dir, self.tell = (
            options["egress_copy"],
            options["keep_run_dir"],
            options["tell"],
        )
        self.started: Started | None = None
        self.run: SandboxedRun | None = None
        self.status: int | None = None
        self.state = "failed"

    def __enter__(self) -> SandboxedRun:
        if self.record is not None:
            self.run_id = self.record.store.start({**self.record.fields, "run_dir": self.run_dir})
        run_id = self.run_id = self.run_id or os.urandom(8).hex()
        entry, run_dir, source, extra_env = self.entry, self.run_dir, self.source, self.extra_env
        try:
            try:
                artifacts = materialize(entry, run_dir)
                env = environment(entry, run_id, source, extra_env)
                # the proxy runs before the command exists; it alone holds the real credentials, the run gets
                # placeholders (written into `env` here)
                self.started = Started(
                    entry,
                    run_dir,
                    run_id,
                    self.resolve,
                    env=env,
                    source=None
                    if source is None and not extra_env
                    else {**(source or os.environ), **(extra_env or {})},
                    upstream_ca=self.upstream_ca,
                    serve_later=self.serve_later,
                )
                settle_key_approvals(entry, run_dir, env)  # of the key the command is given: its placeholder
                if self.state_dir is not None:
                    # json and fnmatch (re, enum: ~7 ms a start) only for a run that keeps answers; `sandbox run`
                    # keeps none (benchmarks/sandbox_run.py)
                    from agentbox.run.profile_state import restore

                    for problem in restore(entry, run_dir, self.state_dir):  # the profile's answers from earlier runs
                        self.tell(problem)
            except OSError as exc:
                raise cannot_start(exc) from exc
            # inside the guard: an interrupt here still stops the proxy, cleans up and records the end
            self.run = SandboxedRun(entry, run_dir, run_id, self.started, env, artifacts)
        except BaseException as exc:
            self._end(exc)
            raise
        return self.run

    def __exit__(self, kind, exc, traceback) -> None:
        """Never swallows: what ended the block goes on once the run is ended."""
        try:
            if exc is None:
                self._after(self.run)
        except BaseException as failure:
            self._end(failure)
            raise
        self._end(exc)

    def _after(self, run) -> None:
        """The command ran: what it answered that widens nothing is kept for the next run; a dead proxy fails it."""
        if self.state_dir is not None:
            from agentbox.run.profile_state import keep  # as in __enter__

            kill_marked(run.run_id, NAMESPACE_GRACE)  # nothing of the run writes its state any more
            for line in keep(self.entry, self.run_dir, self.state_dir):
                self.tell(line)
        if run.failure:
            raise ProxyDied(run.failure)
        self.status, self.state = run.status, run.state

    def _end(self, exc: BaseException | None) -> None:
        if isinstance(exc, AgentBoxError):
            self.status = exc.exit_code
        run_id = self.run_id
        assert run_id is not None  # given or made on entering
        copy = self.egress_copy(run_id) if callable(self.egress_copy) else self.egress_copy
        note = cleanup(run_id, self.run_dir, self.started, keep_run_dir=self.keep_run_dir, egress_copy=copy)
        for line in for_the_user(note):  # what the run left that is the user's to judge
            self.tell(f"{AFTER_THE_RUN}{line}")
        if self.run is not None:
            self.run.note = note
        if self.record is not None:
            self.record.store.finish(run_id, self.status, note, self.state)
