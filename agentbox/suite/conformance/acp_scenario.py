"""The scripted scenario the ACP tests share: one shell call that every harness asks about under `shell: ask`,
with its proof file, and the native arguments that make each dialect ask. Test knowledge of the harnesses,
not product data."""

from __future__ import annotations

from pathlib import Path

import agentbox

PROOF = "acp-proof.txt"
FINAL = "acp-smoke-done"
# `chmod 666` is on Hermes's dangerous-command list (it asks only for those); the others ask for any shell
# call under shell: ask.
COMMAND = f"echo approved > {PROOF} && chmod 666 {PROOF}"
# Native shell-call arguments that make a harness ask, per (harness, dialect). Codex's newest dialect
# compiles shell: ask to approval_policy on-request: a sandboxed command runs unasked, a request to run
# outside Codex's own sandbox asks (older dialects compile "untrusted", which asks for any command and
# rejects an escalation request outright).
SHELL_ARGUMENTS = {
    ("codex", "profiles_on_request"): {
        "sandbox_permissions": "require_escalated",
        "justification": "agentbox ACP smoke",
    }
}
SHELL_ASK = {
    "workspace": {"access": "read_write", "requirement": "required"},
    "command_network": {"access": "none", "requirement": "required"},
    "shell": {"access": "ask", "requirement": "advisory"},
}
# where the package is imported from: bound read-only into sandboxes whose helpers import it
REPO = Path(agentbox.__file__).resolve().parents[1]


def asking_vocabulary(harness, probe):
    """The harness's tool vocabulary, with the shell call's arguments that make this dialect ask."""
    vocab = harness.adapter().tool_vocabulary
    extra = SHELL_ARGUMENTS.get((harness.name, probe.dialect))
    if extra:
        vocab = vocab.model_copy(
            update={"shell": vocab.shell.model_copy(update={"arguments": {**vocab.shell.arguments, **extra}})}
        )
    return vocab


def adapter_pin(adapter: str) -> str:
    try:
        from agentbox.harnesses.matrix import load_matrix

        return load_matrix("default").acp_adapters.get(adapter, "VERSION")
    except Exception:
        return "VERSION"
