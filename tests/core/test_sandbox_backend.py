"""The sandbox backend contract: compiling asks a backend by its name (`get_backend`), bubblewrap is the first, an
unknown name is a clear error, and no module outside `agentbox/sandbox/` imports a backend's module itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agentbox.compile.compiler import compile_plan
from agentbox.core.profile import LoadedProfile, Profile
from agentbox.errors import InputError
from agentbox.sandbox import DEFAULT_BACKEND, backend
from agentbox.sandbox.backend import SandboxBackend, get_backend

PACKAGE = Path(__file__).resolve().parents[2] / "agentbox"
BACKEND_MODULES = {"agentbox.sandbox.bwrap"}


class Recording:
    """The default backend under another name, recording what the compiler asks of it."""

    name = "recording"

    def __init__(self, inner: SandboxBackend):
        self.inner, self.asked = inner, []

    def __getattr__(self, attr):
        self.asked.append(attr)
        return getattr(self.inner, attr)

    def compile(self, request):
        self.asked.append("compile")
        return self.inner.compile(request).model_copy(update={"backend": self.name})


def _plan(tmp_path, **kw):
    profile = Profile.model_validate({"name": "p", "harness": "claude-code"})
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    loaded = LoadedProfile(profile=profile, source="<t>", digest="d")
    return compile_plan(loaded, str(project), harness_version="2.1.332", home="/home/u", **kw)


def test_bubblewrap_is_the_default_backend_and_provides_every_member_of_the_contract():
    bwrap = get_backend()
    assert bwrap.name == DEFAULT_BACKEND == "bwrap"
    members = {n for n in vars(SandboxBackend) if not n.startswith("_")}
    assert members and all(hasattr(bwrap, n) for n in members), members - {n for n in members if hasattr(bwrap, n)}
    assert bwrap.declarations.tested_range
    assert get_backend(DEFAULT_BACKEND) is bwrap  # imported once, on first use


def test_compiling_a_profile_asks_the_backend_named_for_its_plan_and_coverage(tmp_path, monkeypatch):
    recording = Recording(get_backend())
    monkeypatch.setitem(backend._BACKENDS, "recording", "unused:unused")
    monkeypatch.setitem(backend._LOADED, "recording", recording)
    plan = _plan(tmp_path, sandbox_backend="recording")
    assert plan.sandbox.backend == "recording"
    assert {"hidden_roots", "compile", "coverage", "backend_version"} <= set(recording.asked)
    assert _plan(tmp_path).sandbox.backend == DEFAULT_BACKEND


def test_a_plan_compiled_by_another_backend_is_that_backends_plan_with_the_same_argv(tmp_path, monkeypatch):
    monkeypatch.setitem(backend._LOADED, "recording", Recording(get_backend()))
    theirs, ours = _plan(tmp_path, sandbox_backend="recording"), _plan(tmp_path)
    assert theirs.sandbox.argv == ours.sandbox.argv
    assert [i.layers[1] for i in theirs.items] == [i.layers[1] for i in ours.items]


def test_an_unknown_backend_name_is_a_clear_error_naming_the_known_ones(tmp_path):
    with pytest.raises(InputError, match=r"unknown sandbox backend 'firejail': the known ones are bwrap"):
        get_backend("firejail")
    with pytest.raises(InputError, match="firejail"):
        _plan(tmp_path, sandbox_backend="firejail")


def _imported(path: Path) -> set[str]:
    """The modules a file imports, by their full names (`from a import b` counts as `a` and `a.b`)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = node.module
            if node.level:  # relative: resolved against the file's package
                parts = path.relative_to(PACKAGE.parent).with_suffix("").parts[: -node.level]
                module = ".".join((*parts, node.module))
            names |= {module, *(f"{module}.{a.name}" for a in node.names)}
    return names


def test_no_module_outside_the_sandbox_folder_imports_a_backend_itself():
    sandbox = PACKAGE / "sandbox"
    found = {
        str(p.relative_to(PACKAGE)): sorted(_imported(p) & BACKEND_MODULES)
        for p in PACKAGE.rglob("*.py")
        if sandbox not in p.parents
    }
    assert {path: names for path, names in found.items() if names} == {}


def test_every_backend_module_is_known_to_the_registry():
    registered = {where.split(":")[0] for where in backend._BACKENDS.values()}
    assert BACKEND_MODULES == registered
