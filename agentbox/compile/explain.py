"""Narrate a plan for people: intent item -> mechanism -> enforcement scope -> bypass -> gap.

`explanation` is the narrative's content as data (`permission explain --json`); `explain` renders it as
text, so the two never say different things.
"""

from __future__ import annotations

from typing import Any

from agentbox.core.plan import EffectiveRunPlan

__all__ = ["explain", "explanation"]


def explanation(plan: EffectiveRunPlan) -> dict[str, Any]:
    items = []
    for item in plan.items:
        value = plan.intent[item.item]
        shown = value.get("access") or ", ".join(value.get("allow", ()) or value.get("servers", ())) or "(none)"
        if value.get("writable"):
            shown += f" (writable by name: {', '.join(value['writable'])})"
        items.append(
            {
                "item": item.item,
                "capability": item.capability,
                "value": shown,
                "requirement": item.requirement,
                "provenance": item.provenance,
                "effective": item.effective,
                "layers": [
                    {
                        "layer": layer.layer,
                        "support": layer.support,
                        "mechanism": layer.mechanism,
                        "enforcement_scope": layer.enforcement_scope,
                        "bypass_surfaces": list(layer.bypass_surfaces),
                    }
                    for layer in item.layers
                ],
                "gap": item.gap,
            }
        )
    overrides = [
        {
            "harness": ov.harness,
            "applied": ov.applied,
            "changed_keys": list(ov.changed_keys),
            "weakens": list(ov.weakens),
            "unsafe_override": ov.unsafe_override,
            "reason": ov.reason,
        }
        for ov in plan.overrides
    ]
    return {
        "profile": plan.profile,
        "harness": plan.harness,
        "harness_version": plan.harness_version,
        "dialect": plan.dialect,
        "sandbox_backend": plan.sandbox.backend,
        "project": plan.cwd,
        "plan_hash": plan.hash,
        "portable": plan.portable,
        "items": items,
        "overrides": overrides,
        "backings": _backings(plan),
        "warnings": list(plan.warnings),
        "errors": list(plan.errors),
    }


def _backings(plan: EffectiveRunPlan) -> list[dict[str, str]]:
    """Each project config the plan masks, its profile backing, and whether Agent-Box wrote that backing."""
    from agentbox.sandbox.backings import status
    from agentbox.sandbox.session import state_home

    home = state_home()
    return [
        {"target": dst, "backing": src, "status": status(src, home)}
        for mode, src, dst in plan.sandbox.binds
        if mode == "ro-bind" and "/.agentbox/profiles/" in src
    ]


def explain(plan: EffectiveRunPlan) -> str:
    data = explanation(plan)
    out = [
        f"profile {data['profile']} on {data['harness']} {data['harness_version'] or '(version unknown)'} "
        f"[dialect {data['dialect']}, sandbox {data['sandbox_backend']}]",
        f"project {data['project']}",
        f"plan {data['plan_hash'][:16]}",
        "",
    ]
    for item in data["items"]:
        out.append(
            f"{item['item']}: {item['value']}  [{item['requirement']}, from {item['provenance']}] => "
            f"{item['effective'].upper()}"
        )
        for layer in item["layers"]:
            out.append(f"  {layer['layer']:<8} {layer['support']:<11} {layer['mechanism']}")
            if layer["enforcement_scope"]:
                out.append(f"  {'':<8} {'':<11} scope: {layer['enforcement_scope']}")
            if layer["bypass_surfaces"]:
                out.append(f"  {'':<8} {'':<11} bypass: {', '.join(layer['bypass_surfaces'])}")
        if item["gap"]:
            out.append(f"  gap: {item['gap']}")
    for b in data["backings"]:
        out.append(f"backing of {b['target']}: {b['backing']} ({b['status']})")
    for ov in data["overrides"]:
        if ov["applied"] and ov["weakens"]:
            tag = "UNSAFE OVERRIDE" if ov["unsafe_override"] else "override"
            out.append(
                f"\n!! {tag}: native_overrides.{ov['harness']} changes {', '.join(ov['changed_keys'])} "
                f"(weakens {', '.join(ov['weakens'])}); this profile is NOT portable"
            )
        elif not ov["applied"]:
            out.append(f"\nnative_overrides.{ov['harness']} not applied: {ov['reason']}")
    for w in data["warnings"]:
        out.append(f"warning: {w}")
    for e in data["errors"]:
        out.append(f"ERROR: {e}")
    return "\n".join(out) + "\n"
