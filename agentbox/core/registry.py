"""The harnesses this install knows: the `agentbox.harnesses` entry points of every installed distribution.

A harness is one adapter and its data, registered by an entry point (`NAME = "module:ADAPTER"`); nothing in
core lists them, and a harness another distribution registers is compiled, listed and tested like the
packaged ones. The profile schema's names, the matrices, the suite's parametrization and the report all come
from here. Names are sorted, so an order never depends on which distribution was installed first.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from agentbox.errors import InputError

if TYPE_CHECKING:
    from agentbox.compile.adapters.base import HarnessAdapter

__all__ = ["GROUP", "harness_names", "adapter", "data_dir", "PACKAGED_DATA"]

GROUP = "agentbox.harnesses"
# Where the packaged harnesses keep their data (declarations, vocabulary, install recipe, ACP entry, TUI
# script); an adapter of another distribution names its own folder of the same layout (`HarnessAdapter.data_dir`).
PACKAGED_DATA = Path(__file__).parents[1] / "data"


@lru_cache(maxsize=None)
def _entries() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=GROUP):
        # an editable install and a wheel of the same distribution both on the path name the same adapter
        if point.name in found and found[point.name].value != point.value:
            raise InputError(
                f"harness {point.name!r} is registered twice ({found[point.name].value} and {point.value}), "
                f"entry point group {GROUP}: uninstall one of the distributions"
            )
        found[point.name] = point
    return dict(sorted(found.items()))


def harness_names() -> tuple[str, ...]:
    """Every registered harness, sorted by name."""
    return tuple(_entries())


@lru_cache(maxsize=None)
def adapter(name: str) -> HarnessAdapter:
    """The adapter registered as `name`, imported on first use (a command pays only for the harness it uses)."""
    try:
        point = _entries()[name]
    except KeyError:
        raise ValueError(f"unknown harness {name!r}; known: {', '.join(harness_names())}") from None
    loaded: HarnessAdapter = point.load()
    if loaded.name != name:
        raise InputError(f"entry point {GROUP} {name} = {point.value}: the adapter calls itself {loaded.name!r}")
    return loaded


def data_dir(name: str) -> Path:
    """The folder holding a registered harness's data; the packaged folder for a layer that is no harness."""
    return adapter(name).data_dir if name in _entries() else PACKAGED_DATA
