"""Installing a pinned harness: concurrent installers of one pin take turns."""

from __future__ import annotations

import fcntl
import threading

from agentbox import installs


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
