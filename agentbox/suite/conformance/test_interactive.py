"""Interactive smoke: a harness TUI, started through its compiled plan inside bubblewrap on a
pseudo-terminal (pexpect), answers a prompt from the scripted model and exits cleanly on its own quit
command. The run keeps bwrap's --new-session: the TUI gets the pty as stdin/stdout but no controlling
terminal, which these TUIs do not need (see the note at the end of this module)."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentbox

from agentbox.testing.fixtures import READ_WRITE, scripted_key_env, scripted_profile
from agentbox.testing.session import session_key
from agentbox.testing.tui import TuiFailed, exchange, plain, scripts

ANSWER = "tui-answer-7c41"
_REPO = Path(agentbox.__file__).resolve().parents[1]  # the import root, bound read-only for the helpers

pytestmark = [pytest.mark.smoke, pytest.mark.harness(*scripts())]  # the harnesses with a TUI driver


def test_a_tui_in_the_sandbox_answers_a_prompt_and_exits_cleanly(harness, request, scripted_model, agentbox_workspace):
    from agentbox.run.harness_run import RunRequest, kill_marked, prepared
    from agentbox.core.profile import LoadedProfile, Profile

    timeout = request.config.stash[session_key].timeout
    adapter = harness.adapter()
    scripted_model.load({"steps": [], "final_text": ANSWER}, adapter.tool_vocabulary)
    profile = scripted_profile(harness, scripted_model, READ_WRITE, name="tui-smoke")
    loaded = LoadedProfile(profile=Profile.model_validate(profile), source="<test>", digest="test")
    ws = agentbox_workspace
    req = RunRequest(
        loaded=loaded,
        probe=adapter.probe(harness.binary),
        workspace=str(ws.project),
        home=str(ws.home),
        prompt="",
        timeout=timeout,
        extra_env=scripted_key_env(harness),
        ro_binds=(str(_REPO),),
    )
    with prepared(req, command=lambda r: [harness.binary, *adapter.interactive_argv(r, [])]) as run:
        try:
            seen = exchange(run, req, harness.name, "say the magic words", ANSWER)
        except TuiFailed as exc:
            pytest.fail(str(exc))
        leftovers = kill_marked(run.run_id)
    assert seen.exitstatus == 0, f"exit {seen.exitstatus} signal {seen.signalstatus}\n{plain(seen.screen)}"
    assert leftovers == [], "no process of the TUI survived it"
    assert [r for r in scripted_model.transcript if not r.side], "the TUI asked the scripted model through the relay"
    print(f"{harness.id}: answered after {seen.answered:.2f}s, exited after {seen.elapsed:.2f}s")


# Note on terminals. bwrap --new-session (setsid) leaves the TUI without a controlling terminal: its
# stdin/stdout are still the pty (isatty is true, raw mode works, Ctrl-C arrives as a byte), but
# opening /dev/tty fails with ENXIO and SIGWINCH never reaches it (the pty's foreground process group
# is bwrap's), so a resized terminal is not redrawn. Claude Code, Codex, OpenCode and Hermes (its
# prompt_toolkit CLI) render and run without it. Dropping --new-session would restore both, and is safe
# only when the sandbox's terminal is a pty the launcher owns (as pexpect's is here): with the user's own
# terminal, TIOCSTI (allowed on this kernel: dev.tty.legacy_tiocsti = 1) would let the sandbox type into
# the user's shell.
