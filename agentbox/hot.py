"""Helpers of the hot paths (`sandbox run` and `launch` from their caches), standard library only.

Each cached start pays for every module it imports, so these avoid even some of the standard
library: hashlib (OpenSSL's start-up), subprocess, tempfile and shutil cost milliseconds that a
harness's own `--version` does not.
"""

from __future__ import annotations

import json
import os

try:  # the built-in implementation: hashlib would load OpenSSL first (~2 ms per start)
    from _sha256 import sha256
except ImportError:  # pragma: no cover - Python 3.12+ names it _sha2
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

__all__ = [
    "sha256",
    "home_dir",
    "agentbox_home",
    "package_fingerprint",
    "resolve_profile_path",
    "write_json_atomic",
    "which",
    "run_root",
    "stat_key",
    "KERNEL_TRACES",
    "kernel_traces",
]

_PKG = os.path.dirname(os.path.abspath(__file__))
CACHE_FORMAT = "1"
_fingerprint: list[str] = []


# the file a kernel with the feature shows (its absence is the first half of `vectors.kernel_lacks_here`)
KERNEL_TRACES: dict[str, str] = {"modules": "/proc/modules"}


def kernel_traces() -> list[str]:
    """The kernel features whose trace file this kernel shows: a stat each, cheap enough for a cached launch to
    check that the kernel its gate judged conditional claims for is still the one it runs on."""
    return [f for f, path in KERNEL_TRACES.items() if os.path.exists(path)]


def home_dir() -> str:
    return os.environ.get("HOME") or "/root"


def agentbox_home() -> str:
    env = os.environ.get("AGENTBOX_HOME")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    from agentbox.core.home import agentbox_home as slow  # platformdirs: only when AGENTBOX_HOME is unset

    return str(slow())


def run_root() -> str:
    """Where every run's own folder lives (its relay sockets, config home, decision log): under /tmp, which each run
    replaces with a private one, so no run sees another's. TMPDIR is not followed: a folder elsewhere would stay in
    view of every other run (readable), and inside another run's writable workspace (its sockets replaceable).
    AGENTBOX_RUN_ROOT names another folder under /tmp (a shorter or a longer path); one outside /tmp is ignored."""
    chosen = os.environ.get("AGENTBOX_RUN_ROOT")
    if chosen:
        real = os.path.realpath(chosen)
        if real.startswith("/tmp/") and os.path.isdir(real):
            return real
    return "/tmp"


def package_fingerprint() -> str:
    """The package's own files (code, declarations, catalogue), by name, size and mtime: a cache key part."""
    if _fingerprint:
        return _fingerprint[0]
    h = sha256(CACHE_FORMAT.encode())
    for root, dirs, files in os.walk(_PKG):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".yaml", ".json")):
                st = os.stat(os.path.join(root, name))
                h.update(f"{name}:{st.st_mtime_ns}:{st.st_size};".encode())
    _fingerprint.append(h.hexdigest())
    return _fingerprint[0]


def stat_key(path: str) -> list[int] | None:
    """What a file's content is trusted by while unchanged (as git trusts its index): device, inode, size,
    mtime and ctime; None when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def resolve_profile_path(arg: str) -> str | None:
    """A path as given, or a bare name under $AGENTBOX_HOME/profiles; None sends it to the full parser. A bare
    word is always a name (`profile._looks_like_path` says why)."""
    if "/" in arg or arg.endswith((".yaml", ".yml")):
        return arg
    for suffix in (".yaml", ".yml"):
        candidate = os.path.join(agentbox_home(), "profiles", arg + suffix)
        if os.path.exists(candidate):
            return candidate
    return None


def write_json_atomic(path: str, data) -> None:
    """Readers see the old file or the new one, never half of one (concurrent launches share caches)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def which(name: str, path: str | None = None) -> str | None:
    """shutil.which for a plain command name, without importing shutil."""
    if "/" in name:
        return name if os.access(name, os.X_OK) and not os.path.isdir(name) else None
    for d in (path if path is not None else os.environ.get("PATH", os.defpath)).split(os.pathsep):
        candidate = os.path.join(d or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None
