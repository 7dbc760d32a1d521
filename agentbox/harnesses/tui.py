"""How each harness's interactive TUI is driven: what shows it is ready, its first-run dialogs, how it asks for a
permission and how that is declined, its quit command. Data about the harnesses' TUIs, read by the suite's TUI
driver (`agentbox.testing.tui`) and by the launch and `prove`, which say when a harness has no driver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["Dialog", "TuiScript", "SCRIPTS", "dialogs_for", "unsupported", "words"]


def words(text: str) -> str:
    """A regex for `text` on a terminal screen: words may be apart by spaces or cursor moves."""
    return r"(?:\s|\x1b\[[0-9;]*[A-Za-z])+".join(re.escape(w) for w in text.split())


class Dialog(NamedTuple):
    """A first-run dialog: the regex that shows it, the keys that pass it, and (when the TUI raises it only for some
    models) a regex the profile's model name must match for it to come."""

    pattern: str
    keys: str
    model: str | None = None


@dataclass(frozen=True)
class TuiScript:
    ready: str  # a regex that shows the input box is up
    quit: str  # the TUI's own quit command
    dialogs: tuple[Dialog, ...] = ()  # first-run dialogs, in the order they come
    permission: str | None = None  # a regex for a permission dialog the TUI raises mid-run
    decline: str = "\x1b"  # the keys that answer it "no"
    declined: str | None = None  # a regex that shows a declined dialog ended the turn (the model is not asked on)
    echo: bool = False  # submit only once the typed prompt is drawn (a TUI that takes fast input for a paste)
    # a TUI still busy when the prompt was submitted may keep it in the input box with a hint (`busy`) and want
    # other keys (`queue`) to take it once it is free
    busy: str | None = None
    queue: str = "\t"


SCRIPTS = {
    # Claude Code 2.1.x: a permission dialog ends in "Do you want to proceed?" (or "...make this edit"); Esc
    # declines it, which interrupts the whole turn ("Interrupted · What should Claude do instead?"): the model is
    # not asked again until the person types, so the run ends there.
    "claude-code": TuiScript(
        ready=words("for shortcuts"),
        quit="/exit",
        permission=words("Do you want"),
        declined=words("What should Claude do instead?"),
    ),
    # Codex 0.171: the compiled project is untrusted, so it first asks how to open it ("Open restricted",
    # Enter); after the input box is drawn it offers a model migration ("Meet GPT-6 Sol": "2. Use existing
    # model", then Enter); it reads fast input as a paste, where Enter is a newline, so the prompt is
    # submitted once it is drawn. Under `shell: ask` (approval_policy untrusted) it raised no dialog for a
    # workspace write (docs/harnesses/codex.md), only for a command it deems dangerous (`rm -rf`).
    "codex": TuiScript(
        ready=words("Ask Codex to do anything"),
        quit="/quit",
        # the migration is offered from a catalogued model (gpt-5.5), not from one Codex does not
        # know (`setup.uncatalogued_model`: "scripted")
        dialogs=(Dialog(words("Open restricted"), "\r"), Dialog(words("Use existing model"), "2\r", model=r"^gpt-")),
        echo=True,
        # under `shell: ask` a dangerous command raises "Would you like to run the following
        # command? ... 3. No, and tell Codex what to do differently (esc)"; Esc prints "You canceled
        # the request to run ..." and "Conversation interrupted": the turn ends there (0.171.0)
        permission=words("Would you like to run the following command?"),
        declined=words("Conversation interrupted"),
        # Enter while it still works on something of its own leaves the prompt in the box with "tab
        # to queue message": Tab queues it, sent once the TUI is free
        busy=words("tab to queue message"),
    ),
    # OpenCode 1.18.33: no first-run dialog; the input box says "Ask anything". Enter typed in the same burst as a
    # slash command is lost (the command's completion list is still opening), so input is submitted once drawn. An
    # `ask` raises "Permission required ... Allow once / Allow always / Reject"; Esc rejects it, which stops the
    # agent loop (OpenCode's default, `continue_loop_on_deny` unset): the rejected call is struck through, the
    # model is not asked again, and the step's token count is drawn in the sidebar as it ends.
    "opencode": TuiScript(
        ready=words("Ask anything"),
        quit="/exit",
        permission=words("Permission required"),
        declined=r"[0-9][0-9,]* tokens",
        echo=True,
    ),
    # Hermes 0.19.0 (`hermes`, its prompt_toolkit CLI): no first-run dialog; ready once it says "Type your message
    # or /help for commands". A dangerous command under approvals.mode manual raises "1. Allow once 2. Allow for
    # this session 3. Add to permanent allowlist 4. Deny"; "4" denies at once, and the refusal ("BLOCKED: User
    # denied this command ...") goes back to the model, which then says its closing words.
    "hermes": TuiScript(
        ready=words("Type your message"), quit="/exit", permission=words("Add to permanent allowlist"), decline="4"
    ),
}

# Why a harness has no TUI driver yet (its TUI evidence is then missing, and the claims say so).
_UNSUPPORTED: dict[str, str] = {}


def dialogs_for(script: TuiScript, model: str | None) -> tuple[Dialog, ...]:
    """The first-run dialogs a TUI raises for a profile whose model is `model`."""
    return tuple(d for d in script.dialogs if d.model is None or re.search(d.model, model or ""))


def unsupported(harness: str) -> str | None:
    """Why `harness` cannot be driven through its TUI, or None when it can."""
    if harness in SCRIPTS:
        return None
    return _UNSUPPORTED.get(harness, "no driver for its TUI")
