"""Installing a pinned harness: concurrent installers of one pin take turns, each stage is said, a bare name is
refused with the versions to choose from."""

from __future__ import annotations

import fcntl
import threading

import pytest

from agentbox.harnesses import installs
from agentbox.core.capability import load_declarations
from agentbox.errors import HarnessError, InputError
from agentbox.harnesses.matrix import load_matrix


def test_a_second_installer_of_the_same_pin_waits_for_the_first(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    done: list[str] = []
    monkeypatch.setattr(installs, "_install_locked", lambda name, version, pkg, dest, log: done.append(version))
    lock_file = installs.harnesses_dir() / "codex" / ".0.171.0.lock"
    lock_file.parent.mkdir(parents=True)
    with open(lock_file, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a first installer, mid-install
        second = threading.Thread(target=installs.install, args=("codex", "0.171.0"))
        second.start()
        second.join(timeout=0.3)
        assert second.is_alive() and done == []
    second.join(timeout=10)
    assert done == ["0.171.0"]


def _fake_registry(monkeypatch, delivers: str | None = None):
    """npm and pip as a no-op, the probe reading DELIVERS (default: the version asked for)."""
    monkeypatch.setattr(installs, "_run", lambda cmd, name: None)
    monkeypatch.setattr(installs, "_installed_version", lambda prefix, name, pkg: delivers or prefix.name)


def test_an_install_says_each_stage_on_stderr_before_it_starts(tmp_path, monkeypatch, capsys):
    from agentbox.cli import main

    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    _fake_registry(monkeypatch)
    assert main(["harness", "install", "codex@0.171.0"]) == 0
    stages = [line.split(": ", 1)[1] for line in capsys.readouterr().err.splitlines()]
    assert stages == [
        "[1/3] download @openai/codex@0.171.0 from npm",
        f"[2/3] probe the version of {tmp_path}/harnesses/codex/0.171.0/node_modules/.bin/codex",
        "[3/3] verify: the probe reads 0.171.0, the pin",
        f"installed at {tmp_path}/harnesses/codex/0.171.0",
    ]


def test_quiet_installs_say_nothing(tmp_path, monkeypatch, capsys):
    from agentbox.cli import main

    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    _fake_registry(monkeypatch)
    assert main(["harness", "install", "--quiet", "codex-acp@0.16.0"]) == 0
    assert capsys.readouterr().err == ""


def test_an_install_the_probe_disowns_stops_after_the_probe_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    _fake_registry(monkeypatch, delivers="0.172.0")
    said: list[str] = []
    with pytest.raises(HarnessError, match="asked for 0.171.0, the registry delivered 0.172.0"):
        installs.install("codex", "0.171.0", said.append)
    assert [s.split(": ", 1)[1][:5] for s in said] == ["[1/3]", "[2/3]"]
    assert not (tmp_path / "harnesses" / "codex" / "0.171.0").exists()


def test_a_name_without_a_version_is_refused_naming_the_tested_versions_and_what_to_type(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    tested = load_declarations("codex").tested_versions
    (pin,) = load_matrix("default").harnesses["codex"]
    with pytest.raises(InputError) as exc:
        installs.parse_spec("codex")
    assert f"codex: which version? tested: {', '.join(tested)}; " in str(exc.value)
    assert f"type `agent-box harness install codex@{pin}`" in str(exc.value)
    assert not (tmp_path / "harnesses").exists()


def test_an_adapter_without_a_version_offers_the_pins_of_the_packaged_matrices():
    pin = load_matrix("default").acp_adapters["codex-acp"]
    with pytest.raises(InputError, match=f"tested: {pin}; type `agent-box harness install codex-acp@{pin}`"):
        installs.parse_spec("codex-acp@")


def test_an_unknown_name_without_a_version_is_unknown_first():
    with pytest.raises(InputError, match="unknown harness or adapter 'vim'; known: claude-code, codex"):
        installs.parse_spec("vim")


def test_a_full_spec_is_name_and_version():
    assert installs.parse_spec("hermes@0.19.0") == ("hermes", "0.19.0")
