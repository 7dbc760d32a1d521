"""The words of a refused launch: each gap once, what to do about it, in lines a terminal shows whole."""

from __future__ import annotations

from dataclasses import replace

import yaml

from agentbox.gate import Target, decide
from agentbox.gate.refusal import WIDTH, Remedies, evidence_command, fill, prove_command

from test_gate import CAP, TARGET, VECTORS, claim, item, said

NET = "command_network.none"
HOME = "host_home.hidden"
ALL_VECTORS = {CAP: VECTORS[CAP], NET: ("net-curl", "net-wget"), HOME: tuple(f"home-{i}" for i in range(12))}


def refused_everywhere(target=TARGET, **remedies):
    """Four required items refused in every way a refusal words: no evidence, a plan gap, a refutation."""
    items = [
        item(),
        item(name="command_network", capability=NET),
        item(name="host_home", capability=HOME),
        item(name="shell", capability="shell.ask", coverage="partial"),
    ]
    decision = decide(
        items,
        {NET: claim("refuted", NET)},
        target,
        vectors=ALL_VECTORS,
        unproven={"": 70},
        errors=["CODEX_HOME lies under TMPDIR: Codex then refuses to start"],
    )
    return replace(decision, remedies=Remedies(**remedies))


def test_every_line_of_a_refusal_fits_in_100_columns_after_the_prefix_it_is_printed_with():
    decision = refused_everywhere(
        stated={"workspace": {"access": "read_only"}}, proven_elsewhere={CAP: ("claude-code@2.1.332", "codex@0.170.0")}
    )
    lines = decision.message(lead="agent-box: ").splitlines()
    assert lines[0].startswith("agent-box: refusing to launch: 5 required item(s)")
    assert max(len(line) for line in lines) <= WIDTH, [line for line in lines if len(line) > WIDTH]


def test_a_gap_several_items_share_is_stated_once_and_the_others_refer_to_it():
    message = said(refused_everywhere())
    assert message.count("no evidence recorded for this build") == 1
    assert "host_home (host_home.hidden): claim unverified, composed layer: as for workspace [home-0," in message
    assert "+4 more]" in message  # each item still names its own vectors


def test_vectors_the_reason_already_names_are_not_named_again():
    message = said(refused_everywhere())
    assert (
        "claim refuted, composed layer: escaped where the declarations predict a block (escaped: ws-ro-tee) -"
        in message
    )
    assert message.count("ws-ro-tee") == 2  # the refuted item's, and the workspace item's own missing vector


def test_what_every_item_has_in_common_is_offered_once():
    decision = refused_everywhere(stated={"workspace": {"access": "read_only"}, "host_home": {"access": "hidden"}})
    message = said(decision)
    assert message.count("pytest --agentbox-suite") == 1 and message.count("permission_intent:") == 1
    assert "record the evidence for this exact build (workspace, command_network, host_home):" in message
    assert f"{evidence_command(TARGET)} --agentbox-mode tui" in message  # a launch reads tui evidence
    assert message.count("--accept-unverified") == 2  # the unverified items only, never the refuted one


def test_a_refusal_shows_the_yaml_that_makes_each_refused_item_advisory():
    stated = {
        "workspace": {"access": "read_only"},
        "command_network": {"access": "none"},
        "host_home": {"access": "hidden"},
        "shell": {"access": "ask"},
    }
    lines = refused_everywhere(stated=stated).message().splitlines()
    start = lines.index("      permission_intent:")
    block = "\n".join(line[6:] for line in lines[start : start + 5])
    assert yaml.safe_load(block) == {
        "permission_intent": {name: {**fields, "requirement": "advisory"} for name, fields in stated.items()}
    }
    assert "        workspace: {access: read_only, requirement: advisory}" in lines


def test_an_item_the_launch_could_not_read_from_the_profile_is_told_which_field_to_set():
    assert "set requirement: advisory on permission_intent.workspace" in said(refused_everywhere())


def test_a_refusal_names_the_harness_versions_on_which_the_evidence_proves_an_item():
    message = said(
        refused_everywhere(
            proven_elsewhere={CAP: ("claude-code@2.1.332",), HOME: ("claude-code@2.1.332",), NET: ("opencode@1.18.33",)}
        )
    )
    assert "pick a harness or version on which the evidence proves it" in message
    assert "workspace, host_home: claude-code@2.1.332 command_network: opencode@1.18.33" in message
    assert "shell: none in this evidence store" in message


def test_no_harness_version_is_offered_when_the_store_proves_the_items_nowhere():
    assert "pick a harness" not in said(refused_everywhere())


def test_an_item_whose_plan_has_no_sandbox_layer_is_offered_the_sandbox_layer():
    bare = decide([item(layers=("harness",))], {}, TARGET, vectors=VECTORS)
    assert "add the sandbox layer for workspace: its plan has none" in said(bare)
    assert "add the sandbox layer" not in said(decide([item()], {}, TARGET, vectors=VECTORS))


def test_a_harness_no_driver_can_run_in_the_launch_mode_gets_the_headless_command_and_the_reason():
    decision = replace(
        decide([item()], {}, TARGET, vectors=VECTORS), remedies=Remedies(driver_missing="no driver for its TUI yet")
    )
    message = said(decision)
    assert evidence_command(TARGET) in message and "--agentbox-mode" not in message  # headless, not tui
    assert "codex cannot be driven in its tui (no driver for its TUI yet)" in message


def test_a_long_command_is_wrapped_between_its_arguments_and_still_pastes_whole():
    target = Target("claude-code", "2.1.332", "cd" * 32, "bwrap", "/var/lib/agentbox/prove/evidence/" + "x" * 40)
    lines = decide([item()], {}, target, vectors=VECTORS).message().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("pytest --agentbox-suite"))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith(" \\"))
    assert end > start and all(len(line) <= WIDTH for line in lines[start : end + 1])
    pasted = " ".join(line.strip().removesuffix(" \\") for line in lines[start : end + 1])
    assert pasted == evidence_command(target, "tui")


def test_a_word_longer_than_a_line_stays_whole_on_a_line_of_its_own():
    assert fill(["a", "b" * 30, "c"], "- ", "  ", width=20) == ["- a", "  " + "b" * 30, "  c"]


def test_an_evidence_store_path_with_a_space_is_quoted_in_the_command():
    target = Target("codex", "0.171.0", None, "bwrap", "/my store")
    assert evidence_command(target).endswith("--agentbox-evidence-dir '/my store'")


def test_a_refusal_with_a_profile_at_hand_names_the_prove_command_that_settles_it():
    decision = replace(
        decide([item()], {}, TARGET, vectors=VECTORS),
        remedies=Remedies(prove=prove_command("/p/reviewer.yaml", "/src/app", None, "tui")),
    )
    message = decision.message()
    assert "agent-box prove /p/reviewer.yaml --cwd /src/app" in message
    assert "pytest" not in message


def test_the_prove_command_says_the_store_and_the_mode_only_when_they_are_not_the_defaults():
    assert prove_command("p.yaml", "/w") == "agent-box prove p.yaml --cwd /w"
    assert (
        prove_command("p.yaml", "/w", "/my store", "acp")
        == "agent-box prove p.yaml --cwd /w --evidence '/my store' --mode acp"
    )
