"""Native config formats: deterministic rendering, and config_patch merging with a record of changed keys."""

from __future__ import annotations

import json
from typing import Any

from agentbox.core.plan import Artifact, CompileResult

__all__ = ["render", "parse", "deep_merge", "flatten", "merge_into_artifact", "artifact", "endpoint", "ordered"]


def render(path: str, data: Any) -> str:
    if path.endswith(".json") or path.endswith(".jsonc"):
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if path.endswith(".toml"):
        import tomli_w

        return tomli_w.dumps(data)
    if path.endswith((".yaml", ".yml")):
        import yaml

        return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
    raise ValueError(f"no renderer for {path}")


def parse(path: str, text: str) -> Any:
    if path.endswith((".json", ".jsonc")):
        return json.loads(text)
    if path.endswith(".toml"):
        import tomllib

        return tomllib.loads(text)
    if path.endswith((".yaml", ".yml")):
        import yaml

        return yaml.safe_load(text)
    raise ValueError(f"no parser for {path}")


def artifact(path: str, data: Any, owners: dict[str, str] | None = None) -> Artifact:
    return Artifact(path=path, content=render(path, data), owners=owners or {})


def ordered(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """`data` with its keys in the order of `keys`, any others after them: a native file keeps one layout
    whatever order the compile steps wrote its keys in."""
    return {**{key: data[key] for key in keys if key in data}, **data}


def deep_merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = deep_merge(base[key], value) if key in base else value
        return out
    return patch


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: data}


def merge_into_artifact(result: CompileResult, index: int, patch: dict[str, Any]) -> tuple[CompileResult, list[str]]:
    target = result.artifacts[index]
    before = parse(target.path, target.content)
    after = deep_merge(before, patch)
    flat_before, flat_after = flatten(before), flatten(after)
    changed = sorted(
        k for k in set(flat_before) | set(flat_after) if flat_before.get(k, _MISSING) != flat_after.get(k, _MISSING)
    )
    patched = target.model_copy(update={"content": render(target.path, after)})
    artifacts = list(result.artifacts)
    artifacts[index] = patched
    return result.model_copy(update={"artifacts": tuple(artifacts)}), changed


_MISSING = object()


def endpoint(base_url: str) -> str:
    """`host:port` (IPv6 hosts bracketed) that a model base URL connects to: what the sandbox must let through."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname or ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
