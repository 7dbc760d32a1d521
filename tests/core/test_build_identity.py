"""Build identity: the digest covers what actually runs, and a file is hashed again only when its stat changed.

The install trees here are small fakes laid out as npm and pip lay out the real ones; they stand in for
the files a digest reads, never for a harness run.
"""

from __future__ import annotations

import hashlib
import os
import platform

import pytest

from agentbox.harnesses import build_identity
from agentbox.compile.adapters import get_adapter
from agentbox.compile.adapters.codex import _NPM_TARGETS
from agentbox.harnesses.build_identity import identify
from agentbox.harnesses.installs import find_binary

REAL_CODEX = find_binary("codex")  # resolved at import, before the tests move AGENTBOX_HOME


@pytest.fixture(autouse=True)
def abhome(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path / "abhome"))
    return tmp_path / "abhome"


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """The paths hashed from now on, in order."""
    seen: list[str] = []
    real = build_identity._hash

    def counting(path, skip_interpreter_line):
        seen.append(path)
        return real(path, skip_interpreter_line)

    monkeypatch.setattr(build_identity, "_hash", counting)
    return seen


@pytest.fixture
def settled(monkeypatch):
    """Files of these tests were written a moment ago, inside the racy window that keeps a digest from
    being remembered; a real install is older than that. Let them count as settled."""
    monkeypatch.setattr(build_identity, "RACY_NS", 0)


def sha256(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def write(path, content: bytes | str, mode: int = 0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    path.chmod(mode)
    return path


def npm_codex(root, native: bytes = b"\x7fELF native codex 0.171.0"):
    """node_modules/.bin/codex -> ../@openai/codex/bin/codex.js, and the platform package's vendor folder."""
    if platform.machine() not in _NPM_TARGETS:
        pytest.skip(f"codex ships no npm platform package for {platform.machine()}")
    package, triple = _NPM_TARGETS[platform.machine()]
    modules = root / "node_modules"
    launcher = write(
        modules / "@openai" / "codex" / "bin" / "codex.js", "#!/usr/bin/env node\n// starts vendor\n", 0o755
    )
    vendor = modules / "@openai" / package / "vendor" / triple
    write(vendor / "bin" / "codex", native, 0o755)
    write(vendor / "codex-resources" / "bwrap", b"\x7fELF bundled bwrap", 0o755)
    (modules / ".bin").mkdir()
    (modules / ".bin" / "codex").symlink_to(os.path.relpath(launcher, modules / ".bin"))
    return modules / ".bin" / "codex", vendor / "bin" / "codex"


def venv_hermes(root, module: str = "def main():\n    return 0\n"):
    """A venv whose console script imports an installed distribution listed in its RECORD."""
    venv = root / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    write(venv / "pyvenv.cfg", f"home = /usr/bin\nversion = 3.11.7\ncommand = python3 -m venv {venv}\n")
    script = write(venv / "bin" / "hermes", f"#!{venv}/bin/python3\nfrom hermes_cli.main import main\nmain()\n", 0o755)
    write(site / "hermes_cli" / "__init__.py", "")
    write(site / "hermes_cli" / "main.py", module)
    write(site / "hermes_cli" / "__pycache__" / "main.cpython-311.pyc", os.urandom(32))
    info = site / "hermes_agent-0.19.0.dist-info"
    write(info / "entry_points.txt", "[console_scripts]\nhermes = hermes_cli.main:main\n")
    write(
        info / "RECORD",
        "../../../bin/hermes,sha256=x,70\nhermes_cli/__init__.py,,\nhermes_cli/main.py,,\n"
        "hermes_cli/__pycache__/main.cpython-311.pyc,,\n"
        "hermes_agent-0.19.0.dist-info/entry_points.txt,,\nhermes_agent-0.19.0.dist-info/RECORD,,\n",
    )
    write(site / "mcp-1.26.0.dist-info" / "RECORD", "")
    return script, site


def codex_digest(binary) -> str:
    return identify(get_adapter("codex").build_files(str(binary))).sha256


def hermes_digest(binary) -> str:
    return identify(get_adapter("hermes").build_files(str(binary))).sha256


# -- what the digest covers ----------------------------------------------------------------------
def test_a_native_binary_is_its_own_build_with_symlinks_resolved(tmp_path):
    native = write(tmp_path / "pkg" / "bin" / "claude.exe", b"\x7fELF claude", 0o755)
    (tmp_path / "claude").symlink_to(native)
    assert identify(get_adapter("claude-code").build_files(str(tmp_path / "claude"))).sha256 == sha256(native)


def test_a_changed_codex_native_binary_under_the_same_version_is_another_build(tmp_path):
    binary, native = npm_codex(tmp_path)
    launcher = os.path.realpath(binary)
    before, launcher_before = codex_digest(binary), sha256(launcher)
    native.write_bytes(b"\x7fELF native codex 0.171.0, rebuilt")
    assert sha256(launcher) == launcher_before  # the launcher's hash alone would not have seen it
    assert codex_digest(binary) != before


def test_the_codex_build_covers_what_the_native_binary_starts_itself(tmp_path):
    binary, native = npm_codex(tmp_path)
    before = codex_digest(binary)
    (native.parent.parent / "codex-resources" / "bwrap").write_bytes(b"\x7fELF another bubblewrap")
    assert codex_digest(binary) != before


def test_a_changed_module_of_the_python_distribution_is_another_build(tmp_path):
    script, site = venv_hermes(tmp_path)
    before = hermes_digest(script)
    (site / "hermes_cli" / "main.py").write_text("def main():\n    return 1\n")
    assert hermes_digest(script) != before


def test_another_dependency_version_in_the_venv_is_another_build(tmp_path):
    script, site = venv_hermes(tmp_path)
    before = hermes_digest(script)
    (site / "mcp-1.26.0.dist-info").rename(site / "mcp-1.27.0.dist-info")
    assert hermes_digest(script) != before


def test_the_same_python_build_installed_elsewhere_has_the_same_identity(tmp_path):
    # the console script's `#!` line and the pyvenv.cfg name the install folder; compiled .pyc differ per install
    here, _ = venv_hermes(tmp_path / "home-a")
    there, _ = venv_hermes(tmp_path / "home-b")
    assert here.read_text() != there.read_text()
    assert hermes_digest(here) == hermes_digest(there)


def test_an_edited_console_script_body_is_another_build(tmp_path):
    script, _ = venv_hermes(tmp_path)
    before = hermes_digest(script)
    script.write_text(script.read_text().replace("main()", "main() or 1"))
    assert hermes_digest(script) != before


# -- the stat cache ------------------------------------------------------------------------------
def test_the_second_identification_hashes_nothing(tmp_path, hashed, settled):
    binary, _ = npm_codex(tmp_path)
    first = codex_digest(binary)
    assert len(hashed) == 3  # the launcher, the native binary, the bundled bubblewrap
    hashed.clear()
    assert codex_digest(binary) == first
    assert hashed == []


def test_only_the_file_whose_stat_changed_is_hashed_again(tmp_path, hashed, settled):
    binary, native = npm_codex(tmp_path)
    first = codex_digest(binary)
    hashed.clear()
    native.write_bytes(b"\x7fELF native codex 0.171.0, patched")
    assert codex_digest(binary) != first
    assert hashed == [str(native)]


def test_a_file_changed_within_the_racy_window_is_never_remembered(tmp_path, hashed, monkeypatch):
    # a second write in the same timestamp tick could keep the stat: such a digest is not trusted later
    monkeypatch.setattr(build_identity, "RACY_NS", 10**18)  # every file counts as just written, whatever the clock
    binary, _ = npm_codex(tmp_path)
    codex_digest(binary)
    hashed.clear()
    codex_digest(binary)
    assert len(hashed) == 3


def test_the_cache_lives_under_agentbox_home(tmp_path, abhome, settled):
    binary, _ = npm_codex(tmp_path)
    codex_digest(binary)
    assert len(list((abhome / "cache" / "build").iterdir())) == 1


@pytest.mark.skipif(
    REAL_CODEX is None or REAL_CODEX.source != "agentbox",
    reason="codex is not installed: agent-box harness install codex@0.171.0",
)
def test_the_probe_of_the_real_codex_reports_its_build_digest_not_the_launchers_hash():
    probe = get_adapter("codex").probe(REAL_CODEX.binary)
    build = get_adapter("codex").build_files(REAL_CODEX.binary)
    assert any(f.name.endswith("/bin/codex") for f in build.files)  # the native binary codex.js starts
    assert probe.sha256 == identify(build).sha256 != sha256(os.path.realpath(REAL_CODEX.binary))


def test_a_cached_launch_is_stale_once_a_file_of_its_build_changed_though_its_launcher_did_not(tmp_path):
    from agentbox.prove.evidence_index import signature
    from agentbox.hot import stat_key, which
    from agentbox.run.launch import _current

    binary, native = npm_codex(tmp_path)
    launcher = os.path.realpath(binary)
    identity = identify(get_adapter("codex").build_files(str(binary)))
    (tmp_path / "ev").mkdir()
    entry = {
        "check": {
            "invoked": str(binary),
            "resolved": launcher,
            "stat": stat_key(launcher),
            "build": identity.as_check(),
            "surfaces": {},
            "uid": os.geteuid(),
            "sandbox_program": "bwrap",
            "sandbox_binary": stat_key(which("bwrap") or ""),
            "evidence": str(tmp_path / "ev"),
            "evidence_signature": signature(tmp_path / "ev"),
        }
    }
    assert _current(entry, str(binary))
    native.write_bytes(b"\x7fELF native codex 0.171.0, rebuilt with another size")
    assert stat_key(launcher) == entry["check"]["stat"]
    assert not _current(entry, str(binary))
