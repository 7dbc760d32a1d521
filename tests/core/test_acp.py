import os
import shutil

import pytest
from pydantic import ValidationError

from agentbox.harnesses.acp import AcpEntry, AcpUnavailable, acp_command, acp_entry, acp_harnesses
from agentbox.harnesses.installs import PACKAGES
from agentbox.core.plan import CompileResult, RuntimeRequirements
from agentbox.core.profile import HARNESSES


def _result(harness: str, argv: tuple[str, ...] = ()) -> CompileResult:
    return CompileResult(
        harness=harness,
        version=None,
        dialect="x",
        argv=argv,
        requirements=RuntimeRequirements(workspace="read_write", network="none", host_home="hidden"),
    )


def test_every_acp_entry_names_a_known_harness_and_an_installable_adapter():
    assert acp_harnesses()
    for name in acp_harnesses():
        assert name in HARNESSES
        entry = acp_entry(name)
        assert entry.adapter is None or entry.adapter in PACKAGES()


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"adapter": "codex-acp", "native": ["acp"]},
        {"native": ["acp"], "args": ["-x"]},
        {"adapter": "codex-acp", "global_args": True},
        {"native": ["acp"], "surprise": 1},
    ],
)
def test_an_entry_must_be_exactly_one_launch_form(spec):
    with pytest.raises(ValidationError):
        AcpEntry.model_validate(spec)


def test_a_native_entry_is_the_harness_binary_with_its_global_flags_then_the_subcommand():
    native = next(n for n in acp_harnesses() if acp_entry(n).native is not None)
    entry = acp_entry(native)
    argv, env, binds = acp_command(native, _result(native, ("--flag",)), "/opt/h/bin/h")
    assert argv == ["/opt/h/bin/h", *(["--flag"] if entry.global_args else []), *entry.native]
    assert binds == ()


def test_an_adapter_entry_points_the_adapter_at_the_pinned_harness(tmp_path):
    name = next(n for n in acp_harnesses() if acp_entry(n).adapter is not None)
    entry = acp_entry(name)
    adapter_bin = tmp_path / "prefix" / "node_modules" / ".bin" / "x-acp"
    adapter_bin.parent.mkdir(parents=True)
    adapter_bin.write_text("")
    argv, env, binds = acp_command(name, _result(name, ("--never-passed",)), "/pinned/harness", str(adapter_bin))
    assert argv[0] == str(adapter_bin) and "--never-passed" not in argv
    assert all("{" not in v for v in env.values())
    assert set(entry.env) == set(env)
    assert any(v == "/pinned/harness" for v in env.values()) or not entry.env
    assert str(tmp_path / "prefix" / "node_modules") in binds  # its package folder, never the prefix above it


def test_a_script_adapter_is_started_by_its_interpreter_named_by_path_not_found_on_the_sandboxs_path(tmp_path):
    name = next(n for n in acp_harnesses() if acp_entry(n).adapter is not None)
    adapter_bin = tmp_path / "prefix" / "node_modules" / ".bin" / "x-acp"
    adapter_bin.parent.mkdir(parents=True)
    adapter_bin.write_text("#!/usr/bin/env sh\n")
    argv, _, _ = acp_command(name, _result(name), "/pinned/harness", str(adapter_bin))
    assert argv[:2] == [os.path.realpath(shutil.which("sh") or "sh"), str(adapter_bin)]


def test_a_missing_adapter_is_reported_with_the_install_command(monkeypatch):
    import agentbox.harnesses.installs as installs

    name = next(n for n in acp_harnesses() if acp_entry(n).adapter is not None)
    monkeypatch.setattr(installs, "find_binary", lambda *a, **k: None)
    with pytest.raises(AcpUnavailable, match="agent-box harness install"):
        acp_command(name, _result(name), "/pinned/harness")


def test_a_harness_without_an_entry_is_unavailable():
    with pytest.raises(AcpUnavailable):
        acp_command("no-such-harness", _result("codex"), "/x")


def _npm_launcher(tmp_path, with_native: bool) -> tuple[str, str]:
    """An npm install of a launcher package and (optionally) its platform package, as codex-acp's are laid out."""
    import platform

    scope = tmp_path / "prefix" / "node_modules" / "@scope"
    launcher = scope / "x-acp" / "bin" / "x-acp.js"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/usr/bin/env node\n")
    link = tmp_path / "prefix" / "node_modules" / ".bin" / "x-acp"
    link.parent.mkdir(parents=True)
    link.symlink_to(launcher)
    native = scope / f"x-acp-{platform.machine()}" / "bin" / "x-acp"
    if with_native:
        native.parent.mkdir(parents=True)
        native.write_text("")
        native.chmod(0o755)
    return str(link), str(native)


def test_an_adapter_whose_launcher_only_picks_a_native_binary_is_started_as_that_binary(tmp_path):
    import platform

    from agentbox.harnesses.acp import launched

    link, native = _npm_launcher(tmp_path, with_native=True)
    entry = AcpEntry(adapter="x", launches={platform.machine(): f"x-acp-{platform.machine()}/bin/x-acp"})
    assert launched(entry, link) == native


def test_without_its_platform_package_or_an_entry_for_this_machine_the_launcher_itself_runs(tmp_path):
    import platform

    from agentbox.harnesses.acp import launched

    link, _ = _npm_launcher(tmp_path, with_native=False)
    entry = AcpEntry(adapter="x", launches={platform.machine(): f"x-acp-{platform.machine()}/bin/x-acp"})
    assert launched(entry, link) == link
    assert launched(AcpEntry(adapter="x", launches={"no-such-machine": "x"}), link) == link


def test_only_an_adapter_entry_names_what_its_launcher_starts():
    with pytest.raises(ValueError, match="launcher"):
        AcpEntry(native=("acp",), launches={"x86_64": "x"})
