"""Where Agent-Box keeps its state: one variable, AGENTBOX_HOME, relocates all of it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["agentbox_home", "profiles_dir", "evidence_dir", "harnesses_dir", "cache_dir", "db_path"]


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


def harnesses_dir() -> Path:
    return agentbox_home() / "harnesses"


def cache_dir() -> Path:
    return agentbox_home() / "cache"


def db_path() -> Path:
    return agentbox_home() / "agentbox.db"
