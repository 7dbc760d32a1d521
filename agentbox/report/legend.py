"""The legend's entries beyond the states (states.yaml): what a cell shows besides its state symbol.

Both renderers list the states, then these, from here, so the Markdown legend explains every mark
the HTML one does and the two cannot drift apart.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Mark", "MARKS", "NOT_APPLICABLE", "LAYER_WORDS", "layer_word"]

NOT_APPLICABLE = "–"
LAYER_WORDS = ("sandbox", "harness", "both", "none")


class Mark(NamedTuple):
    symbol: str
    name: str
    meaning: str


MARKS = (
    Mark(NOT_APPLICABLE, "n/a", "no claim for this capability in this column."),
    Mark(
        "n/m",
        "as declared",
        "of the m vectors bearing on the claim (those not run included), n behaved as "
        "the declarations predict: blocked, or escaped through a declared bypass. A cell's details also say how "
        "many of the m ran.",
    ),
    Mark(
        " / ".join(LAYER_WORDS),
        "enforced by",
        "the layer whose declaration enforces the capability (both: sandbox and harness; none: no layer does).",
    ),
)


def layer_word(enforced_by: tuple[str, ...]) -> str:
    """The word a cell shows for the layers whose declaration enforces it."""
    if not enforced_by:
        return "none"
    return "both" if len(enforced_by) > 1 else enforced_by[0]
