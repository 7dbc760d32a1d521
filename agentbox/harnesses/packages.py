"""How each installable (a harness, an ACP adapter) is fetched from its registry, and the binary it provides: the
packaged recipes (agentbox/data/packages.yaml), then each registered harness's own (its data folder)."""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from agentbox.core.registry import PACKAGED_DATA, data_dir, harness_names

__all__ = ["Package", "PACKAGES"]


class Package(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    registry: str
    package: str
    binary: str
    extras: tuple[str, ...] = ()
    post_install: tuple[str, ...] = ()  # installed in a second step, after the package and its extras


@lru_cache(maxsize=None)
def _packages() -> dict[str, Package]:
    """Every installable's recipe: the packaged ones, then each registered harness's own (its data folder)."""
    import yaml

    found: dict[str, Package] = {}
    for folder in dict.fromkeys([PACKAGED_DATA, *(data_dir(n) for n in harness_names())]):
        path = folder / "packages.yaml"
        if path.is_file():
            found.update({k: Package.model_validate(v) for k, v in yaml.safe_load(path.read_text()).items()})
    return found


PACKAGES = _packages
