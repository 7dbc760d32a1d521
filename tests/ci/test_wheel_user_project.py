"""The package as a user gets it: a wheel and an sdist built from this checkout carry everything Agent-Box reads at
run time (the data, schemas, report templates, the packaged suite with its goldens, the pytest plugin's entry
point), and the wheel, installed into a clean virtual environment outside the checkout, runs a user's project end
to end: `agent-box harness install codex@0.171.0` from npm into a fresh AGENTBOX_HOME, `agent-box prove` of a
profile, `agent-box launch` of it with the gate passing, `pytest --agentbox-canary` re-verifying codex on the
packaged suite, and `agent-box report` of the store.

The build runs on a copy of the files git tracks (so untracked files count for nothing and the checkout gets no
build/ or *.egg-info), with `python -m build`, which builds the wheel from the sdist: a file the sdist lacks is
missing from the wheel too. Under xdist the build and the user's run happen once per session, in a folder every
worker shares; each test then reads its step's outcome."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import traceback
import zipfile
from fnmatch import fnmatch
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
HARNESS, VERSION = "codex", "0.171.0"
# one vector per capability the canary re-verifies, as canary/test_upgrade_canary.py's subset: the user's
# run must stay in minutes
SUBSET = ("net-curl", "shell-deny-runs-nothing")
# where the user's Python imports agentbox from, and the pytest plugins its entry points name
WHERE = (
    "import agentbox, importlib.metadata as m; print(agentbox.__file__); "
    "print(*[f'{e.name}={e.value}' for e in m.entry_points(group='pytest11')])"
)
# What a user's run reads from the installed package, each pattern matched by at least one file of the wheel.
SHIPPED = (
    "agentbox/data/vectors/*.yaml",  # the vector catalogue
    "agentbox/data/capabilities/*.yaml",  # what each layer declares
    "agentbox/data/vocabulary/*.yaml",
    "agentbox/data/seccomp/*.yaml",
    "agentbox/data/matrices/*.yaml",
    "agentbox/data/packages.yaml",  # where `harness install` fetches from
    "agentbox/data/tui.yaml",  # how the launch and the suite drive each TUI
    "agentbox/schemas/*.json",
    "agentbox/report/templates/*.j2",
    "agentbox/sandbox/inner_relay.py",
    "agentbox/suite/conformance/test_*.py",
    "agentbox/suite/negative/test_*.py",
    "agentbox/suite/conformance/intents/*.yaml",
    "agentbox/suite/conformance/golden_context.yaml",
    "agentbox/suite/conformance/goldens/*/config/*",
    "agentbox/suite/conformance/goldens/claude-code/*/config/.claude.json",  # a dot-file
    "agentbox/suite/negative/mutations.yaml",
)


def _require(condition: bool, reason: str) -> None:
    """Skip when the machine lacks what the test needs; in CI fail instead, as a CI run must not pass by skipping."""
    if not condition:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def _tracked() -> list[str]:
    """The files git tracks that the working tree holds (a tracked file deleted in it is not built)."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True)
    _require(done.returncode == 0 and bool(done.stdout), f"not a git checkout: {done.stderr.strip()}")
    return [f for f in done.stdout.split("\0") if f and os.path.lexists(REPO / f)]


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _run(argv: list, cwd: Path, env: dict | None = None, timeout: float = 600) -> dict:
    """One command's outcome as data (a worker that did not run it reads it back)."""
    argv = [str(a) for a in argv]
    start = time.monotonic()
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
        )
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = None, _text(e.stdout), _text(e.stderr) + f"\n(killed: no end within {timeout} s)"
    return {
        "argv": argv,
        "cwd": str(cwd),
        "returncode": code,
        "stdout": out,
        "stderr": err,
        "seconds": round(time.monotonic() - start, 1),
    }


def _shown(step: dict) -> str:
    return (
        f"$ {' '.join(step['argv'])}  (in {step['cwd']}, exit {step['returncode']}, {step['seconds']} s)\n"
        f"--- stdout\n{step['stdout'][-3000:]}\n--- stderr\n{step['stderr'][-5000:]}"
    )


class Steps:
    """Named commands, each run only when the steps it needs passed; what ran is kept for every test to read."""

    def __init__(self) -> None:
        self.steps: dict[str, dict] = {}
        self.not_run: dict[str, str] = {}  # step -> the step it needed that did not pass

    def passed(self, name: str) -> bool:
        return name in self.steps and self.steps[name]["returncode"] == 0

    def run(self, name: str, argv: list, needs: tuple[str, ...] = (), **kw) -> None:
        blocker = next((n for n in needs if not self.passed(n)), None)
        if blocker:
            self.not_run[name] = self.not_run.get(blocker, blocker)
            return
        self.steps[name] = _run(argv, **kw)

    def as_dict(self) -> dict:
        return {"steps": self.steps, "not_run": self.not_run}


def _once(place: Path, name: str, make) -> dict:
    """make() in one worker of the session, its answer read back by the others (they wait on the lock); an error
    is an answer too, so that no worker starts over on a half-made folder."""
    with open(place / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        answer = place / f"{name}.json"
        if not answer.exists():
            try:
                made = make()
            except Exception:
                made = {"error": traceback.format_exc()}
            answer.write_text(json.dumps(made))
        made = json.loads(answer.read_text())
    if "error" in made:
        pytest.fail(f"{name}: {made['error']}")
    return made


def _step(results: dict, name: str) -> dict:
    step = results["steps"].get(name)
    if step is None:
        first = results["not_run"][name]
        pytest.fail(f"`{name}` did not run: it needs `{first}`, which failed\n{_shown(results['steps'][first])}")
    assert step["returncode"] == 0, _shown(step)
    return step


@pytest.fixture(scope="session")
def place(tmp_path_factory) -> Path:
    """One folder for the session's workers (xdist gives each a basetemp below the session's)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "wheel-user-project"
    root.mkdir(exist_ok=True)
    return root


def _build(place: Path, tracked: list[str]) -> dict:
    src, dist = place / "src", place / "dist"
    for name in tracked:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name, follow_symlinks=False)  # matrices is a symlink, and stays one
    steps = Steps()
    if importlib.util.find_spec("build") is not None:
        # the sdist, then the wheel from the unpacked sdist
        steps.run("build", [sys.executable, "-m", "build", "--outdir", dist, src], cwd=place, timeout=600)
    else:
        steps.run("build", [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, src], cwd=place, timeout=600)
    answer = steps.as_dict()
    answer["wheel"] = [str(p) for p in dist.glob("*.whl")]
    answer["sdist"] = [str(p) for p in dist.glob("*.tar.gz")]
    return answer


@pytest.fixture(scope="session")
def built(place) -> dict:
    tracked = _tracked()
    results = _once(place, "build", lambda: _build(place, tracked))
    _step(results, "build")
    assert len(results["wheel"]) == 1, results
    return results


@pytest.fixture(scope="session")
def wheel(built) -> zipfile.ZipFile:
    with zipfile.ZipFile(built["wheel"][0]) as whl:
        yield whl


def _user_env(place: Path) -> dict:
    """A user's shell: the venv first on PATH, then the system's (bwrap, git) and node's; a fresh AGENTBOX_HOME and
    home; nothing of this checkout or of the pytest running this test. pip's and npm's download caches stay the
    machine's, as a user's would."""
    outer_home = Path(os.environ.get("HOME") or Path.home())
    pip_cache = os.environ.get("PIP_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or outer_home / ".cache") / "pip"
    )
    npm_cache = os.environ.get("npm_config_cache") or os.environ.get("NPM_CONFIG_CACHE") or str(outer_home / ".npm")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENTBOX_", "PYTEST_", "XDG_", "COV_CORE_"))
        and k
        not in (
            "PYTHONPATH",
            "PYTHONHOME",
            "PYTHONSTARTUP",
            "PYTHONSAFEPATH",
            "VIRTUAL_ENV",
            "CONDA_PREFIX",
            "HOME",
            "PATH",
            "NPM_CONFIG_CACHE",
        )
    }
    path = [str(place / "venv" / "bin")]
    for tool in ("node", "npm"):  # the harness installs with npm, and codex's launcher is a node script
        found = shutil.which(tool)
        if found and os.path.dirname(found) not in path + ["/usr/bin", "/bin"]:
            path.append(os.path.dirname(found))
    env.update(
        AGENTBOX_HOME=str(place / "home"),
        HOME=str(place / "userhome"),
        PATH=":".join(path + ["/usr/bin", "/bin"]),
        PIP_CACHE_DIR=pip_cache,
        npm_config_cache=npm_cache,
    )
    return env


def _subset_catalogue(wheel_path: str, out: Path) -> None:
    """A catalogue of SUBSET's entries, as the wheel ships them."""
    entries = []
    with zipfile.ZipFile(wheel_path) as whl:
        for name in sorted(whl.namelist()):
            if fnmatch(name, "agentbox/data/vectors/*.yaml"):
                entries += [e for e in yaml.safe_load(whl.read(name)) or [] if e["id"] in SUBSET]
    assert sorted(e["id"] for e in entries) == sorted(SUBSET)
    out.mkdir()
    (out / "subset.yaml").write_text(yaml.safe_dump(entries, sort_keys=False))


def _user_project(place: Path, wheel_path: str) -> dict:
    project, venv, home = place / "project", place / "venv", place / "home"
    project.mkdir()
    (place / "userhome").mkdir()
    env = _user_env(place)
    bin_ = venv / "bin"
    steps = Steps()
    steps.run("venv", [sys.executable, "-m", "venv", venv], cwd=project, env=env, timeout=300)
    with zipfile.ZipFile(wheel_path) as whl:
        meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [line for line in whl.read(meta).decode().splitlines() if line.startswith("Requires-Dist:")]
    xdist = [] if any("pytest-xdist" in r for r in requires) else ["pytest-xdist"]
    steps.run(
        "pip install",
        [bin_ / "python", "-m", "pip", "install", "-q", wheel_path, *xdist],
        cwd=project,
        env=env,
        timeout=900,
        needs=("venv",),
    )
    steps.run("import", [bin_ / "python", "-c", WHERE], cwd=project, env=env, needs=("pip install",))
    steps.run(
        "harness install",
        [bin_ / "agent-box", "harness", "install", f"{HARNESS}@{VERSION}"],
        cwd=project,
        env=env,
        timeout=900,
        needs=("pip install",),
    )
    # outside the project: `launch` refuses a profile its run could rewrite (a writable workspace)
    profile = place / "profiles" / "reviewer.yaml"
    profile.parent.mkdir()
    profile.write_text(
        f"name: reviewer\nharness: {HARNESS}\npermission_intent:\n  shell: {{access: deny, requirement: required}}\n"
    )
    steps.run(
        "prove",
        [bin_ / "agent-box", "prove", profile, "--cwd", project, "--json"],
        cwd=project,
        env=env,
        timeout=900,
        needs=("harness install",),
    )
    store = home / "evidence" / "evidence.jsonl"
    proved = len(store.read_text().splitlines()) if store.exists() else 0
    steps.run(
        "launch",
        [bin_ / "agent-box", "launch", profile, "--cwd", project, "--", "--version"],
        cwd=project,
        env=env,
        timeout=300,
        needs=("prove",),
    )
    _subset_catalogue(wheel_path, place / "subset")
    steps.run(
        "canary",
        [
            bin_ / "python",
            "-m",
            "pytest",
            "--agentbox-canary",
            "--agentbox-harness",
            f"{HARNESS}@{VERSION}",
            "--agentbox-catalogue",
            place / "subset",
        ],
        cwd=project,
        env=env,
        timeout=900,
        needs=("harness install",),
    )
    steps.run(
        "report",
        [
            bin_ / "agent-box",
            "report",
            "--evidence",
            home / "evidence",
            "-o",
            place / "report.html",
            "--json-out",
            place / "report.json",
        ],
        cwd=project,
        env=env,
        timeout=300,
        needs=("harness install",),
    )
    answer = steps.as_dict()
    answer["records_after_prove"] = proved
    answer["installed"] = (home / "harnesses" / HARNESS / VERSION / "node_modules" / ".bin" / HARNESS).exists()
    if all(steps.passed(n) for n in steps.steps) and not steps.not_run:
        # what a failed run leaves stays for a look; the ~0.5 GB of a passed one goes
        shutil.rmtree(home / "harnesses")
        shutil.rmtree(venv)
        shutil.rmtree(place / "src", ignore_errors=True)
    return answer


@pytest.fixture(scope="session")
def user(place, built) -> dict:
    _require(
        shutil.which("bwrap") is not None,
        "bubblewrap is not installed (apt-get install bubblewrap): the "
        "user's run proves and launches codex in its sandbox",
    )
    _require(
        shutil.which("npm") is not None and shutil.which("node") is not None,
        "node and npm are not installed: `agent-box harness install codex@0.171.0` installs it with npm",
    )
    return _once(place, "user-project", lambda: _user_project(place, built["wheel"][0]))


def _records(place: Path) -> list[dict]:
    return [json.loads(line) for line in (place / "home" / "evidence" / "evidence.jsonl").read_text().splitlines()]


# --- the build ---------------------------------------------------------------------------------------------------


def test_the_wheel_holds_every_file_git_tracks_under_agentbox(wheel):
    names = set(wheel.namelist())
    missing = [f for f in _tracked() if f.startswith("agentbox/") and f not in names]
    assert missing == [], "tracked under agentbox/ but not in the wheel (pyproject's package-data)"


def test_the_wheel_holds_the_data_the_suite_and_the_templates_a_run_reads(wheel):
    names = wheel.namelist()
    assert [pattern for pattern in SHIPPED if not any(fnmatch(n, pattern) for n in names)] == []


def test_the_wheel_declares_the_command_and_the_pytest_plugin(wheel):
    points = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    text = wheel.read(points).decode()
    assert "[pytest11]\nagentbox = agentbox.plugin" in text
    assert "[console_scripts]\nagent-box = agentbox.cli:main" in text


def test_the_sdist_holds_every_file_git_tracks_under_agentbox_and_the_project_metadata(built):
    _require(bool(built["sdist"]), "the sdist needs `build` (pip install -e '.[test]' brings it)")
    with tarfile.open(built["sdist"][0]) as sdist:
        names = {n.partition("/")[2] for n in sdist.getnames()}
    assert {"pyproject.toml", "README.md"} <= names
    missing = [f for f in _tracked() if f.startswith("agentbox/") and f not in names]
    assert missing == [], "tracked under agentbox/ but not in the sdist"


# --- a user's project, outside the checkout ----------------------------------------------------------------------


def test_the_wheel_installs_into_a_clean_environment_and_runs_from_there_not_from_the_checkout(user, place):
    where = _step(user, "import")["stdout"].splitlines()
    assert Path(where[0]).is_relative_to(place / "venv") and not Path(where[0]).is_relative_to(REPO)
    assert "agentbox=agentbox.plugin" in where[1].split()  # pytest loads the plugin by the wheel's entry point


def test_the_harness_installs_from_its_registry_into_the_fresh_agentbox_home(user, place):
    step = _step(user, "harness install")
    assert f"{HARNESS}@{VERSION}: [3/3] verify: the probe reads {VERSION}, the pin" in step["stderr"]
    assert user["installed"], f"no {HARNESS} under {place / 'home' / 'harnesses'}"


def test_prove_runs_the_profiles_vectors_into_the_default_store_and_says_the_launch_would_pass(user, place):
    answer = json.loads(_step(user, "prove")["stdout"])
    assert answer["launch"] == {"allowed": True, "refusal": None}
    assert answer["evidence"] == str(place / "home" / "evidence")
    assert answer["passes"] and all(
        p["exit_status"] == 0 and p["capabilities"] == ["shell.deny"] for p in answer["passes"]
    )
    assert answer["items"]["shell"]["claim"] == "exact"
    assert user["records_after_prove"] > 0


def test_launch_passes_the_gate_and_starts_the_installed_codex_in_its_sandbox(user):
    step = _step(user, "launch")
    assert f"codex-cli {VERSION}" in step["stdout"].splitlines(), _shown(step)


def test_the_canary_reverifies_codex_with_the_packaged_suite_and_passes_having_run_vectors(user, place):
    step = _step(user, "canary")
    assert "canary: passed" in step["stdout"] and f"{HARNESS} {VERSION}: re-verified" in step["stdout"], _shown(step)
    # the suite it collected is the installed package's
    assert "site-packages/agentbox/suite/negative/test_vectors.py" in step["stdout"], _shown(step)
    assert str(REPO / "agentbox") not in step["stdout"] + step["stderr"]
    report = json.loads((place / "home" / "evidence" / "canary-report.json").read_text())
    assert [(t["harness"], t["version"], t["action"]) for t in report["targets"]] == [(HARNESS, VERSION, "reverified")]
    assert report["ran_nothing_for"] == [] and report["failures"] == [] and report["empty"] is False
    ran = _records(place)[user["records_after_prove"] :]
    assert {r["vector_id"] for r in ran if r["run_info"]["harness"] == HARNESS} == set(SUBSET)


def test_the_report_renders_what_the_store_proves_naming_codex(user, place):
    _step(user, "report")
    assert f"{HARNESS} {VERSION}" in (place / "report.html").read_text()
    columns = json.loads((place / "report.json").read_text())["columns"]
    assert (HARNESS, VERSION) in {(c["harness"], c["version"]) for c in columns}
