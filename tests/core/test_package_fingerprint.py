"""The plan caches' key names the package's own files: a regular install by its record (one stat, on the hot path),
a checkout or an editable install by every file, since their files change under them."""

from __future__ import annotations

import pytest

from agentbox import hot


@pytest.fixture
def site(tmp_path, monkeypatch):
    package = tmp_path / "agentbox"
    package.mkdir()
    (package / "hot.py").write_text("# the module\n")
    monkeypatch.setattr(hot, "_PKG", str(package))
    monkeypatch.setattr(hot, "_fingerprint", [])
    return tmp_path


def _record(site, text="agentbox/hot.py,sha256=x,13\n"):
    info = site / "agent_box-0.1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "RECORD").write_text(text)
    return info / "RECORD"


def test_a_regular_install_is_named_by_its_record_and_a_reinstall_changes_the_name(site, monkeypatch):
    record = _record(site)
    assert hot._install_record() == str(record)
    first = hot.package_fingerprint()
    monkeypatch.setattr(hot, "_fingerprint", [])
    record.unlink()
    _record(site, "agentbox/hot.py,sha256=y,13\nagentbox/more.py,sha256=z,1\n")  # pip writes it anew
    assert hot.package_fingerprint() != first


def test_a_checkout_is_named_by_its_files_so_an_edit_changes_the_name(site, monkeypatch):
    assert hot._install_record() is None
    first = hot.package_fingerprint()
    monkeypatch.setattr(hot, "_fingerprint", [])
    (site / "agentbox" / "hot.py").write_text("# the module, edited\n")
    assert hot.package_fingerprint() != first


def test_an_editable_install_whose_record_names_no_package_file_is_walked(site):
    _record(site, "__editable___agent_box_0_1_0_finder.py,sha256=x,1\n")
    assert hot._install_record() is None


def test_two_records_beside_the_package_say_nothing_of_which_one_is_current(site):
    _record(site)
    other = site / "agent_box-0.2.0.dist-info"
    other.mkdir()
    (other / "RECORD").write_text("agentbox/hot.py,sha256=x,13\n")
    assert hot._install_record() is None
