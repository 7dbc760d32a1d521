"""Helpers of the hot paths (`sandbox run` and `launch` from their caches), standard library only.

Each cached start pays for every module it imports, so these avoid even some of the standard
library: hashlib (OpenSSL's start-up), subprocess, tempfile and shutil cost milliseconds that a
harness's own `--version` does not.
"""

import marshal
import os
import sys

# the built-in implementation, named by the version that has it: hashlib would load OpenSSL first (~2 ms per
# start), and a name tried in vain is looked for along the whole import path
try:
    if sys.version_info >= (3, 12):  # pragma: no cover - this machine's Python is 3.11
        from _sha2 import sha256
    else:
        from _sha256 import sha256
except ImportError:  # pragma: no cover - a Python built without them
    from hashlib import sha256

__all__ = [
    "sha256",
    "home_dir",
    "agentbox_home",
    "package_fingerprint",
    "resolve_profile_path",
    "write_json_atomic",
    "write_marshal_atomic",
    "read_marshal",
    "MARSHAL_TAG",
    "which",
    "run_root",
    "private_folder",
    "stat_key",
    "store_files",
    "store_signature",
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


def private_folder(prefix: str) -> str:
    """A new folder under the run root that only this user may enter (tempfile.mkdtemp without importing tempfile,
    which loads shutil and random: ~4 ms of the measured hot paths, benchmarks/sandbox_run.py)."""
    while True:
        path = os.path.join(run_root(), f"{prefix}{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue


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
    """The package's own files (code, declarations, catalogue) as a cache key part: what a compiled plan was built
    from. A regular install is named by its record (`RECORD`, which every install rewrites); a checkout or an
    editable install, whose files change under it, by every file's name, size and mtime."""
    if _fingerprint:
        return _fingerprint[0]
    h = sha256(CACHE_FORMAT.encode())
    record = _install_record()
    if record is not None:
        # one stat instead of a walk of ~2,600 entries (~12 ms, benchmarks/sandbox_run.py)
        st = os.stat(record)
        h.update(f"{record}:{st.st_ino}:{st.st_mtime_ns}:{st.st_size}".encode())
    else:
        for root, dirs, files in os.walk(_PKG):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".yaml", ".json")):
                    st = os.stat(os.path.join(root, name))
                    h.update(f"{name}:{st.st_mtime_ns}:{st.st_size};".encode())
    _fingerprint.append(h.hexdigest())
    return _fingerprint[0]


def _install_record() -> str | None:
    """The RECORD of the distribution installed beside the package (a wheel's install, in its site folder), or
    None for a checkout or an editable install (their package folder has no dist-info beside it)."""
    site = os.path.dirname(_PKG)
    try:
        names = [n for n in os.listdir(site) if n.startswith("agent_box-") and n.endswith(".dist-info")]
    except OSError:
        return None
    if len(names) != 1:  # none, or leftovers of two installs: nothing says which one the files are
        return None
    record = os.path.join(site, names[0], "RECORD")
    try:
        with open(record) as f:
            listed = f.read()
    except OSError:
        return None
    # the record names this package's files (an editable install's names only its finder)
    return record if "agentbox/hot.py," in listed else None


def store_files(store: str) -> list[str]:
    """An evidence store's files: the store itself when it is a file, else every `*.jsonl` below it (folders
    reached through a link are not entered), sorted name by name."""
    if os.path.isfile(store):
        return [store]
    if not os.path.isdir(store):
        return []
    found: list[str] = []
    pending = [store]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(".jsonl"):
                    found.append(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
    return sorted(found, key=lambda p: p.split("/"))


def store_signature(store: str) -> list[list]:
    """What an evidence store's content depends on, cheaply: [path, inode, size, mtime] per file (a cache key).
    os.scandir, not pathlib: pathlib costs ~4 ms of the measured launch (benchmarks/launch.py)."""
    out = []
    for path in store_files(os.path.normpath(store)):
        st = os.stat(path)
        out.append([path, st.st_ino, st.st_size, st.st_mtime_ns])
    return out


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
    import json  # json loads re and enum (~7 ms a start): `sandbox run` reads its cache without it (benchmarks/sandbox_run.py)

    _replace(path, json.dumps(data).encode())


# The marshal format is this interpreter's own: a cache written in it is named by the interpreter too, so another
# Python sharing AGENTBOX_HOME (a second install, a checkout) keeps its own entries.
MARSHAL_TAG = f"{sys.implementation.cache_tag}-m{marshal.version}"


def write_marshal_atomic(path: str, data) -> None:
    """`write_json_atomic` in marshal (plain data only), which this interpreter reads without importing anything:
    for the cache of `sandbox run`, whose start json would lengthen by ~7 ms (benchmarks/sandbox_run.py)."""
    _replace(path, marshal.dumps(data))


# a plan is a few kilobytes; an entry claiming more is damaged, and marshal would allocate what it claims
_MARSHAL_LIMIT = 16 << 20


def read_marshal(path: str):
    """What `write_marshal_atomic` wrote, or None when it is missing, too large or unreadable (the caller
    recomputes it)."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > _MARSHAL_LIMIT:
                return None
            return marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError, MemoryError):
        return None


def _replace(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
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
