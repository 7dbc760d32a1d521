"""How each real harness is pointed at the scripted model, headless, with every home in a temp folder.

This is the verification recipe (docs/scripted-model.md repeats it); the adapters own the real thing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import yaml

from agentbox.core.home import harnesses_dir

MATRIX = Path(__file__).parents[2] / "matrices" / "default.yaml"
BINARIES = {
    "claude-code": "node_modules/.bin/claude",
    "codex": "node_modules/.bin/codex",
    "opencode": "node_modules/.bin/opencode",
    "hermes": "venv/bin/hermes",
}
VOCABULARIES = {  # only the shell template: the step these runs verify
    "claude-code": {"wire_api": "anthropic-messages", "shell": {"tool": "Bash", "arguments": {"command": "{command}"}}},
    "codex": {"wire_api": "openai-responses", "shell": {"tool": "exec_command", "arguments": {"cmd": "{command}"}}},
    "opencode": {
        "wire_api": "openai-chat",
        "shell": {"tool": "bash", "arguments": {"command": "{command}", "description": "scripted"}},
    },
    "hermes": {"wire_api": "openai-chat", "shell": {"tool": "terminal", "arguments": {"command": "{command}"}}},
}
PROMPT = "Do the scripted task."


def binary(harness: str) -> Path:
    version = yaml.safe_load(MATRIX.read_text())["harnesses"][harness][0]
    return harnesses_dir() / harness / version / BINARIES[harness]


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str
    elapsed: float


def base_env(root: Path) -> dict[str, str]:
    home = root / "home"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(root / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local/state"),
    }
    for folder in ("home", "tmp", "work"):
        (root / folder).mkdir(exist_ok=True)
    return env


def configure(harness: str, root: Path, base_url: str) -> tuple[list[str], dict[str, str]]:
    """argv and env for a one-shot run in root/work against the scripted model at base_url."""
    env, home, work = base_env(root), root / "home", root / "work"
    if harness == "claude-code":
        env.update(
            ANTHROPIC_BASE_URL=base_url,
            ANTHROPIC_API_KEY="sk-scripted",
            DISABLE_TELEMETRY="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        return ["-p", PROMPT, "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash"], env
    if harness == "codex":
        codex_home = home / ".codex"  # not under TMPDIR, or Codex cannot exec its sandbox helper
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            'model = "scripted"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\nname = "scripted"\n'
            f'base_url = "{base_url}/v1"\nwire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n'
        )
        env.update(CODEX_HOME=str(codex_home), SCRIPTED_API_KEY="sk-scripted")
        return ["exec", "--skip-git-repo-check", "--sandbox", "workspace-write", PROMPT], env
    if harness == "opencode":
        (work / "opencode.json").write_text(
            json.dumps(
                {
                    "$schema": "https://opencode.ai/config.json",
                    "model": "scripted/scripted",
                    "autoupdate": False,
                    "share": "disabled",
                    "permission": {"bash": "allow"},
                    "provider": {
                        "scripted": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "scripted",
                            "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-scripted"},
                            "models": {"scripted": {"name": "scripted"}},
                        }
                    },
                }
            )
        )
        return ["run", PROMPT], env
    if harness == "hermes":
        hermes_home = home / ".hermes"
        hermes_home.mkdir()
        (hermes_home / "config.yaml").write_text(
            yaml.safe_dump(
                {
                    "model": {
                        "provider": "custom",
                        "base_url": f"{base_url}/v1",
                        "default": "scripted",
                        "api_key": "sk-scripted",
                        "context_length": 200000,
                    }
                }
            )
        )
        env.update(HERMES_HOME=str(hermes_home))
        return ["-z", PROMPT], env
    raise ValueError(harness)


def kill_session(session_id: int) -> None:
    """Kill whatever the run left behind in its own session (MCP servers, helpers), by process id."""
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == session_id:
                process.kill()
        except (ProcessLookupError, PermissionError, psutil.Error):
            pass


def run(harness: str, root: Path, base_url: str, timeout: float = 120) -> Run:
    args, env = configure(harness, root, base_url)
    started = time.monotonic()
    process = subprocess.Popen(
        [str(binary(harness)), *args],
        cwd=root / "work",
        env=env,
        text=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
    finally:
        kill_session(process.pid)
    return Run(process.returncode, stdout, stderr, time.monotonic() - started)
