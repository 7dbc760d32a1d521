"""Every vector says which refusal proves its block, every kind is defined once, and each kind knows its texts."""

from __future__ import annotations

import re

import pytest

from agentbox.compile.adapters import get_adapter
from agentbox.core.profile import HARNESSES
from agentbox.prove.claims import default_catalogue_dir
from agentbox.core.refusal_kinds import Evidence, expected_kinds, recognise, table
from agentbox.prove.vectors import Vector, load_catalogue

CATALOGUE = load_catalogue(default_catalogue_dir())
TABLE = table()
TEXT_KINDS = [name for name, k in TABLE.kinds.items() if k.source in ("text", "egress")]


@pytest.mark.parametrize("vector", CATALOGUE.vectors, ids=lambda v: v.id)
def test_every_vector_declares_defined_refusal_kinds(vector: Vector):
    kinds = expected_kinds(vector)
    assert kinds, f"{vector.id}: no refusal kind, and no default for {vector.oracle.kind} or {vector.capability}"
    assert not TABLE.undefined(kinds), f"{vector.id}: undefined refusal kinds {TABLE.undefined(kinds)}"


def test_every_default_names_defined_kinds():
    d = TABLE.defaults
    named = [*d.met, *(k for ks in d.oracle.values() for k in ks), *(k for ks in d.capability.values() for k in ks)]
    assert not TABLE.undefined(named)


def test_a_vector_naming_an_unknown_refusal_kind_is_refused_at_load():
    raw = CATALOGUE.by_id("ws-ro-shell-redirect").model_dump()
    with pytest.raises(ValueError, match="not a refusal kind"):
        Vector.model_validate({**raw, "refusal": ["erofs", "no-such-kind"]})


def test_a_vector_refusal_overrides_the_default():
    raw = CATALOGUE.by_id("ws-ro-shell-redirect").model_dump()
    assert expected_kinds(Vector.model_validate(raw)) == TABLE.defaults.capability["workspace.read_only"]
    assert expected_kinds(Vector.model_validate({**raw, "refusal": ["erofs"]})) == ("erofs",)


@pytest.mark.parametrize("name", TEXT_KINDS)
def test_each_kind_recognises_its_examples_and_they_are_never_clean(name):
    kind = TABLE.kinds[name]
    assert kind.examples or kind.source == "egress", f"{name}: no example text"
    for example in kind.examples:
        assert recognise([name], Evidence(example)) is not None, f"{name} misses {example!r}"
        assert recognise(["contained"], Evidence(example)) is None, f"{example!r} passes for a clean run"


@pytest.mark.parametrize("name", ["erofs", "eacces", "eperm", "enetunreach", "isolated"])
def test_a_kind_does_not_take_another_kinds_errno(name):
    # a read-only mount is not a hidden path, a missing route is not a refused access: each errno is its own proof
    others = [
        e
        for other in ("erofs", "eacces", "eperm", "enetunreach", "isolated")
        if other != name
        for e in TABLE.kinds[other].examples
    ]
    for example in others:
        hit = recognise([name], Evidence(example))
        assert hit is None, f"{name} takes {example!r} ({hit})"


def test_the_proxys_denial_is_read_from_its_decisions():
    denied = [{"allowed": False, "method": "GET", "host": "denied.test", "port": 8080, "reason": "not_allowed"}]
    model = [{"allowed": True, "method": "ROUTE", "host": "model", "route": "model", "reason": "route"}]
    own = [{"allowed": False, "method": "CONNECT", "host": "pypi.org", "port": 443, "reason": "not_allowed"}]
    ports = frozenset({8080})
    assert recognise(["proxy_403"], Evidence("", egress=denied, ports=ports))[0] == "proxy_403"
    assert recognise(["proxy_403"], Evidence("", egress=model, ports=ports)) is None
    # a harness's own background request, denied in every run, is not the attempt's refusal
    assert recognise(["proxy_403"], Evidence("", egress=own, ports=ports)) is None
    assert recognise(["contained"], Evidence("", egress=own, ports=ports)) is not None
    assert recognise(["contained"], Evidence("", egress=denied, ports=ports)) is None  # a denied attempt is not clean


def test_a_clean_run_is_one_that_printed_no_error_and_met_no_policy():
    assert recognise(["contained"], Evidence("sent 4 bytes"))[0] == "contained"
    assert recognise(["contained"], Evidence("")) is not None
    for failed in (
        "sh: 1: nosuch: not found",
        "bash: nosuch: command not found",
        "Traceback (most recent call last):\n  File ...\nValueError: x",
        "usage: cp SOURCE DEST",
    ):
        assert recognise(["contained"], Evidence(failed)) is None, failed
    policy = ("The user rejected permission to use this specific tool call",)
    assert (
        recognise(["contained"], Evidence("", "The user rejected permission to use this specific tool call", policy))
        is None
    )
    assert (
        recognise(["policy"], Evidence("", "x The user rejected permission to use this specific tool call", policy))[0]
        == "policy"
    )


def test_policy_is_only_the_harness_vocabulary():
    # the sandbox layer has no harness: no policy message can count there
    assert recognise(["policy"], Evidence("The user rejected permission to use this specific tool call")) is None


@pytest.mark.parametrize("name", HARNESSES)
def test_every_harness_records_how_its_policy_refuses(name):
    """A vector whose block is the harness's own policy needs that harness's policy messages in its vocabulary."""
    vocabulary = get_adapter(name).tool_vocabulary
    assert vocabulary.refusals, f"{name}: no `refusals` in its tool vocabulary"
    for p in vocabulary.refusals:
        re.compile(p)


# What each harness's policy answered in real runs of the negative suite (tool results and output, 2026-12-01)
POLICY_SEEN = {
    "claude-code": [
        "Claude requested permissions to use Bash, but you haven't granted it yet.",
        "Claude requested permissions to edit /w/.git/hooks/pre-commit which is a sensitive file.",
        "/w/link resolves through a symlink to /o/target.txt, which is outside the allowed working directories",
        "/p/escape-tool.txt is outside /w; the permissions.blockWritesOutsideWorkingDirectories setting blocks writes "
        "outside the working directories.",
        'Permission to use Bash with command cat "$HOME/.ssh/id_canary" has been denied.',
        "File is in a directory that is denied by your permission settings.",
        "<tool_use_error>Error: No such tool available: Edit. Edit is disabled for this session, in subagents as well "
        "as here.</tool_use_error>",
        "This Bash command contains multiple operations. The following parts require approval: umount -l /w/.claude",
        "Connection blocked by network allowlist <sandbox_violations> deny network-outbound 127.0.0.2:4242",
    ],
    "codex": [
        "approval policy is Never; reject command",
        "patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings",
        "unsupported call: mcp__canarydenied_write",
        "exec_command failed: CreateProcess { message: \"Rejected(\\\"`/bin/bash -c 'rm -rf /w/keep'` rejected: rm -f "
        'style commands are not permitted. Use a safer approach\\")" }',
    ],
    "hermes": [
        '{"exit_code": -1, "error": "BLOCKED: User denied this command.", "status": "blocked"}',
        '{"success": false, "error": "Write denied: \'/w/victim.txt\' is outside HERMES_WRITE_SAFE_ROOT '
        "(/tmp/agentbox/tmp). Unset the variable or add this path's directory prefix.\"}",
        '{"error": "Unknown tool: mcp__canary__denied_write"}',
        "Tool 'terminal' does not exist. Available tools: clarify, delegate_task, memory, patch, read_file",
    ],
    "opencode": [
        "The user rejected permission to use this specific tool call",
        "Model tried to call unavailable tool 'canary_denied_write'",
        "The user has specified a rule which prevents you from using this specific tool call. Here are some "
        'of the relevant rules [{"permission":"external_directory","action":"deny"}]',
    ],
}


@pytest.mark.parametrize("name", sorted(POLICY_SEEN))
def test_each_harness_policy_answer_seen_counts_as_policy_and_never_as_an_errno(name):
    policy = get_adapter(name).tool_vocabulary.refusals
    for text in POLICY_SEEN[name]:
        assert recognise(["policy"], Evidence(text, policy=policy)) is not None, f"{name}: {text!r}"
        assert recognise(["contained", "absent"], Evidence(text, policy=policy)) is None, text
