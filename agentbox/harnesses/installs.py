"""Pinned harness installs under $AGENTBOX_HOME/harnesses/NAME/VERSION, and discovery of binaries."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable


from agentbox.errors import HarnessError, InputError
from agentbox.core.home import harnesses_dir
from agentbox.core import registry
from agentbox.harnesses.packages import PACKAGES, Package, _packages
from agentbox.core.versions import Version

__all__ = [
    "Installed",
    "installed",
    "install",
    "find_binary",
    "package_version",
    "PACKAGES",
    "layout",
    "parse_spec",
]


@dataclass(frozen=True)
class Installed:
    name: str
    version: str
    binary: str
    source: str  # "agentbox" or "PATH"
    probed: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def _binary_in(prefix: Path, pkg: Package) -> Path:
    if pkg.registry == "pypi":
        return prefix / "venv" / "bin" / pkg.binary
    return prefix / "node_modules" / ".bin" / pkg.binary


def _installed_version(prefix: Path, name: str, pkg: Package) -> str | None:
    """Read the version back from what the registry actually delivered."""
    if name in _harness_names():
        try:
            return registry.adapter(name).probe(str(_binary_in(prefix, pkg))).version
        except HarnessError:
            return None
    manifest = prefix / "node_modules" / pkg.package / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _harness_names() -> tuple[str, ...]:
    return registry.harness_names()


def layout(name: str) -> tuple[str, str, str]:
    """What `find_binary(name)` reads: (install folder, binary path inside a version folder, PATH name).

    The launch cache records the state of these, so a cached launch knows its binary choice is current
    without importing this module."""
    pkg = _packages()[name]
    return str(harnesses_dir() / name), str(_binary_in(Path(""), pkg)), pkg.binary


def find_binary(name: str, version: str | None = None) -> Installed | None:
    """The installed binary for NAME (at VERSION, or the newest), then PATH when no version is asked."""
    pkg = _packages()[name]
    base = harnesses_dir() / name
    versions = []
    if base.is_dir():
        for d in base.iterdir():
            if d.name.startswith(".") or not _binary_in(d, pkg).exists() or (d / ".installing").exists():
                continue
            try:
                versions.append((Version.parse(d.name), d))
            except ValueError:
                continue
    versions.sort()
    for v, d in reversed(versions):
        if version is None or str(v) == str(Version.parse(version)):
            return Installed(name, d.name, str(_binary_in(d, pkg)), "agentbox")
    if version is None:
        found = shutil.which(pkg.binary)
        if found:
            return Installed(name, "?", found, "PATH")
    return None


def package_version(found: Installed) -> str | None:
    """The version of what `find_binary` found: its install folder's (the install read it back from what the
    registry delivered), or for a binary on PATH what that reads from the npm package it belongs to (None: not
    one)."""
    if found.source == "agentbox":
        return found.version
    for parent in Path(found.binary).resolve().parents:
        if parent.name == "node_modules":  # the prefix the package was installed under is the folder above
            return _installed_version(parent.parent, found.name, _packages()[found.name])
    return None


def installed(probe: bool = True) -> list[Installed]:
    out: list[Installed] = []
    for name, pkg in _packages().items():
        base = harnesses_dir() / name
        if base.is_dir():
            for d in sorted(base.iterdir()):
                if not d.name.startswith(".") and _binary_in(d, pkg).exists() and not (d / ".installing").exists():
                    out.append(
                        Installed(
                            name,
                            d.name,
                            str(_binary_in(d, pkg)),
                            "agentbox",
                            _installed_version(d, name, pkg) if probe else None,
                        )
                    )
        found = shutil.which(pkg.binary)
        if found and not found.startswith(str(harnesses_dir())):
            version = None
            if probe and name in _harness_names():
                try:
                    version = registry.adapter(name).probe(found).version
                except HarnessError:
                    version = None
            out.append(Installed(name, version or "?", found, "PATH", version))
    return out


def _check_known(name: str) -> None:
    if name not in _packages():
        raise InputError(f"unknown harness or adapter {name!r}; known: {', '.join(_packages())}")


def parse_spec(spec: str) -> tuple[str, str]:
    """NAME@VERSION as (NAME, VERSION). A bare NAME is refused with the versions to choose from: installing
    whatever is newest would pin an untested version without saying so."""
    name, _, version = spec.partition("@")
    if version:
        return name, version
    _check_known(name)
    tested, pin = _version_choices(name)
    hint = f"`agent-box harness install {name}@{pin}` (the pin of the default matrix)" if pin else "NAME@VERSION"
    raise InputError(
        f"which version? tested: {', '.join(tested) or 'none'}; type {hint}, "
        f"or `agent-box harness install --matrix default` for every default pin",
        field=spec,
    )


def _version_choices(name: str) -> tuple[list[str], str | None]:
    """The versions NAME was tested at (a harness's declarations; an adapter's pins in the packaged matrices),
    oldest first, and its pin in the default matrix."""
    from agentbox.harnesses.matrix import load_matrix, packaged_matrices

    matrices = {p.stem: load_matrix(p) for p in packaged_matrices()}
    pins = {
        v for m in matrices.values() for v in (*m.harnesses.get(name, ()), m.acp_adapters.get(name)) if v is not None
    }
    if name in _harness_names():
        from agentbox.core.capability import load_declarations

        pins |= set(load_declarations(name).tested_versions)
    default, pin = matrices.get("default"), None
    if default:
        pin = default.harnesses[name][-1] if name in default.harnesses else default.acp_adapters.get(name)
    return sorted(pins, key=Version.parse), pin


def install(name: str, version: str, log: Callable[[str], None] = lambda s: None) -> Installed:
    """Install NAME@VERSION; a no-op when present. The probed version must equal the pin."""
    _check_known(name)
    Version.parse(version)
    pkg = _packages()[name]
    dest = harnesses_dir() / name / version
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Two installers of one pin (two test workers, two shells) would each wipe the other's half-written
    # tree; the second waits for the first and then finds the install done.
    with open(dest.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install_locked(name, version, pkg, dest, log)


def _install_locked(name: str, version: str, pkg: Package, dest: Path, log: Callable[[str], None]) -> Installed:
    if _binary_in(dest, pkg).exists() and not (dest / ".installing").exists():
        log(f"{name}@{version}: already installed at {dest}")
        return Installed(name, version, str(_binary_in(dest, pkg)), "agentbox", version)
    # Install in place (a venv hard-codes its own path), marked incomplete until the probe agrees.
    marker = dest / ".installing"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    marker.write_text(version)
    try:
        # one line a stage, on stderr, before it starts: a download can take minutes and a person should
        # see which step a failure or a wait belongs to
        log(f"{name}@{version}: [1/3] download {pkg.package}@{version} from {pkg.registry}")
        if pkg.registry == "npm":
            _run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(dest), f"{pkg.package}@{version}"], name)
        else:
            # -I: the current folder (a project a run may have written a venv.py into) is not on sys.path
            _run([sys.executable, "-I", "-m", "venv", str(dest / "venv")], name)
            _run([str(dest / "venv" / "bin" / "pip"), "install", "-q", f"{pkg.package}=={version}", *pkg.extras], name)
            if pkg.post_install:
                _run([str(dest / "venv" / "bin" / "pip"), "install", "-q", *pkg.post_install], name)
        log(
            f"{name}@{version}: [2/3] probe the version of "
            + (str(_binary_in(dest, pkg)) if name in _harness_names() else f"{pkg.package}'s package.json")
        )
        got = _installed_version(dest, name, pkg)
        if got is None or Version.parse(got) != Version.parse(version):
            raise HarnessError(f"{name}: asked for {version}, the registry delivered {got or 'an unparsable version'}")
        log(f"{name}@{version}: [3/3] verify: the probe reads {got}, the pin")
        marker.unlink()
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    log(f"{name}@{version}: installed at {dest}")
    return Installed(name, version, str(_binary_in(dest, pkg)), "agentbox", version)


def _run(cmd: list[str], name: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise HarnessError(
            f"{name}: `{' '.join(cmd[:4])} ...` failed (exit {done.returncode}): {done.stderr.strip()[-800:]}"
        )
