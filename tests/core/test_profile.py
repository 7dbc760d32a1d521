import pytest

from agentbox.errors import InputError
from agentbox.core.profile import load_profile, resolve_profile_path


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
    path = write(tmp_path, "name: p\n  harness: codex\n")
    with pytest.raises(InputError, match="malformed YAML") as exc:
        load_profile(path)
    assert str(exc.value).startswith(f"{path}:2: malformed YAML: ")


def test_a_misspelt_field_names_its_line_and_the_field_meant(tmp_path):
    path = write(tmp_path, "name: p\nharness: codex\npermision_intent:\n  shell: deny\n")
    with pytest.raises(InputError) as exc:
        load_profile(path)
    assert str(exc.value) == f"{path}:3: permision_intent: unknown field; did you mean `permission_intent`?"
    assert (exc.value.file, exc.value.line, exc.value.field) == (str(path), 3, "permision_intent")


@pytest.mark.parametrize(
    "text, line, message",
    [
        (
            "permission_intent:\n  network: {access: none}\n",
            4,
            "permission_intent.network: unknown field; did you mean `command_network`?",
        ),
        (
            "mcp_servers:\n  gh:\n    command: gh\n    arg: [mcp]\n",
            6,
            "mcp_servers.gh.arg: unknown field; did you mean `args`?",
        ),
        (
            "model:\n  provider: openai\n  api_key: OPENAI_API_KEY\n",
            5,
            "model.api_key: unknown field; did you mean `api_key_env`?",
        ),
        (
            "permission_intent:\n  host_home: hiden\n",
            4,
            "permission_intent.host_home.access: Input should be 'hidden' or 'visible'; did you mean `hidden`?",
        ),
    ],
)
def test_a_nested_typo_names_its_line_and_the_nearest_name_at_that_level(tmp_path, text, line, message):
    path = write(tmp_path, "name: p\nharness: codex\n" + text)
    with pytest.raises(InputError) as exc:
        load_profile(path)
    assert str(exc.value) == f"{path}:{line}: {message}"


def test_an_unknown_field_far_from_any_lists_the_allowed_ones(tmp_path):
    path = write(tmp_path, "name: p\nharness: codex\nmodel: {xyz: 1}\n")
    with pytest.raises(
        InputError, match=r"model.xyz: unknown field \(allowed: provider, base_url, name, api_key_env\)"
    ):
        load_profile(path)


def test_a_bad_value_names_its_line_and_a_missing_field_the_mapping_that_lacks_it(tmp_path):
    path = write(tmp_path, "name: p\nharness: codx\npermission_intent:\n  workspace:\n    requirement: advisory\n")
    with pytest.raises(InputError) as exc:
        load_profile(path)
    assert str(exc.value).splitlines() == [
        f"{path}:2: harness: Input should be 'claude-code', 'codex', 'hermes' or 'opencode'; did you mean `codex`?",
        f"{path}:4: permission_intent.workspace.access: Field required",
    ]


def test_a_bad_profile_on_the_command_line_writes_nothing_and_says_where(tmp_path, monkeypatch, capsys):
    from agentbox.cli import main

    monkeypatch.setenv("AGENTBOX_HOME", str(tmp_path / "home"))
    (tmp_path / "ws").mkdir()
    path = write(tmp_path, "name: p\nharness: codex\npermission_intent:\n  shel: deny\n")
    assert (
        main(["permission", "compile", str(path), "--cwd", str(tmp_path / "ws"), "--harness-version", "0.171.0"]) == 2
    )
    assert capsys.readouterr().err == (
        f"agent-box: {path}:4: permission_intent.shel: unknown field; did you mean `shell`?\n"
    )
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["p.yaml", "ws"]


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
    path = write(
        tmp_path, "name: p\nharness: codex\nnative_overrides:\n  codex: {min_version: '0.150', config_patch: {a: 1}}\n"
    )
    assert load_profile(path).profile.override().min_version == "0.150"
    bad = write(tmp_path, "name: p\nharness: codex\nnative_overrides:\n  vim: {}\n", "bad.yaml")
    with pytest.raises(InputError, match="native_overrides"):
        load_profile(bad)
