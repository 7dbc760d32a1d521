"""An MCP server installed where the sandbox hides things (/tmp, the hidden home) still starts inside the run:
its install is bound back read-only; one that would need a whole hidden root is refused at compile time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from agentbox.compile.compiler import compile_plan
from agentbox.errors import SandboxError
from agentbox.core.profile import load_profile

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

INTENT = (
    "  workspace: {access: read_only, requirement: required}\n"
    "  mcp: {servers: [srv], requirement: advisory}\n"
    "  host_home: hidden\n"
)


def venv(root) -> str:
    """A virtual environment as `python -m venv` lays it out: pyvenv.cfg, and bin/python linking out of it."""
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    (root / "bin" / "python").symlink_to(sys.executable)
    return str(root / "bin" / "python")


def write(tmp_path, command: str, args=()) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(
        f"name: p\nharness: codex\npermission_intent:\n{INTENT}"
        f"mcp_servers:\n  srv: {{command: {command}, args: {list(args)!r}}}\n"
    )
    return str(path)


def ro_binds(plan) -> list[str]:
    return [src for mode, src, _ in plan.sandbox.binds if mode == "ro-bind"]


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "ws").mkdir()
    return str(tmp_path / "ws")


def test_a_server_in_a_virtual_environment_under_tmp_gets_its_environment_bound_read_only(tmp_path, ws):
    python = venv(tmp_path / "venv")
    plan = compile_plan(load_profile(write(tmp_path, python, ["-m", "srv"])), ws, harness_version="0.171.0")
    assert str(tmp_path / "venv") in ro_binds(plan)


def test_a_server_script_under_the_hidden_home_gets_its_folder_bound_and_nothing_else_of_the_home(tmp_path, ws):
    home = tmp_path / "home"
    (home / "tools" / "srv").mkdir(parents=True)
    (home / ".ssh").mkdir()
    script = home / "tools" / "srv" / "server.py"
    script.write_text("print('up')\n")
    plan = compile_plan(
        load_profile(write(tmp_path, "python3", [str(script)])), ws, harness_version="0.171.0", home=str(home)
    )
    binds = ro_binds(plan)
    assert str(home / "tools" / "srv") in binds
    assert not any(b in (str(home), str(home / ".ssh")) for b in binds)


def test_a_server_in_an_install_prefix_of_the_home_gets_its_bin_and_lib_bound_never_the_prefix(tmp_path, ws):
    # `pip install --user`'s ~/.local: the prefix holds AGENTBOX_HOME (~/.local/share/agentbox), which a bind of it
    # would put back in view (red team): every profile's kept answers, the evidence, the run records
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "lib").mkdir()
    (home / ".local" / "share" / "agentbox" / "state").mkdir(parents=True)
    server = home / ".local" / "bin" / "srv"
    server.write_text("#!/bin/sh\n")
    server.chmod(0o755)
    plan = compile_plan(load_profile(write(tmp_path, str(server))), ws, harness_version="0.171.0", home=str(home))
    binds = ro_binds(plan)
    assert {str(home / ".local" / "bin"), str(home / ".local" / "lib")} <= set(binds)
    assert str(home / ".local") not in binds


def test_a_server_lying_directly_in_tmp_is_refused_at_compile_time_naming_it(tmp_path, ws):
    loose = "/tmp/agentbox-test-loose-server.py"
    with open(loose, "w") as f:
        f.write("print('up')\n")
    try:
        with pytest.raises(
            SandboxError, match=r"mcp_servers\.srv: /tmp/agentbox-test-loose-server\.py lies directly in /tmp"
        ):
            compile_plan(load_profile(write(tmp_path, "python3", [loose])), ws, harness_version="0.171.0")
    finally:
        os.unlink(loose)


def test_the_bound_server_interpreter_really_starts_inside_the_sandbox(tmp_path, ws):
    python = venv(tmp_path / "venv")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentbox.cli",
            "sandbox",
            "run",
            "--profile",
            write(tmp_path, python, ["-m", "srv"]),
            "--workspace",
            ws,
            "--",
            python,
            "-c",
            "import sys; print('started', sys.prefix)",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("started ")
