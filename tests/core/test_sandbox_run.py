"""`agent-box sandbox run` against the real bubblewrap: observed side effects only."""

import os
import shutil
import socket
import subprocess
import sys
import threading

import pytest

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def profile(tmp_path, intent: str, name="t") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nharness: codex\npermission_intent:\n{intent}")
    return str(path)


def sandbox_run(env, prof, ws, *cmd, **kw):
    return subprocess.run(
        [sys.executable, "-m", "agentbox.cli", "sandbox", "run", prof, "--cwd", str(ws), "--", *cmd],
        env=env,
        capture_output=True,
        text=True,
        **kw,
    )


RO = "  workspace: {access: read_only, requirement: required}\n"


class Listener:
    """A TCP listener on host loopback that counts every connection it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self._seen = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._seen:
                self.hits += 1
                self._seen.notify_all()
            conn.close()

    def wait_for(self, n, timeout=10.0):
        with self._seen:
            return self._seen.wait_for(lambda: self.hits >= n, timeout)

    def close(self):
        self.sock.close()


def test_a_read_only_workspace_refuses_a_shell_write_and_the_host_file_stays_absent(tmp_path, env, ws):
    done = sandbox_run(env, profile(tmp_path, RO), ws, "sh", "-c", f"echo pwned > {ws}/escape.txt")
    assert done.returncode != 0
    assert not (ws / "escape.txt").exists()


def test_a_read_write_workspace_takes_the_write_and_the_exit_status_comes_back(tmp_path, env, ws):
    prof = profile(tmp_path, "  workspace: {access: read_write}\n")
    done = sandbox_run(env, prof, ws, "sh", "-c", f"echo ok > {ws}/made.txt; exit 7")
    assert done.returncode == 7
    assert (ws / "made.txt").read_text() == "ok\n"


def test_writes_outside_a_read_write_workspace_never_reach_the_host(tmp_path, env, ws):
    prof = profile(tmp_path, "  workspace: {access: read_write}\n")
    outside = tmp_path / "outside.txt"
    sandbox_run(env, prof, ws, "sh", "-c", f"echo x > {outside}; echo y > /tmp/agentbox-escape-probe")
    assert not outside.exists()
    assert not os.path.exists("/tmp/agentbox-escape-probe")


def test_network_none_refuses_a_connect_to_host_loopback_and_the_listener_sees_nothing(tmp_path, env, ws):
    listener = Listener()
    try:
        prof = profile(tmp_path, RO + "  command_network: {access: none, requirement: required}\n")
        done = sandbox_run(env, prof, ws, "bash", "-c", f"echo hi > /dev/tcp/127.0.0.1/{listener.port}")
        assert done.returncode != 0
        # the positive control: the same connect without the sandbox reaches the listener
        subprocess.run(["bash", "-c", f"echo hi > /dev/tcp/127.0.0.1/{listener.port}"], check=True)
        with socket.create_connection(("127.0.0.1", listener.port)):
            pass
        assert listener.wait_for(2)
    finally:
        listener.close()
    assert listener.hits == 2  # the two host-side connects, and none from the sandbox


def test_a_hidden_home_hides_a_secret_planted_in_the_host_home(tmp_path, env, ws):
    secret = os.path.join(env["HOME"], ".ssh", "id_canary")
    os.makedirs(os.path.dirname(secret))
    with open(secret, "w") as f:
        f.write("CANARY-SECRET")
    prof = profile(tmp_path, RO + "  host_home: hidden\n")
    done = sandbox_run(env, prof, ws, "sh", "-c", f"cat {secret}; ls -a {env['HOME']}")
    assert "CANARY-SECRET" not in done.stdout
    visible = profile(tmp_path, RO + "  host_home: visible\n", name="v")
    assert "CANARY-SECRET" in sandbox_run(env, visible, ws, "cat", secret).stdout  # positive control


def test_only_allowed_environment_variables_are_visible(tmp_path, env, ws):
    env = {**env, "AB_ALLOWED": "yes", "AB_DENIED": "no"}
    prof = profile(tmp_path, RO + "  environment: {allow: [AB_ALLOWED]}\n")
    seen = dict(line.split("=", 1) for line in sandbox_run(env, prof, ws, "env").stdout.splitlines() if "=" in line)
    assert seen.get("AB_ALLOWED") == "yes"
    assert "AB_DENIED" not in seen and "AGENTBOX_HOME" not in seen


def test_a_project_config_surface_is_masked_by_a_blank_private_backing(tmp_path, env, ws):
    (ws / ".codex").mkdir()
    (ws / ".codex" / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    done = sandbox_run(env, profile(tmp_path, RO), ws, "ls", "-A", f"{ws}/.codex")
    assert done.returncode == 0 and done.stdout.strip() == ""
    assert (ws / ".agentbox" / "profiles" / "t" / "root" / ".codex").is_dir()
    assert (ws / ".codex" / "config.toml").exists()  # the host file itself is untouched


def test_the_second_run_comes_from_the_plan_cache_and_behaves_the_same(tmp_path, env, ws):
    (ws / "f").write_text("original")
    prof = profile(tmp_path, RO)
    for _ in range(2):
        done = sandbox_run(env, prof, ws, "cat", f"{ws}/f")
        assert done.stdout == "original"
    assert len(os.listdir(os.path.join(env["AGENTBOX_HOME"], "cache", "sandbox"))) == 1


# what each would add to every cached start (benchmarks/sandbox_run.py): re and enum (json loads both, as do
# fnmatch and signal), contextlib with collections and functools, pydantic and YAML
HEAVY = ("json", "re", "enum", "contextlib", "collections", "functools", "fnmatch", "signal", "pydantic", "yaml")

# what Agent-Box loads, apart from what the interpreter's start loaded already (an editable install's finder, site)
LOADED = """
import atexit, sys
before = set(sys.modules)
from agentbox.cli import main
atexit.register(lambda: print(sorted(m for m in {heavy!r} if m in sys.modules and m not in before), file=sys.stderr))
sys.exit(main(sys.argv[1:]))
"""


def test_a_run_from_the_plan_cache_loads_none_of_the_costly_modules(tmp_path, env, ws):
    prof = profile(tmp_path, RO)
    argv = [sys.executable, "-I", "-c", LOADED.format(heavy=HEAVY), "sandbox", "run", prof, "--cwd", str(ws), "--"]
    first = subprocess.run([*argv, "true"], env=env, capture_output=True, text=True)  # compiles and caches
    assert first.returncode == 0 and "'yaml'" in first.stderr.splitlines()[-1]  # the oracle sees a cold start's
    cached = subprocess.run([*argv, "true"], env=env, capture_output=True, text=True)
    assert cached.returncode == 0, cached.stderr
    assert cached.stderr.splitlines()[-1] == "[]"


def test_a_cached_plan_another_interpreter_wrote_is_not_read_but_compiled_again(tmp_path, env, ws):
    (ws / "f").write_text("original")
    prof = profile(tmp_path, RO)
    assert sandbox_run(env, prof, ws, "cat", f"{ws}/f").stdout == "original"
    cache = os.path.join(env["AGENTBOX_HOME"], "cache", "sandbox")
    [name] = os.listdir(cache)
    assert name.endswith(f".{sys.implementation.cache_tag}-m{__import__('marshal').version}")
    with open(os.path.join(cache, name), "wb") as f:
        f.write(b"\xff not marshal data")  # what a damaged or foreign entry reads as
    again = sandbox_run(env, prof, ws, "cat", f"{ws}/f")
    assert again.returncode == 0 and again.stdout == "original"


def test_a_cache_entry_larger_than_any_plan_is_not_loaded(tmp_path):
    from agentbox.hot import read_marshal, write_marshal_atomic

    small, large = str(tmp_path / "small"), str(tmp_path / "large")
    write_marshal_atomic(small, {"plan": "x"})
    write_marshal_atomic(large, {"plan": "x" * (17 << 20)})  # well formed, but no plan is this size
    assert read_marshal(small) == {"plan": "x"}
    assert read_marshal(large) is None


# what the host process may import after the run: the standard library's lazily loaded modules
PLANTED = (
    *("_sha256", "_sha2", "__future__"),  # what the package imports first: before it could take the folder off the path
    *("signal", "subprocess", "json", "re", "shutil", "tempfile", "selectors", "threading", "traceback"),
)


def planting_run(tmp_path, env, ws, start=(sys.executable, "-m", "agentbox.cli")):
    """Two runs (compiled, then from the cache: each path imports its own modules after the run), started in their
    own workspace as the suite starts one, that leave modules named like the standard library's there: each,
    imported, writes its name into a file only the host can reach. `start`: how agent-box is started."""
    marker = tmp_path / "imported-on-host"
    (ws / "planted.txt").write_text(f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")
    prof = profile(tmp_path, "  workspace: {access: read_write}\n")
    plant = "for m in " + " ".join(PLANTED) + "; do cp planted.txt $m.py; done"
    for _ in range(2):
        argv = [*start, "sandbox", "run", prof, "--cwd", str(ws), "--", "sh", "-c", plant]
        done = subprocess.run(argv, env=env, cwd=ws, capture_output=True, text=True)
        assert (ws / "signal.py").exists(), done.stderr
    return marker


def test_a_module_the_run_leaves_in_its_working_folder_is_never_imported_by_the_host(tmp_path, env, ws):
    marker = planting_run(tmp_path, env, ws)
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize(
    "start", [("-m", "agentbox"), ("-m", "agentbox.cli"), ("-c", "import sys; import agentbox.hot")]
)
def test_a_module_an_earlier_run_left_is_not_imported_at_the_next_start_in_that_folder(tmp_path, ws, start):
    marker = tmp_path / "imported-on-host"
    for name in PLANTED:
        (ws / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")
    if start[0] == "-c":  # the control: the folder first on the path, as `python -m` puts it, and kept there
        start = ("-c", f"import sys; sys.path.insert(0, {str(ws)!r}); import agentbox.hot")
    done = subprocess.run([sys.executable, *start, "--version"], cwd=ws, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert marker.exists() == (start[0] == "-c")


# the same runs with both protections taken out: the working folder first on the path, as `python -m` puts it,
# and no refusal of a run whose workspace is on the import path
UNPROTECTED = """
import sys
sys.path.insert(0, {ws!r})
from agentbox.sandbox import session
session._import_path = lambda env: []
from agentbox.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_control_the_planted_modules_are_imported_when_the_working_folder_stays_on_the_import_path(tmp_path, env, ws):
    marker = planting_run(tmp_path, env, ws, start=(sys.executable, "-c", UNPROTECTED.format(ws=str(ws))))
    assert marker.exists()


def test_a_python_path_entry_reached_through_a_link_the_run_could_replace_is_refused(tmp_path, env, ws):
    outside = tmp_path / "lib-outside"
    outside.mkdir()
    (ws / "lib").symlink_to(outside)  # resolves outside the workspace, but the link itself is the run's to replace
    prof = profile(tmp_path, "  workspace: {access: read_write}\n")
    done = sandbox_run({**env, "PYTHONPATH": f"{ws}/lib"}, prof, ws, "touch", f"{ws}/ran")
    assert done.returncode == 4 and "a folder on Python's import path" in done.stderr
    assert not (ws / "ran").exists()


def test_a_user_site_folder_that_would_be_made_in_the_workspace_is_refused(tmp_path, env, ws):
    # not there yet: the run would make it, and a later Python would run the .pth files it left there
    prof = profile(tmp_path, "  workspace: {access: read_write}\n")
    done = sandbox_run({**env, "PYTHONUSERBASE": f"{ws}/.pyuser"}, prof, ws, "touch", f"{ws}/ran")
    assert done.returncode == 4 and f"{ws}/.pyuser/lib/python" in done.stderr
    assert not (ws / "ran").exists()


def test_a_run_whose_workspace_is_on_the_launchers_python_path_is_refused_before_it_starts(tmp_path, env, ws):
    prof = profile(tmp_path, "  workspace: {access: read_write}\n")
    done = sandbox_run({**env, "PYTHONPATH": f"/nonexistent:{ws}/lib"}, prof, ws, "touch", f"{ws}/ran")
    assert done.returncode == 4
    assert f"a folder on Python's import path {ws}/lib is inside {ws}" in done.stderr
    assert not (ws / "ran").exists()


def test_missing_bubblewrap_is_a_clear_error_before_anything_starts(tmp_path, env, ws):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(shutil.which("sh"), bindir / "sh")
    done = sandbox_run({**env, "PATH": str(bindir)}, profile(tmp_path, RO), ws, "sh", "-c", "true")
    assert done.returncode == 4 and "bubblewrap" in done.stderr


def test_a_bad_profile_exits_2_and_names_the_field(tmp_path, env, ws):
    bad = profile(tmp_path, "  workspace: {access: sideways}\n")
    done = sandbox_run(env, bad, ws, "true")
    assert done.returncode == 2 and "permission_intent.workspace.access" in done.stderr


def test_a_descriptor_the_caller_left_open_never_reaches_the_command_from_the_cache_or_not(tmp_path, env, ws):
    # an inheritable descriptor to a host file outside the workspace: inside, it would be a way past every mount
    secret = tmp_path / "host-secret"
    secret.write_text("host only")
    prof = profile(tmp_path, RO)
    with open(secret) as f:
        os.set_inheritable(f.fileno(), True)
        for _ in range(2):  # compiled, then from the plan cache
            done = sandbox_run(
                env, prof, ws, "sh", "-c", f"cat <&{f.fileno()}; ls /proc/self/fd", pass_fds=(f.fileno(),)
            )
            assert "host only" not in done.stdout
            assert str(f.fileno()) not in done.stdout.split()


def test_a_signal_sent_to_sandbox_run_ends_the_run_from_the_cache_and_leaves_nothing_running(tmp_path, env, ws):
    prof = profile(tmp_path, RO)
    sandbox_run(env, prof, ws, "true")  # the plan cached: the run below starts from the hot path
    token = f"agentbox-signal-{os.getpid()}"
    argv = [sys.executable, "-m", "agentbox.cli", "sandbox", "run", prof, "--cwd", str(ws), "--"]
    proc = subprocess.Popen(
        [*argv, "sh", "-c", 'echo ready; while :; do sleep 0.1; done; echo "$0"', token],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    proc.terminate()
    # bubblewrap gets the signal and ends, and its command with it (--die-with-parent): the status says so
    assert proc.wait(timeout=30) == 256 - 15
    left = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True).stdout
    assert left == ""
