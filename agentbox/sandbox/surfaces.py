"""Project config surfaces (seed 002): discover which exist and where their private backing lives."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from agentbox.errors import SandboxError
from agentbox.core.plan import Surface

__all__ = ["all_surfaces", "discover", "Mask", "backing_root", "materialize"]

_DATA = Path(__file__).parent.parent / "data" / "surfaces.yaml"


@lru_cache(maxsize=None)
def _registry() -> dict[str, tuple[Surface, ...]]:
    import yaml

    raw = yaml.safe_load(_DATA.read_text())
    return {name: tuple(Surface.model_validate(s) for s in entries) for name, entries in raw.items()}


@lru_cache(maxsize=None)
def all_surfaces() -> tuple[Surface, ...]:
    seen: dict[str, Surface] = {}
    for entries in _registry().values():
        for surface in entries:
            seen.setdefault(surface.path, surface)
    return tuple(seen[p] for p in sorted(seen))


@dataclass(frozen=True)
class Mask:
    """Bind `backing` over `target` inside the sandbox."""

    surface: Surface
    layer: str
    target: str
    backing: str


def backing_root(layer: str, profile: str) -> str:
    return os.path.join(layer, ".agentbox", "profiles", profile, "root")


def _git_root(cwd: str) -> str | None:
    here = Path(cwd)
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return str(d)
    return None


def _layers(cwd: str, discovery: str) -> list[str]:
    if discovery == "launch_root_only":
        return [cwd]
    root = _git_root(cwd)
    here = Path(cwd)
    if discovery == "ancestor_chain":
        # Parents count only when they already hold the entry or an .agentbox folder (checked later),
        # so Agent-Box never creates state in /home or /.
        return [str(d) for d in reversed((here, *here.parents))]
    if root is None:
        return [cwd]
    chain = [here, *here.parents]
    return [str(d) for d in reversed(chain[: chain.index(Path(root)) + 1])]


def discover(cwd: str, profile: str, surfaces: tuple[Surface, ...], hidden: tuple[str, ...] = ()) -> tuple[Mask, ...]:
    """The surfaces that exist on the host, each with its backing. Reads the file system, writes nothing.

    Layers the sandbox hides anyway (under `hidden`, outside the project) need no mask and get no state.
    """
    from agentbox.core.paths import is_within

    masks: dict[str, Mask] = {}
    for surface in surfaces:
        for layer in _layers(cwd, surface.discovery):
            if not is_within(layer, cwd) and any(is_within(layer, h) for h in hidden):
                continue
            target = os.path.join(layer, surface.path)
            if not os.path.lexists(target):
                continue
            if os.path.islink(target):
                raise SandboxError(f"project surface {target} is a symlink; refusing to mask it")
            is_dir = os.path.isdir(target)
            if is_dir != (surface.kind == "directory"):
                raise SandboxError(
                    f"project surface {target} is a {'directory' if is_dir else 'file'}, expected a {surface.kind}"
                )
            masks[target] = Mask(surface, layer, target, os.path.join(backing_root(layer, profile), surface.path))
    return tuple(masks[k] for k in sorted(masks))


def materialize(masks: tuple[Mask, ...]) -> None:
    """Create each blank backing if missing. Never copies anything from the host entry."""
    from agentbox.sandbox.session import make_backing

    for mask in masks:
        make_backing(mask.backing, mask.surface.kind, mask.surface.default_text)
