"""The text of a refused launch: what is not proven, then what the user can do about it.

The gate (`gate.decide`) decides; this module only words the decision. A refusal is read in a
terminal, so every line is wrapped to `WIDTH` columns (a single word longer than that, such as a long
path, stays whole), and each gap is stated once: an item refused for the very reason already given
for an earlier one says "as for ITEM" instead of repeating it, and what the items have in common (the
profile edit, the harness versions to pick, the evidence command) is said once for all of them.
Commands are wrapped between their arguments with shell continuations, so they still paste whole.

The options, in the order a user can take them:
- make the item advisory in the profile (the exact YAML to write);
- add the sandbox layer, for an item whose plan has none;
- pick a harness or version on which the evidence proves the item, if the store has any
  (`Remedies.proven_elsewhere`);
- record the missing evidence for this exact build (`agent-box prove`, which runs exactly the vectors of
  the refused items in the mode the launch reads, or headless with the reason where no driver can run the
  harness in that mode);
- accept the unverified items by name (never a refuted or partial one).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import yaml

if TYPE_CHECKING:
    from agentbox.gate import Decision, ItemVerdict, Target

__all__ = ["WIDTH", "Remedies", "render", "evidence_command", "prove_command", "fill"]

WIDTH = 100
_SHOWN = 8  # vector ids named per item; the rest are counted
_UNPROVEN = {
    "synthetic": "not counted: {n} synthetic vector run(s) of this build (made up for tests or benchmarks); "
    "synthetic evidence never proves a build",
    "": "not counted: {n} vector run(s) of this build whose records do not say where they came from (written "
    "before evidence recorded its provenance); re-run the suite to prove this build",
    # `evidence_index.unproven` of an `agent-box acp` start: acp runs that speak for another program than it starts
    "adapter unrecorded": "not counted: {n} acp vector run(s) of this build recorded before the adapter was "
    "recorded (which ACP adapter build ran is unknown); re-run the suite in acp mode to prove the installed one",
    "another adapter": "not counted: {n} acp vector run(s) of this build by another build of its ACP adapter, "
    "another program than the one this start runs; re-run the suite in acp mode to prove the installed one",
}


@dataclass(frozen=True)
class Remedies:
    """What only a refusal needs, found by the launch when it refuses (it reads every build's evidence)."""

    # item -> its fields as the profile states them (defaults left out), for the YAML that makes it advisory
    stated: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # capability -> the other harness versions ("name@version") whose evidence proves it for this launch
    proven_elsewhere: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # why the harness cannot be driven in the mode the launch reads evidence of, when it cannot
    driver_missing: str | None = None
    # the `agent-box prove` command for this profile, folder, store and mode (`prove.prove_command`)
    prove: str | None = None


def prove_command(profile: str, cwd: str | None, evidence: str | None = None, mode: str = "tui") -> str:
    """The `agent-box prove` command a refusal names: it runs exactly what that launch needs. `mode`: the
    launch's (tui, `launch`'s own, is left unsaid); `evidence`: a store other than the default."""
    words = ["agent-box", "prove", shlex.quote(profile)]
    if cwd:
        words += ["--cwd", shlex.quote(cwd)]
    if evidence:
        words += ["--evidence", shlex.quote(evidence)]
    if mode != "tui":
        words += ["--mode", mode]
    return " ".join(words)


def evidence_command(target: "Target", mode: str = "headless") -> str:
    """The whole suite for this build, where no profile is at hand to `agent-box prove`."""
    spec = f"{target.harness}@{target.version}" if target.version else target.harness
    command = (
        f"pytest --agentbox-suite -m negative --agentbox-harness {spec} "
        f"--agentbox-evidence-dir {shlex.quote(target.evidence_dir)}"
    )
    return command if mode == "headless" else f"{command} --agentbox-mode {mode}"


def fill(words: Iterable[str], first: str, rest: str, width: int = WIDTH) -> list[str]:
    """`words` joined by spaces into lines of at most `width` columns, the first starting with `first`, the
    others with `rest`. A word is never split: one longer than a line gets a line of its own."""
    lines: list[str] = []
    line, empty = first, True
    for word in words:
        if not empty and len(line) + 1 + len(word) > width:
            lines.append(line)
            line, empty = rest, True
        line += word if empty else " " + word
        empty = False
    return [*lines, line]


def _para(text: str, first: str = "", rest: str = "") -> list[str]:
    return fill(text.split(), first, rest)


def _command(argv: str, indent: str) -> list[str]:
    """A command wrapped between its arguments, each break a shell continuation. An option stays on the line
    of its value, and the program on the line of its subcommand, unless the pair alone overflows a line."""
    words: list[str] = []
    for word in argv.split(" "):
        pair = f"{words[-1]} {word}" if words else ""
        if words and not word.startswith("--") and len(indent) + len(pair) + 4 <= WIDTH:
            words[-1] = pair
        else:
            words.append(word)
    lines = fill(words, indent, indent + "  ", WIDTH - 2)
    return [line + " \\" for line in lines[:-1]] + lines[-1:]


def _vectors(ids: tuple[str, ...]) -> str:
    shown = ", ".join(ids[:_SHOWN]) + (f", +{len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")
    return f" [{shown}]" if ids else ""


def _items(refused: tuple["ItemVerdict", ...]) -> list[str]:
    lines: list[str] = []
    said: dict[tuple[str, str], str] = {}  # (layer, reason) -> the first item refused for it
    for v in refused:
        first = said.setdefault((v.layer, v.reason), v.item)
        reason = v.reason if first == v.item else f"as for {first}"
        # a reason that already names every failing vector (its claim's notes) is not followed by them again
        vectors = "" if set(v.vectors) <= set(re.findall(r"[\w.@-]+", reason)) else _vectors(v.vectors)
        lines += _para(
            f"{v.item} ({v.capability}): claim {v.claim}, {v.layer} layer: {reason}{vectors}", "  - ", "    "
        )
    return lines


def _advisory(refused: tuple["ItemVerdict", ...], stated: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = _para(
        "make it advisory in the profile (an advisory item never refuses a launch; it runs unproven, "
        "and the Run records it so):",
        "  - ",
        "    ",
    )
    known = {v.item: {**stated[v.item], "requirement": "advisory"} for v in refused if v.item in stated}
    if known:
        text = yaml.safe_dump(
            {"permission_intent": known}, sort_keys=False, default_flow_style=None, width=WIDTH - 8, allow_unicode=True
        )
        lines += [f"      {line}" for line in text.splitlines()]
    for v in refused:
        if v.item not in known:
            lines += _para(f"set requirement: advisory on permission_intent.{v.item}", "      ", "      ")
    return lines


def _elsewhere(refused: tuple["ItemVerdict", ...], proven: Mapping[str, tuple[str, ...]]) -> list[str]:
    lines = _para(
        "pick a harness or version on which the evidence proves it (agent-box harness install "
        "NAME@VERSION, and harness: NAME in the profile):",
        "  - ",
        "    ",
    )
    groups: dict[tuple[str, ...], list[str]] = {}
    for v in refused:
        groups.setdefault(tuple(proven.get(v.capability, ())), []).append(v.item)
    for builds, items in groups.items():
        where = ", ".join(builds) if builds else "none in this evidence store"
        lines += _para(f"{', '.join(items)}: {where}", "      ", "        ")
    return lines


def _evidence(decision: "Decision", composed: list[str]) -> list[str]:
    driver = decision.remedies.driver_missing
    mode = "headless" if driver else decision.mode
    lines = _para(f"record the evidence for this exact build ({', '.join(composed)}):", "  - ", "    ")
    lines += _command(decision.remedies.prove or evidence_command(decision.target, mode), "      ")
    if driver:
        lines += _para(
            f"{decision.target.harness} cannot be driven in its {decision.mode} ({driver}): that run "
            f"records headless evidence, which proves an item for a launch only where the sandbox alone "
            f"blocks every vector of it",
            "    ",
            "    ",
        )
    return lines


def render(decision: "Decision", lead: str = "") -> str:
    """The refusal's text, starting with `lead` (what the caller prints it after: it counts toward the width)."""
    refused = decision.refused
    n = len(refused) + len(decision.errors)
    lines = _para(f"refusing to launch: {n} required item(s) not proven for {decision.target.label}:", lead, "  ")
    lines += _items(refused)
    for error in dict.fromkeys(decision.errors):
        lines += _para(error, "  - ", "    ")
    for kind, count in decision.unproven:
        lines += _para(_UNPROVEN.get(kind, _UNPROVEN[""]).format(n=count), "", "  ")
    if refused:
        lines.append("to launch, for each item, one of:")
        lines += _advisory(refused, decision.remedies.stated)
        bare = [v.item for v in refused if not v.sandboxed]
        if bare:
            lines += _para(
                f"add the sandbox layer for {', '.join(bare)}: its plan has none; agent-box launch runs "
                f"the harness in {decision.target.backend}, which must be installed",
                "  - ",
                "    ",
            )
        if any(decision.remedies.proven_elsewhere.get(v.capability) for v in refused):
            lines += _elsewhere(refused, decision.remedies.proven_elsewhere)
    composed = [v.item for v in refused if v.layer in ("composed", "acp")]
    if composed:
        lines += _evidence(decision, composed)
    elif decision.unproven:
        lines += _para("re-run the suite for this exact build with:", "  - ", "    ")
        lines += _command(decision.remedies.prove or evidence_command(decision.target, decision.mode), "      ")
    unverified = [v.item for v in refused if v.claim == "unverified" and v.layer in ("composed", "acp")]
    if unverified:
        flags = [f"--accept-unverified {name}" for name in unverified]
        lines += fill(
            [
                *"or relaunch with".split(),
                *flags,
                *("to run past these unverified items, named one by one (never past refuted or partial ones)").split(),
            ],
            "  - ",
            "    ",
        )
    return "\n".join(lines)
