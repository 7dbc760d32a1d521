"""The plugin's run state: which harness versions are under test, resolved once per process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["AgentBoxSession", "HarnessTarget", "session_key"]


@dataclass(frozen=True)
class HarnessTarget:
    name: str
    version: str
    binary: str | None  # None: selected but not installed

    @property
    def id(self) -> str:
        return f"{self.name}-{self.version}"

    def adapter(self):
        from agentbox.compile.adapters import get_adapter

        return get_adapter(self.name)

    def vocabulary(self):
        """The native tool names of this exact version, for the scripted model."""
        return self.adapter().vocabulary_for(self.version)


class AgentBoxSession:
    def __init__(self, config: pytest.Config):
        self.config = config
        self._targets: list[HarnessTarget] | None = None
        self._catalogue = None
        self._matrix = None

    @property
    def evidence_dir(self) -> Path:
        from agentbox.core.home import evidence_dir

        opt = self.config.getoption("--agentbox-evidence-dir")
        # Absolute now: a test that changes directory must not move the store.
        return Path(opt).absolute() if opt else evidence_dir()

    @property
    def catalogue_dir(self) -> Path:
        from agentbox.prove.claims import default_catalogue_dir

        opt = self.config.getoption("--agentbox-catalogue")
        return Path(opt).absolute() if opt else default_catalogue_dir()

    def catalogue(self):
        """The escape-vector catalogue of this run, loaded once per process."""
        if self._catalogue is None:
            from agentbox.errors import InputError
            from agentbox.prove.vectors import load_catalogue

            if not any(self.catalogue_dir.glob("*.yaml")):
                raise pytest.UsageError(f"--agentbox-catalogue: no vector catalogue (*.yaml) in {self.catalogue_dir}")
            try:
                self._catalogue = load_catalogue(self.catalogue_dir)
            except InputError as exc:
                raise pytest.UsageError(f"--agentbox-catalogue: {exc}") from None
        return self._catalogue

    def selected_vectors(self) -> list:
        """The catalogue's vectors this run parametrizes: all of them, or those of the capabilities that
        `--agentbox-capability` names (a name no vector bears is a typo, never an empty pass)."""
        vectors = self.catalogue().vectors
        wanted = self.config.getoption("--agentbox-capability")
        if not wanted:
            return list(vectors)
        known = {v.capability for v in vectors}
        unknown = sorted(set(wanted) - known)
        if unknown:
            raise pytest.UsageError(
                f"--agentbox-capability: no vector of the catalogue bears {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})"
            )
        return [v for v in vectors if v.capability in wanted]

    @property
    def batch(self) -> bool:
        return bool(self.config.getoption("--agentbox-batch"))

    @property
    def require_harnesses(self) -> bool:
        return bool(self.config.getoption("--agentbox-require-harnesses"))

    @property
    def timeout(self) -> float:
        return float(self.config.getoption("--agentbox-timeout"))

    @property
    def modes(self) -> tuple[str, ...]:
        """How harnesses are driven, each harness test once per mode: "headless", "tui", "acp" (`--agentbox-mode`,
        else the modes the matrix names, else headless)."""
        given = self.config.getoption("--agentbox-mode")
        if given:
            return tuple(dict.fromkeys(given))
        matrix = self.matrix()
        return tuple(matrix.modes) if matrix is not None else ("headless",)

    @property
    def mode(self) -> str:
        """The one mode of a run that drives one (the canary re-verifies a mode at a time)."""
        if len(self.modes) > 1:
            raise pytest.UsageError(f"this run drives one mode at a time, not {', '.join(self.modes)}: give one")
        return self.modes[0]

    def mode_without_a_harness(self) -> str | None:
        """The mode a test that drives no harness records in: the same records in every mode, so once, and in
        headless when the run has it. None: the run has only modes those records are not taken in."""
        return "headless" if "headless" in self.modes else None

    def carry(self, mode: str) -> bool:
        """Whether the `mode` run leaves the vectors the sandbox alone blocks to the headless run that carries
        them (`testing.negative.carried_by_headless`): asked for (`--agentbox-carry`), or this run records the
        headless mode too."""
        if mode == "headless":
            return False
        return bool(self.config.getoption("--agentbox-carry")) or "headless" in self.modes

    def matrix(self):
        """The matrix file `--agentbox-matrix` names, read once (None: no matrix)."""
        path = self.config.getoption("--agentbox-matrix")
        if not path:
            return None
        if self._matrix is None:
            from agentbox.errors import InputError
            from agentbox.harnesses.matrix import load_matrix

            try:
                self._matrix = load_matrix(path)
            except InputError as exc:
                raise pytest.UsageError(f"--agentbox-matrix: {exc}") from None
        return self._matrix

    def targets(self) -> list[HarnessTarget]:
        if self._targets is None:
            self._targets = self._resolve()
        return self._targets

    def _resolve(self) -> list[HarnessTarget]:
        from agentbox.harnesses.installs import find_binary, installed
        from agentbox.core.registry import harness_names

        known = harness_names()  # asked now: a harness registered after the plugin loaded counts too
        specs = list(self.config.getoption("--agentbox-harness"))
        loaded = self.matrix()
        if loaded is not None:
            specs += [f"{name}@{v}" for name, versions in loaded.harnesses.items() if name in known for v in versions]
        out: list[HarnessTarget] = []
        if not specs:
            for inst in installed(probe=False):
                if inst.name in known and inst.source == "agentbox":
                    out.append(HarnessTarget(inst.name, inst.version, inst.binary))
            if not out and self.require_harnesses:
                raise pytest.UsageError(
                    "--agentbox-require-harnesses: no harness is installed "
                    "(agent-box harness install --matrix matrices/default.yaml)"
                )
            return sorted(out, key=lambda t: (t.name, t.version))
        for spec in specs:
            name, _, version = spec.partition("@")
            if name not in known:
                raise pytest.UsageError(
                    f"--agentbox-harness {spec}: unknown harness {name!r}; known: {', '.join(known)}"
                )
            found = find_binary(name, version or None)
            out.append(
                HarnessTarget(name, found.version if found else (version or "missing"), found.binary if found else None)
            )
        return out

    def generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "harness" not in metafunc.fixturenames:
            return
        if "agentbox_mode" in metafunc.fixturenames and len(self.modes) > 1:
            # one run of each harness test per mode; a run of one mode keeps the ids it always had
            metafunc.parametrize("agentbox_mode", self.modes, ids=self.modes)
        wanted = None
        marker = metafunc.definition.get_closest_marker("harness")
        if marker and marker.args:
            wanted = set(marker.args)
        params = []
        for target in self.targets():
            if wanted is not None and target.name not in wanted:
                continue
            marks = []
            if target.binary is None and not self.require_harnesses:
                marks.append(
                    pytest.mark.skip(
                        reason=f"{target.name} {target.version} is not installed "
                        f"(agent-box harness install {target.name}@VERSION)"
                    )
                )
            params.append(pytest.param(target, id=target.id, marks=marks))
        if not params:
            params.append(
                pytest.param(
                    None,
                    id="no-harness",
                    marks=pytest.mark.skip(
                        reason="no harness installed (agent-box harness install --matrix matrices/default.yaml)"
                    ),
                )
            )
        metafunc.parametrize("harness", params)


session_key = pytest.StashKey[AgentBoxSession]()
