"""Narrate a plan for people: intent item -> mechanism -> enforcement scope -> bypass -> gap."""

from __future__ import annotations

from .plan import EffectiveRunPlan

__all__ = ["explain"]


def explain(plan: EffectiveRunPlan) -> str:
    out = [f"profile {plan.profile} on {plan.harness} {plan.harness_version or '(version unknown)'} "
           f"[dialect {plan.dialect}, sandbox {plan.sandbox.backend}]",
           f"project {plan.cwd}", f"plan {plan.hash[:16]}", ""]
    for item in plan.items:
        value = plan.intent[item.item]
        shown = value.get("access") or ", ".join(value.get("allow", ()) or value.get("servers", ())) or "(none)"
        out.append(f"{item.item}: {shown}  [{item.requirement}, from {item.provenance}] => {item.effective.upper()}")
        for layer in item.layers:
            out.append(f"  {layer.layer:<8} {layer.support:<11} {layer.mechanism}")
            if layer.enforcement_scope:
                out.append(f"  {'':<8} {'':<11} scope: {layer.enforcement_scope}")
            if layer.bypass_surfaces:
                out.append(f"  {'':<8} {'':<11} bypass: {', '.join(layer.bypass_surfaces)}")
        if item.gap:
            out.append(f"  gap: {item.gap}")
    for ov in plan.overrides:
        if ov.applied and ov.weakens:
            tag = "UNSAFE OVERRIDE" if ov.unsafe_override else "override"
            out.append(f"\n!! {tag}: native_overrides.{ov.harness} changes {', '.join(ov.changed_keys)} "
                       f"(weakens {', '.join(ov.weakens)}); this profile is NOT portable")
        elif not ov.applied:
            out.append(f"\nnative_overrides.{ov.harness} not applied: {ov.reason}")
    for w in plan.warnings:
        out.append(f"warning: {w}")
    for e in plan.errors:
        out.append(f"ERROR: {e}")
    return "\n".join(out) + "\n"
