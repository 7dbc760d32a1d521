"""Where Agent-Box keeps its state: one variable, AGENTBOX_HOME, relocates all of it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "agentbox_home",
    "profiles_dir",
    "evidence_dir",
    "evidence_store",
    "harnesses_dir",
    "cache_dir",
    "index_dir",
    "db_path",
]


def agentbox_home() -> Path:
    env = os.environ.get("AGENTBOX_HOME")
    if env:
        return Path(env).expanduser().absolute()
    from platformdirs import user_data_dir  # lazy: off the hot path when AGENTBOX_HOME is set

    return Path(user_data_dir("agentbox", appauthor=False))


def profiles_dir() -> Path:
    return agentbox_home() / "profiles"


def evidence_dir() -> Path:
    return agentbox_home() / "evidence"


def evidence_store(given: str | os.PathLike[str] | None) -> Path:
    """The evidence store a command reads: the one given, which must exist (a typo is not an empty store), or the
    default one, which is simply empty until a suite run writes to it."""
    if not given:
        return evidence_dir()
    path = Path(given).absolute()
    if not path.exists():
        from agentbox.errors import InputError

        raise InputError(
            "no such evidence store (a typo?): give an existing folder or .jsonl file, or leave the "
            "option out for the default store",
            file=str(path),
        )
    return path


def harnesses_dir() -> Path:
    return agentbox_home() / "harnesses"


def cache_dir() -> Path:
    return agentbox_home() / "cache"


def index_dir() -> Path:
    """The evidence indexes (`evidence_index`): here, not in the stores, so that reading a store never writes to it."""
    return agentbox_home() / "index"


def db_path() -> Path:
    return agentbox_home() / "agentbox.db"
