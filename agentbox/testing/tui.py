"""A harness driven through its interactive TUI on a pseudo-terminal: the mode `agent-box launch` starts.

Headless runs (`claude -p`, `codex exec`) take another permission path than the TUI a user meets (Claude
Code's interactive permission modes and dialogs, Codex's TUI approvals), so evidence for a launch is taken
here too: the run's plan is the same, only the harness's argv is its interactive one. The driver types the
prompt, declines every permission dialog the TUI raises (a person who was asked and said no: the refusal
reaches the model as the tool's result), waits for the scripted model's closing words, then quits with the
TUI's own command. How to drive each TUI is data about the harness (its `tui.yaml`, `agentbox.harnesses.tui`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from agentbox.harnesses.tui import Dialog, TuiScript, dialogs_for, scripts, unsupported, words

# Appended to the screen text when the driver declined dialogs: the refusal that may end a run early
DECLINED_NOTE = "[tui: {n} permission dialog(s) declined]"
DECLINED = r"\[tui: \d+ permission dialog\(s\) declined\]"

__all__ = [
    "DECLINED",
    "DECLINED_NOTE",
    "Dialog",
    "dialogs_for",
    "submit",
    "TuiScript",
    "scripts",
    "Tail",
    "words",
    "plain",
    "drive",
    "unsupported",
    "Exchange",
    "TuiFailed",
    "exchange",
]


# Control sequences: CSI with its intermediates (a cursor shape `ESC [ 1 SP q`, a mode query `ESC [ ? 2026 $ p`),
# OSC, DCS and the other string sequences (a capability query `ESC P + q ... ESC \`), charset designations,
# then the two-character ones
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[P_^X][^\x1b]*\x1b\\"
    r"|\x1b[()*+][0-9A-Za-z]|\x1b[=>78A-Z\\]"
)


def plain(chunks: list[str], n: int = 2000) -> str:
    """The screen's text without escape sequences, its last `n` characters."""
    return _ESCAPES.sub("", "".join(chunks))[-n:]


def readable(chunks: list[str], n: int = 600) -> str:
    """The screen's last words for a message: no box drawing, block elements, geometric shapes (spinners), one
    space between words."""
    return " ".join(re.sub(r"[\u2500-\u25ff\u276f\u2b1d]+", " ", plain(chunks, 20000)).split())[-n:]


def submit(child, script: TuiScript, prompt: str) -> None:
    """Type `prompt` into the input box and submit it."""
    child.send(prompt)
    if script.echo and prompt.split():
        # a TUI that reads fast input as a paste takes an Enter inside it as a newline
        child.expect(re.escape(prompt.split()[-1]))
    child.send("\r")


class Tail:
    """A pexpect log sink keeping the recent screen output (for oracles and failure messages)."""

    def __init__(self, sink: list[str], keep: int = 4000):
        self.sink, self.keep = sink, keep

    def write(self, data: str) -> None:
        self.sink.append(data)
        if len(self.sink) > self.keep:
            del self.sink[: self.keep // 2]

    def flush(self) -> None:
        pass


class TuiFailed(AssertionError):
    """A smoke's exchange with a TUI did not get through: which step, and the screen's tail."""


@dataclass
class Exchange:
    """How one prompt-and-answer with a TUI went: its exit, when the answer showed, the screen's recent output."""

    exitstatus: int | None
    signalstatus: int | None
    answered: float
    elapsed: float
    screen: list[str]


def exchange(run, req, harness_name: str, prompt: str, answer: str) -> Exchange:
    """A run prepared from `req`, its TUI on a pseudo-terminal: pass the first-run dialogs it raises for the request's
    model and harness version, send `prompt`, wait for the scripted model's `answer`, quit with the TUI's own
    command and wait for it to end (the smokes' whole conversation)."""
    import pexpect

    from agentbox.testing import terminal

    script = scripts()[harness_name]
    dialogs = dialogs_for(script, req.loaded.profile.model.name, req.probe.version)
    env = {**run.env, "TERM": run.env.get("TERM") or "xterm-256color"}
    start = time.monotonic()
    child = terminal.spawn(
        run.argv,
        env=env,
        cwd=run.cwd,
        pass_fds=run.pass_fds,
        dimensions=(40, 120),
        encoding="utf-8",
        codec_errors="replace",
        timeout=req.timeout,
    )
    screen: list[str] = []
    child.logfile_read = Tail(screen, keep=400)
    try:
        for dialog in dialogs:
            child.expect(dialog.pattern)
            child.send(dialog.keys)
        child.expect(script.ready)
        submit(child, script, prompt)
        child.expect(re.escape(answer))
        answered = time.monotonic() - start
        submit(child, script, script.quit)
        child.expect(pexpect.EOF)
    except (pexpect.TIMEOUT, pexpect.EOF) as exc:
        child.close(force=True)
        raise TuiFailed(
            f"{type(exc).__name__} after {time.monotonic() - start:.1f}s; screen tail:\n{plain(screen)}"
        ) from None
    child.close()
    return Exchange(child.exitstatus, child.signalstatus, answered, time.monotonic() - start, screen)


def drive(req, harness_name: str, binary: str, done_text: str):
    """Run `req` through the harness's TUI until the scripted model says `done_text`; a RunOutcome whose stdout
    is the screen's text and whose exit code is None when the TUI never got there (timed out)."""
    import pexpect

    from agentbox.compile.adapters import get_adapter
    from agentbox.run.harness_run import RunOutcome, kill_marked, prepared, NAMESPACE_GRACE
    from agentbox.testing import terminal

    script = scripts()[harness_name]
    dialogs = dialogs_for(script, req.loaded.profile.model.name, req.probe.version)
    adapter = get_adapter(harness_name)
    screen: list[str] = []
    with prepared(req, command=lambda native: [binary, *adapter.interactive_argv(native, [])]) as run:
        env = {**run.env, "TERM": run.env.get("TERM") or "xterm-256color"}
        start = time.monotonic()
        child = terminal.spawn(
            run.argv,
            env=env,
            cwd=run.cwd,
            pass_fds=run.pass_fds,
            dimensions=(50, 160),
            encoding="utf-8",
            codec_errors="replace",
            timeout=req.timeout,
        )
        child.logfile_read = Tail(screen)
        finished, declined, why = False, 0, ""
        try:
            for dialog in dialogs:
                child.expect(dialog.pattern)
                child.send(dialog.keys)
            child.expect(script.ready)
            submit(child, script, req.prompt)
            expected = [
                re.escape(done_text),
                pexpect.EOF,
                pexpect.TIMEOUT,
                script.permission or "(?!)",
                script.declined or "(?!)",
                script.busy or "(?!)",
            ]
            queued = False
            while not finished:
                left = req.timeout - (time.monotonic() - start)
                got = child.expect(expected, timeout=max(left, 1))
                if got == 0:
                    finished = True
                elif got == 3:
                    declined += 1
                    child.send(script.decline)
                elif got == 4 and declined:
                    finished = True  # the declined dialog ended the turn: nothing more will happen
                elif got == 4:
                    continue
                elif got == 5:
                    if not queued:  # the prompt is still in the box: once
                        queued = True
                        child.send(script.queue)
                    continue
                else:
                    why = "the TUI ended" if got == 1 else "timed out"
                    break
            if finished:
                submit(child, script, script.quit)
                child.expect(pexpect.EOF, timeout=30)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            why = why or f"{type(exc).__name__} before the TUI was ready"
        child.close(force=True)
        elapsed = time.monotonic() - start
        leftovers = kill_marked(run.run_id, grace=NAMESPACE_GRACE)
        text = plain(screen, 20000)
        failure = "; ".join(run.started.notes) if run.started is not None and run.started.notes else None
        note = f"{DECLINED_NOTE.format(n=declined)}" if declined else ""
        return RunOutcome(
            exit_code=0 if finished else None,
            stdout=f"{text}\n{note}".strip(),
            stderr="" if finished else f"{why}; screen: {readable(screen)}",
            elapsed=elapsed,
            timed_out=not finished,
            plan=run.plan,
            argv=run.argv,
            artifacts=run.artifacts,
            run_dir=run.run_dir,
            leftovers=leftovers,
            egress=run.end_egress(),
            failure=failure,
        )
