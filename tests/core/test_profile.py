import pytest

from agentbox.errors import InputError
from agentbox.profile import load_profile, resolve_profile_path


def write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_minimal_profile_loads_with_its_digest(tmp_path):
    path = write(tmp_path, "name: p\nharness: codex\n")
    loaded = load_profile(path)
    assert loaded.profile.harness == "codex" and len(loaded.digest) == 64


def test_an_unknown_field_names_the_file_and_the_field(tmp_path):
    path = write(tmp_path, "name: p\nharness: codex\npermission_intent:\n  workspace: {access: read_only, bogus: 1}\n")
    with pytest.raises(InputError) as exc:
        load_profile(path)
    assert str(path) in str(exc.value) and "permission_intent.workspace.bogus: unknown field" in str(exc.value)
    assert exc.value.exit_code == 2


def test_malformed_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "name: p\nharness: [codex\n")
    with pytest.raises(InputError, match="malformed YAML"):
        load_profile(path)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_profile(tmp_path / "absent.yaml")


def test_a_profile_names_mcp_servers_it_defines(tmp_path):
    path = write(tmp_path, "name: p\nharness: codex\npermission_intent:\n  mcp: {servers: [gh]}\n")
    with pytest.raises(InputError, match="not defined in mcp_servers"):
        load_profile(path)


def test_the_model_names_a_credential_variable_never_a_key(tmp_path):
    path = write(tmp_path, "name: p\nharness: codex\nmodel: {api_key_env: 'sk-abc def'}\n")
    with pytest.raises(InputError, match="give the name, not the key"):
        load_profile(path)


def test_a_profile_name_resolves_under_agentbox_home(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    (tmp_path / "profiles").mkdir()
    write(tmp_path / "profiles", "name: rev\nharness: hermes\n", "rev.yaml")
    assert load_profile("rev").profile.name == "rev"


@pytest.mark.parametrize("arg", ["..", "a..b\\c", "UPPER"])
def test_a_bad_profile_name_is_refused(tmp_path, monkeypatch, arg):
    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path))
    with pytest.raises(InputError):
        resolve_profile_path(arg) if "\\" not in arg else resolve_profile_path(arg + "/x")


def test_native_overrides_are_namespaced_by_harness(tmp_path):
    path = write(tmp_path, "name: p\nharness: codex\nnative_overrides:\n  codex: {min_version: '0.150', config_patch: {a: 1}}\n")
    assert load_profile(path).profile.override().min_version == "0.150"
    bad = write(tmp_path, "name: p\nharness: codex\nnative_overrides:\n  vim: {}\n", "bad.yaml")
    with pytest.raises(InputError, match="native_overrides"):
        load_profile(bad)
