"""The project's tox plugin (tox loads `toxfile.py` from the project root by itself).

It adds one environment per harness version of `matrices/*.yaml`, named by the version's id
(`tox -e codex-0.171.0`); each takes its settings from the `[agentbox:harness]` section of tox.ini,
where `{agentbox_harness}` is `NAME@VERSION` and `{agentbox_install}` what the version needs
installed (the harness and the ACP adapter that drives it). The `report` environment depends on all
of them, so `tox -p` renders the report last.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from tox.config.loader.memory import MemoryLoader
from tox.config.types import EnvList
from tox.plugin import impl
from tox.report import HandledError

from agentbox.errors import InputError
from agentbox.harnesses.matrix import Cell, cells, default_matrices, load_matrix

if TYPE_CHECKING:
    from tox.config.sets import ConfigSet, EnvConfigSet
    from tox.session.state import State

ROOT = Path(__file__).resolve().parent
TEMPLATE = "agentbox:harness"  # the tox.ini section a generated environment reads its settings from
REPORT = "report"


@lru_cache(maxsize=1)
def _cells() -> dict[str, Cell]:
    try:
        return {c.tox_env: c for c in cells(load_matrix(p) for p in default_matrices(ROOT))}
    except InputError as exc:
        raise HandledError(f"matrices: {exc}") from None


@impl
def tox_extend_envs() -> list[str]:
    return list(_cells())


@impl
def tox_add_core_config(core_conf: ConfigSet, state: State) -> None:
    for name in _cells():
        state.conf.memory_seed_loaders[name].append(MemoryLoader(base=[TEMPLATE, "testenv"]))
    state.conf.memory_seed_loaders[REPORT].append(MemoryLoader(depends=EnvList(list(_cells()))))


@impl
def tox_add_env_config(env_conf: EnvConfigSet, state: State) -> None:
    cell = _cells().get(env_conf.name)
    if cell is None:
        return
    env_conf.add_config(
        keys=["agentbox_harness"],
        of_type=str,
        default=f"{cell.harness}@{cell.version}",
        desc="the harness version under test, NAME@VERSION",
    )
    env_conf.add_config(
        keys=["agentbox_install"],
        of_type=str,
        default=" ".join(cell.install),
        desc="what `agent-box harness install` installs for it",
    )
