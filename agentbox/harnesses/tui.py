"""How each harness's interactive TUI is driven: what shows it is ready, its first-run dialogs, how it asks for a
permission and how that is declined, its quit command. The shape of a TUI script and its lookup; the scripts are
data about the harnesses (`tui.yaml`: the packaged data folder's, and each registered harness's own, beside its
declarations), read by the suite's TUI driver (`agentbox.testing.tui`) and by the launch and `prove`, which say
when a harness has no driver. Nothing here names a harness.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from agentbox.core.registry import PACKAGED_DATA, data_dir, harness_names
from agentbox.core.versions import Bound, Version, in_range

__all__ = ["Dialog", "TuiScript", "scripts", "dialogs_for", "unsupported", "words"]

_FILE = "tui.yaml"  # in the packaged data folder, and in a registered harness's own


def words(text: str) -> str:
    """A regex for `text` on a terminal screen: words may be apart by spaces or cursor moves."""
    return r"(?:\s|\x1b\[[0-9;]*[A-Za-z])+".join(re.escape(w) for w in text.split())


def _screen(value: Any) -> Any:
    """A screen pattern as the data file may write it: a regex, `{words: TEXT}` for `words(TEXT)`, or
    `{words: [TEXT, ...]}` for any one of those texts (a TUI that draws one of several, as a random placeholder)."""
    if not isinstance(value, dict):
        return value
    texts = value.get("words")
    if set(value) == {"words"} and isinstance(texts, str):
        return words(texts)
    if set(value) == {"words"} and isinstance(texts, list) and texts and all(isinstance(t, str) for t in texts):
        return "(?:" + "|".join(words(t) for t in texts) + ")"
    raise ValueError("a screen pattern is a regex, {words: TEXT} or {words: [TEXT, ...]} with at least one text")


Screen = Annotated[str, BeforeValidator(_screen)]  # a regex matched against the terminal's output


class Dialog(NamedTuple):
    """A first-run dialog: the regex that shows it, the keys that pass it, and when the TUI raises it only for some
    models or versions: a regex the profile's model name must match, the first and last harness versions that
    raise it (inclusive, as `agentbox.core.versions.in_range` reads them: a bound of fewer than three parts is a
    prefix)."""

    pattern: Screen
    keys: str
    model: str | None = None
    min_version: Bound = None
    max_version: Bound = None


class TuiScript(BaseModel):
    """One harness's entry of `tui.yaml`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ready: Screen  # shows the input box is up
    quit: str  # the TUI's own quit command
    dialogs: tuple[Dialog, ...] = ()  # first-run dialogs, in the order they come
    permission: Screen | None = None  # a permission dialog the TUI raises mid-run
    decline: str = "\x1b"  # the keys that answer it "no"
    declined: Screen | None = None  # shows a declined dialog ended the turn (the model is not asked on)
    echo: bool = False  # submit only once the typed prompt is drawn (a TUI that takes fast input for a paste)
    # a TUI still busy when the prompt was submitted may keep it in the input box with a hint (`busy`) and want
    # other keys (`queue`) to take it once it is free
    busy: Screen | None = None
    queue: str = "\t"


@lru_cache(maxsize=None)
def scripts() -> dict[str, TuiScript]:
    """Every registered harness's TUI script: the packaged ones, then each registered harness's own (its data
    folder); a harness without one has no TUI driver."""
    import yaml

    found: dict[str, TuiScript] = {}
    files = [f / _FILE for f in dict.fromkeys([PACKAGED_DATA, *(data_dir(n) for n in harness_names())])]
    for path in (p for p in files if p.is_file()):
        raw = yaml.safe_load(path.read_text()) or {}
        for name, spec in raw.items():
            try:
                found[name] = TuiScript.model_validate(spec)
            except ValidationError as exc:
                fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                raise ValueError(f"{path}: {name}: {fields}") from None
    unknown = sorted(set(found) - set(harness_names()))
    if unknown:
        raise ValueError(f"{', '.join(map(str, files))}: unknown harness(es): {', '.join(unknown)}")
    return found


def dialogs_for(script: TuiScript, model: str | None, version: str | None) -> tuple[Dialog, ...]:
    """The first-run dialogs a harness's TUI at `version` raises for a profile whose model is `model`; an unknown
    version (a probe that read none) is expected to raise every dialog its model does."""
    v = Version.parse(version) if version else None
    return tuple(
        d
        for d in script.dialogs
        if (d.model is None or re.search(d.model, model or ""))
        and (v is None or in_range(v, d.min_version, d.max_version))
    )


def unsupported(harness: str) -> str | None:
    """Why `harness` cannot be driven through its TUI, or None when it can."""
    return None if harness in scripts() else "no driver for its TUI"
