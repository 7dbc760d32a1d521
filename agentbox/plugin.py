"""The Agent-Box pytest plugin: options, markers, hooks and fixtures, each a thin hand-off.

Registered through the `pytest11` entry point, so `pytest --agentbox-...` works wherever the package
is installed. Run state lives on a session object in `config.stash`; fixtures live in
`agentbox.testing`.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

import pytest

from agentbox.suite import SUITE_DIR
from agentbox.testing.session import AgentBoxSession, session_key

pytest_plugins = ["agentbox.testing.fixtures"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentbox", "Agent-Box conformance")
    group.addoption(
        "--agentbox-suite",
        action="store_true",
        help="run the suite that ships with the package (compile goldens, launch and ACP smokes, "
        "the escape vectors), in any folder, in a child process apart from the project (its own "
        "test paths are left out; implied by --agentbox-canary)",
    )
    group.addoption(
        "--agentbox-capability",
        action="append",
        default=[],
        metavar="CAPABILITY",
        help="run only the escape vectors of this capability (e.g. workspace.read_only); repeatable; "
        "the evidence still counts toward the whole catalogue's claims",
    )
    group.addoption(
        "--agentbox-harness",
        action="append",
        default=[],
        metavar="NAME[@VERSION]",
        help="harness (and version) to test; repeatable; default: every installed harness",
    )
    group.addoption(
        "--agentbox-matrix",
        default=None,
        metavar="FILE",
        help="test exactly the harness versions a matrices/*.yaml file names",
    )
    group.addoption(
        "--agentbox-require-harnesses",
        action="store_true",
        help="a selected harness that is not installed is an error, not a skip",
    )
    group.addoption(
        "--agentbox-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="bound on each harness run (default 120)",
    )
    group.addoption(
        "--agentbox-mode",
        action="append",
        choices=("headless", "tui", "acp"),
        default=[],
        help="how the escape suite drives each harness: its headless one-shot run, its "
        "interactive TUI on a pseudo-terminal, the mode `agent-box launch` starts (harnesses "
        "without a TUI driver skip, and their TUI claims stay unverified), or as an ACP agent, the "
        "mode `agent-box acp` starts; repeatable: each harness test runs once per mode; default: the "
        "modes of --agentbox-matrix's file, else headless",
    )
    group.addoption(
        "--agentbox-carry",
        action="store_true",
        help="in the tui and acp modes, leave out the vectors the sandbox alone is declared to block: the build's "
        "headless and sandbox-alone records carry them into this mode's claims (run the headless mode too, into the "
        "same evidence; where those records do not block, the vector reads missing, never blocked); implied when "
        "the run drives the headless mode too",
    )
    group.addoption(
        "--agentbox-evidence-dir",
        default=None,
        metavar="DIR",
        help="where evidence records are appended (default $AGENTBOX_HOME/evidence)",
    )
    group.addoption(
        "--agentbox-catalogue",
        default=None,
        metavar="DIR",
        help="the escape-vector catalogue the claims summary reads (default: the package's)",
    )
    group.addoption(
        "--agentbox-batch",
        action="store_true",
        help="run the vectors that need the same plan in one harness start (batched sessions): each is judged on "
        "its own, and any escape, error or doubt is run again alone, that run its record",
    )
    group.addoption(
        "--agentbox-update-goldens", action="store_true", help="rewrite compile goldens instead of comparing them"
    )
    group.addoption(
        "--agentbox-canary",
        action="store_true",
        help="upgrade canary: re-verify the harness builds whose evidence is stale, reuse the rest, "
        "and diff each version's claims against the previous version's",
    )
    group.addoption(
        "--agentbox-baseline",
        default=None,
        metavar="FILE",
        help="canary expected failures (YAML `expected_failures:`, entries naming vector, layer, "
        "harness version and outcome; docs/canary.md); one that no longer happens fails as stale",
    )
    group.addoption(
        "--agentbox-canary-report",
        default=None,
        metavar="FILE",
        help="where the canary writes its JSON report (default <evidence dir>/canary-report.json)",
    )
    group.addoption(
        "--agentbox-canary-allow-empty",
        action="store_true",
        help="a canary with no harness build to verify passes (by default it fails: it proved nothing)",
    )


def _suite_path(config: pytest.Config, arg: str) -> str | None:
    """The packaged suite's spelling of a path argument (`negative/test_vectors.py::x` from a checkout, whose
    entry points mirror the suite's folders; a path inside the package as it is), or None for a path that is
    no part of it (a project's own tests)."""
    path, sep, node = arg.partition("::")
    where = (config.invocation_params.dir / path).resolve()
    if where == SUITE_DIR or SUITE_DIR in where.parents:
        return str(where) + sep + node
    mirrored = SUITE_DIR / path
    return str(mirrored) + sep + node if path and not Path(path).is_absolute() and mirrored.exists() else None


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """`--agentbox-suite` and `--agentbox-canary` run the suite in a child apart from this folder
    (`testing/hermetic`): nothing of the project it is started in takes part in what it records."""
    from agentbox.prove import hermetic

    if config.getoption("--agentbox-batch") and getattr(config.option, "numprocesses", None):
        if getattr(config.option, "dist", "no") in ("no", "load"):
            config.option.dist = "loadgroup"  # a batch's tests go to one worker, which runs the batch once
    asked = config.getoption("--agentbox-suite") or config.getoption("--agentbox-canary")
    if (
        not asked
        or hermetic.in_child()
        or hasattr(config, "workerinput")
        or config.option.help
        or config.option.version
    ):
        return None
    given = list(config.args) if config.args_source == pytest.Config.ArgsSource.ARGS else []
    options = [a for a in config.invocation_params.args if a not in given]
    spelled = {a: _suite_path(config, a) for a in given}
    paths = [p for p in spelled.values() if p]
    left = [a for a, p in spelled.items() if p is None]
    if left:
        print(
            f"agentbox: the suite runs apart from this project; left out: {' '.join(left)} (a project's own "
            f"tests say nothing about a harness)",
            flush=True,
        )
    return hermetic.run(options, paths, cwd=str(config.invocation_params.dir))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """The suite's modules are collected whatever a project sets `python_files` to."""
    if file_path.suffix != ".py" or not file_path.name.startswith("test_") or SUITE_DIR not in file_path.parents:
        return None
    if any(fnmatch(file_path.name, pattern) for pattern in parent.config.getini("python_files")):
        return None  # pytest's own collector takes it
    return pytest.Module.from_parent(parent, path=file_path)


def pytest_configure(config: pytest.Config) -> None:
    for marker in (
        "agentbox_capability(item, value=None): the intent capability a test proves",
        "negative: an escape vector that must be blocked",
        "mutation: one protection removed from the sandbox's plan must let some vector escape",
        "smoke: a launch smoke of a real harness",
        "harness: needs a real harness binary",
        "golden: a compile golden",
        "vector_layers(*layers): parametrize `vector` with the catalogue's vectors run in these layers",
    ):
        config.addinivalue_line("markers", marker)
    session = AgentBoxSession(config)
    config.stash[session_key] = session
    if config.getoption("--agentbox-capability"):
        session.selected_vectors()  # a capability no vector bears is a usage error now, not a collection error
    # Only the controller writes evidence: xdist workers hand their reports (and the records they
    # carry) to it, so the store has one writer however many workers run.
    if not hasattr(config, "workerinput"):
        from agentbox.testing.evidence_writer import EvidenceWriter, writer_key

        writer = EvidenceWriter(session.evidence_dir, session.catalogue_dir)
        config.stash[writer_key] = writer
        config.pluginmanager.register(writer, "agentbox-evidence-writer")
    from agentbox.testing.integrations import register  # pytest-html, allure-pytest: only when present and asked for

    register(config)
    if config.getoption("--agentbox-canary"):
        from agentbox.testing.canary import CanaryPlugin

        config.pluginmanager.register(CanaryPlugin(config, session), "agentbox-canary")
    else:
        for option in ("--agentbox-baseline", "--agentbox-canary-allow-empty"):
            if config.getoption(option):
                raise pytest.UsageError(f"{option} applies to the canary: add --agentbox-canary")


def pytest_unconfigure(config: pytest.Config) -> None:
    from agentbox.testing.evidence_writer import writer_key

    writer = config.stash.get(writer_key, None)
    if writer is not None:
        del config.stash[writer_key]
        config.pluginmanager.unregister(writer)
    canary = config.pluginmanager.get_plugin("agentbox-canary")
    if canary is not None:
        config.pluginmanager.unregister(canary)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test of the packaged suite once: a checkout's entry points (`conformance/`, `negative/`) re-export
    its tests, and `--agentbox-suite` may collect the same ones again from the package. The first copy stays."""
    seen: set[tuple] = set()
    keep: list[pytest.Item] = []
    again: list[pytest.Item] = []
    for item in items:
        function = getattr(item, "function", None)
        module = getattr(function, "__module__", "") or ""
        if not module.startswith(f"{__package__}.suite."):
            keep.append(item)
            continue
        callspec = getattr(item, "callspec", None)
        assert function is not None  # the suite's module above is the function's
        key = (module, function.__qualname__, callspec.id if callspec else None)
        (again if key in seen else keep).append(item)
        seen.add(key)
    if again:
        config.hook.pytest_deselected(items=again)
        items[:] = keep
    if config.getoption("--agentbox-batch"):
        from agentbox.testing.batch import group_of

        for item in items:
            name = group_of(item)
            if name:
                item.add_marker(pytest.mark.xdist_group(name))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    metafunc.config.stash[session_key].generate_tests(metafunc)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    from agentbox.testing.evidence_writer import attach  # the records handed over travel on the report

    attach(item, report)
    return report
