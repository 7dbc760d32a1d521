"""Compile a profile into an EffectiveRunPlan: adapter + sandbox + coverage closure + overrides.

Pure apart from reading the file system (which project surfaces exist); writes nothing, starts
nothing. A required item whose combined coverage is not exact makes the plan carry an error, which
the command line turns into a refusal (exit 3).
"""

from __future__ import annotations

import os
from typing import Any

from agentbox.compile.adapters import get_adapter
from agentbox.compile.adapters.base import HarnessAdapter, Probe
from agentbox.core.capability import TRIVIAL, Support, capability_id
from agentbox.errors import InputError, PolicyError
from agentbox.core.intent import ITEMS
from agentbox.compile.mcp_binds import server_binds
from agentbox.core.plan import (
    CompileContext,
    CompileResult,
    Credential,
    EffectiveRunPlan,
    ItemPlan,
    LayerCoverage,
    OverrideRecord,
    Placeholder,
    RuntimeRequirements,
)
from agentbox.core.profile import LoadedProfile, NativeOverride
from agentbox.sandbox import DEFAULT_BACKEND
from agentbox.sandbox.backend import SandboxRequest, get_backend
from agentbox.sandbox.surfaces import discover
from agentbox.core.versions import Version, in_range

__all__ = ["compile_plan", "closure", "refusal_message", "sandbox_facts", "credentials_of"]

_RANK = {"exact": 0, "partial": 1, "unsupported": 2}


def closure(layers: tuple[LayerCoverage, ...]) -> Support:
    """The strongest layer wins: any layer that enforces the item for the whole run makes it exact."""
    return min((layer.support for layer in layers), key=_RANK.__getitem__, default="unsupported")


def _gap(layers: tuple[LayerCoverage, ...]) -> str:
    parts = []
    for layer in layers:
        bypass = f" (bypass: {', '.join(layer.bypass_surfaces)})" if layer.bypass_surfaces else ""
        reason = f": {layer.reason}" if layer.reason else ""
        parts.append(f"{layer.layer} layer {layer.support}{bypass}{reason}")
    return "; ".join(parts)


def _owned_items(result: CompileResult, changed: list[str]) -> set[str]:
    items = set()
    for art in result.artifacts:
        for key, item in art.owners.items():
            if any(c == key or c.startswith(key + ".") or key.startswith(c + ".") for c in changed):
                items.add(item)
    return items


def _apply_override(
    adapter: HarnessAdapter,
    profile_name: str,
    result: CompileResult,
    ov: NativeOverride,
    intent: Any,
    version: str | None,
) -> tuple[CompileResult, OverrideRecord]:
    harness = adapter.name
    if version is not None and not in_range(Version.parse(version), ov.min_version, ov.max_version):
        return result, OverrideRecord(
            harness=harness,
            applied=False,
            patch=ov.config_patch,
            unsafe_override=ov.unsafe_override,
            reason=f"version {version} is outside {ov.min_version or ''}..{ov.max_version or ''}",
        )
    if not result.artifacts:
        raise InputError(
            "this harness compiles no config file to patch", field=f"native_overrides.{harness}.config_patch"
        )
    patched, changed = adapter.apply_patch(result, ov.config_patch)
    weakens = sorted(_owned_items(result, changed))
    required = [i for i in weakens if intent.item(i).requirement == "required"]
    if required and not ov.unsafe_override:
        raise PolicyError(
            f"{profile_name}: native_overrides.{harness}.config_patch changes {', '.join(changed)}, which "
            f"enforce{'s' if len(required) == 1 else ''} the required item{'s' if len(required) > 1 else ''} "
            f"{', '.join(required)}; refusing. Set unsafe_override: true to accept a non-portable profile."
        )
    return patched, OverrideRecord(
        harness=harness,
        applied=True,
        patch=ov.config_patch,
        changed_keys=tuple(changed),
        weakens=tuple(weakens),
        unsafe_override=ov.unsafe_override,
    )


def compile_plan(
    loaded: LoadedProfile,
    cwd: str,
    *,
    harness_version: str | None = None,
    probe: Probe | None = None,
    home: str | None = None,
    config_home: str | None = None,
    tmpdir: str | None = None,
    ro_binds: tuple[str, ...] = (),
    rw_binds: tuple[str, ...] = (),
    mcp_tools: dict[str, tuple[str, ...]] | None = None,
    mcp_problems: dict[str, str] | None = None,
    sandboxed: bool = True,
    sandbox_backend: str = DEFAULT_BACKEND,
) -> EffectiveRunPlan:
    """`config_home`/`tmpdir` default to the sandbox's fixed paths; the harness-alone layer passes host ones
    and `sandboxed=False` (the adapter then relies on no OS layer). `sandbox_backend`: the OS sandbox's name
    (`agentbox.sandbox.backend.get_backend`)."""
    profile = loaded.profile
    intent = profile.permission_intent
    adapter = get_adapter(profile.harness)
    if not os.path.isdir(cwd):
        raise InputError("not a directory", field=f"--cwd {cwd}")
    cwd = os.path.realpath(cwd)
    home = home or os.environ.get("HOME") or "/root"
    version = probe.version if probe is not None else harness_version
    if version is not None:
        try:
            Version.parse(version)
        except ValueError as exc:
            raise InputError(str(exc), field="--harness-version") from None
    given: dict[str, Any] = {k: v for k, v in (("config_home", config_home), ("tmpdir", tmpdir)) if v is not None}
    if sandboxed:
        given.update(sandbox_facts(intent, profile.model.base_url, any(b.hosts for b in profile.secrets.values())))
    context = CompileContext(
        cwd=cwd, home=home, harness_version=version, mcp_tools=mcp_tools or {}, mcp_problems=mcp_problems or {}, **given
    )
    native = adapter.compile(profile, context)
    # the OS sandbox's own item: no adapter states it, every plan carries it
    native = native.model_copy(
        update={
            "requirements": native.requirements.model_copy(
                update={"host_executed": intent.host_executed.access, "host_writable": intent.host_executed.writable}
            )
        }
    )
    credentials: tuple[Credential, ...] = ()
    if sandboxed:
        native, credentials = credentials_of(native, profile)

    overrides: list[OverrideRecord] = []
    ov = profile.override()
    if ov is not None:
        native, record = _apply_override(adapter, profile.name, native, ov, intent, version)
        overrides.append(record)
    overridden = {i for r in overrides if r.applied for i in r.weakens}

    backend = get_backend(sandbox_backend)
    hidden = backend.hidden_roots(native.requirements, home)
    masks = discover(cwd, profile.name, native.requirements.surfaces, hidden)
    roots = adapter.install_roots(probe.binary) if probe is not None else ()
    roots += tuple(b for name in intent.mcp.servers for b in server_binds(name, profile.mcp_servers[name], hidden))
    writable = {s.path for s in native.state_files}  # the harness saves its answers there (`profile_state`)
    request = SandboxRequest(
        requirements=native.requirements,
        workspace=cwd,
        home=home,
        masks=masks,
        ro_binds=(*roots, *ro_binds),
        rw_binds=rw_binds,
        config_files=tuple(a.path for a in native.artifacts if a.path not in writable),
        credentials=credentials,
    )
    sandbox = backend.compile(request)
    sandbox_cov = backend.coverage(request, backend.backend_version())
    key = native.model_credential
    if sandboxed and key is not None and not any(c.model for c in sandbox.credentials):
        # no model route to swap it on: the harness's key goes in as it is, to every command the harness runs
        sandbox_cov["environment"] = sandbox_cov["environment"].model_copy(
            update={
                "support": "partial"
                if sandbox_cov["environment"].support == "exact"
                else sandbox_cov["environment"].support,
                "bypass_surfaces": ("harness_env", "process"),
                "reason": f"the model key {key.variable} enters the sandbox as it is: the profile names no model.base_url, "
                "so there is no model route to swap a placeholder on",
            }
        )

    items: list[ItemPlan] = []
    errors = list(native.errors)
    warnings = list(native.warnings)
    provenance = intent.provenance()
    for name in ITEMS:
        item = intent.item(name)
        cap = capability_id(name, item.model_dump())
        harness_layer = native.coverage[name]
        if name in overridden:
            harness_layer = harness_layer.model_copy(
                update={
                    "support": "partial" if harness_layer.support == "exact" else harness_layer.support,
                    "reason": f"native config_patch changed the keys that enforce it; {harness_layer.reason}",
                }
            )
        layers = (harness_layer, sandbox_cov[name])
        effective: Support = "exact" if cap in TRIVIAL else closure(layers)
        gap = None if effective == "exact" else _gap(layers)
        items.append(
            ItemPlan(
                item=name,
                capability=cap,
                requirement=item.requirement,
                provenance="override" if name in overridden else provenance[name],
                layers=layers,
                effective=effective,
                gap=gap,
            )
        )
        if effective != "exact":
            line = f"{name} ({cap}) is {effective}: {gap}"
            (errors if item.requirement == "required" else warnings).append(line)

    return EffectiveRunPlan(
        profile=profile.name,
        profile_digest=loaded.digest,
        harness=profile.harness,
        harness_version=version,
        dialect=native.dialect,
        binary=probe.binary if probe else None,
        binary_sha256=probe.sha256 if probe else None,
        cwd=cwd,
        intent=intent.model_dump(mode="json"),
        native=native,
        sandbox=sandbox,
        items=tuple(items),
        overrides=tuple(overrides),
        portable=not any(r.applied and r.weakens for r in overrides),
        warnings=tuple(warnings),
        errors=tuple(errors),
    )


def sandbox_facts(intent: Any, base_url: str | None = None, bound_secrets: bool = False) -> dict[str, Any]:
    """What the OS layer will enforce and set, from the intent, the model's base URL and whether a secret is bound
    to a host (the adapter has not compiled yet)."""
    from agentbox.egress.policy import Endpoint

    req = RuntimeRequirements(
        workspace=intent.workspace.access,
        network=intent.command_network.access,
        allow_domains=intent.command_network.allow_domains,
        host_home=intent.host_home.access,
        model_endpoint=str(Endpoint.from_base_url(base_url)) if base_url else None,
    )
    backend = get_backend()
    return {
        "sandbox_enforces": backend.enforced_items(req),
        "sandbox_env": backend.sandbox_env_names(req, bound_secrets),
        "user_namespaces": backend.user_namespaces,
        "model_base_url": backend.model_route_url(req, base_url),
    }


def credentials_of(native: CompileResult, profile: Any) -> tuple[CompileResult, tuple[Credential, ...]]:
    """The secrets a sandboxed run sees only as placeholders: the harness's model key, bound to the model route
    (when there is one: a base URL), and the profile's `secrets`, bound to their hosts. The model endpoint's
    scheme is the model route's: it forwards over TLS to an https endpoint."""
    req = native.requirements
    base_url = profile.model.base_url
    if base_url and req.model_endpoint:
        native = native.model_copy(
            update={"requirements": req.model_copy(update={"model_tls": base_url.startswith("https://")})}
        )
    out = []
    key = native.model_credential
    if key is not None:
        if base_url and req.model_endpoint:
            out.append(key.model_copy(update={"model": True, "hosts": ()}))
        else:
            native = native.model_copy(
                update={
                    "warnings": (
                        *native.warnings,
                        (
                            f"model: the key in {key.variable} enters the sandbox as it is, readable by every command the harness "
                            "runs: without model.base_url there is no model route to swap a placeholder on"
                        ),
                    )
                }
            )
    out += [
        Credential(
            variable=name,
            headers=(b.header,),
            hosts=b.hosts,
            source=f"secrets.{name}",
            placeholder=Placeholder(prefix=b.placeholder_prefix),
        )
        for name, b in profile.secrets.items()
    ]
    return native, tuple(out)


def refusal_message(plan: EffectiveRunPlan) -> str:
    lines = [
        f"refusing: {len(plan.errors)} required item(s) of profile {plan.profile!r} "
        f"cannot be enforced exactly on {plan.harness} {plan.harness_version or '(unknown version)'}:"
    ]
    lines += [f"  - {e}" for e in plan.errors]
    return "\n".join(lines)
