"""An ACP adapter's build is everything that runs when it starts (red team, 2026-12-07): a script adapter's own
package, every package Node loads for it (claude-agent-acp's Claude Agent SDK holds its permission handling), what a
linked folder holds, and the interpreter its `#!` line names, which is started by its path, never looked up on the
sandbox's PATH. A build with a file inside the project, where a run could replace it, is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentbox.errors import SandboxError
from agentbox.harnesses import acp
from agentbox.harnesses.build_identity import identify


def _package(folder: Path, name: str, deps: dict[str, str] | None = None, optional: dict[str, str] | None = None):
    folder.mkdir(parents=True)
    meta = {"name": name, "version": "1.0.0", "dependencies": deps or {}, "optionalDependencies": optional or {}}
    (folder / "package.json").write_text(json.dumps(meta))
    (folder / "index.js").write_text(f"// {name}\n")


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """An adapter installed under a prefix, its script started by `/usr/bin/env node`, one dependency beside it
    (where npm puts it) and the `node` the PATH finds."""
    modules = tmp_path / "prefix" / "node_modules"
    _package(modules / "@z" / "adapter", "@z/adapter", deps={"sdk": "^1"}, optional={"absent-platform": "1"})
    script = modules / "@z" / "adapter" / "dist" / "index.js"
    script.parent.mkdir()
    script.write_text("#!/usr/bin/env node\nrequire('sdk')\n")
    _package(modules / "sdk", "sdk")
    node = tmp_path / "bin" / "node"
    node.parent.mkdir()
    node.write_text("#!/bin/sh\n")
    node.chmod(0o755)
    monkeypatch.setenv("PATH", f"{node.parent}:/usr/bin:/bin")
    return {"script": script, "modules": modules, "node": node}


def _sha(script: Path) -> str:
    return identify(acp._adapter_files(str(script))).sha256


def test_a_change_to_a_dependency_node_loads_for_the_adapter_is_another_build(installed):
    before = _sha(installed["script"])
    (installed["modules"] / "sdk" / "index.js").write_text("// sdk, with its permission handling changed\n")
    assert _sha(installed["script"]) != before


def test_what_a_linked_folder_of_the_package_holds_is_part_of_the_build(installed, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "agent.js").write_text("// one\n")
    os.symlink(elsewhere, installed["modules"] / "sdk" / "lib")
    before = _sha(installed["script"])
    (elsewhere / "agent.js").write_text("// two\n")
    assert _sha(installed["script"]) != before


def test_the_interpreter_is_part_of_the_build_and_the_start_names_it_by_its_path(installed):
    assert acp.interpreter(str(installed["script"])) == str(installed["node"])
    before = _sha(installed["script"])
    installed["node"].write_text("#!/bin/sh\n# another node\n")
    assert _sha(installed["script"]) != before


def test_an_adapter_whose_files_lie_inside_the_project_is_refused_naming_the_file(installed, tmp_path):
    files = acp._adapter_files(str(installed["script"]))
    with pytest.raises(SandboxError, match=r"the ACP adapter's file .*index\.js lies inside the project"):
        acp._refuse_planted("claude-code", files, str(tmp_path / "prefix"))
    acp._refuse_planted("claude-code", files, str(tmp_path / "project"))  # elsewhere: nothing to say
