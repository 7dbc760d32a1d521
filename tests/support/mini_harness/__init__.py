"""A harness adapter that lives outside Agent-Box: one module and its data folder, registered by an entry point.

Its harness is a shell script that prints its version (tests/core/test_harness_registry.py writes it), so the
adapter is the smallest one the contract allows: it confines nothing itself and delegates every item to the
OS sandbox.
"""

from __future__ import annotations

from pathlib import Path

from agentbox.compile.adapters.base import HarnessAdapter
from agentbox.compile.adapters.native import artifact
from agentbox.core.plan import CompileContext, CompileResult, RuntimeRequirements
from agentbox.core.profile import Profile

__all__ = ["ADAPTER", "MiniAdapter"]


class MiniAdapter(HarnessAdapter):
    name = "mini"
    binary_name = "mini"
    version_pattern = r"mini (?P<version>\d+\.\d+\.\d+)"
    data_dir = Path(__file__).parent / "data"

    def compile(self, profile: Profile, context: CompileContext) -> CompileResult:
        intent = profile.permission_intent
        return CompileResult(
            harness=self.name,
            version=context.harness_version,
            dialect=self.declarations.dialect_for(context.harness_version),
            artifacts=(artifact("mini.json", {"cwd": context.cwd}, {"cwd": "workspace"}),),
            requirements=RuntimeRequirements(
                workspace=intent.workspace.access,
                network=intent.command_network.access,
                host_home=intent.host_home.access,
                surfaces=self.surfaces,
            ),
            coverage=self.coverage(intent, context.harness_version, {}),
        )

    def headless_argv(self, result: CompileResult, prompt: str) -> list[str]:
        return ["run", prompt]


ADAPTER = MiniAdapter()
