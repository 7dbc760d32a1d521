"""Errors that reach the command line, each with the exit code it maps to."""

from __future__ import annotations

__all__ = ["AgentBoxError", "InputError", "PolicyError", "SandboxError", "HarnessError"]


class AgentBoxError(Exception):
    exit_code = 1


class InputError(AgentBoxError):
    """Bad user input: a file, a field, a path. Nothing was written."""

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None, line: int | None = None):
        self.file, self.field, self.line = file, field, line
        # `file:line:` as compilers write it, so an editor or a terminal jumps to the place
        place = f"{file}:{line}" if file and line else file or (f"line {line}" if line else None)
        where = ": ".join(p for p in (place, field) if p)
        super().__init__(f"{where}: {message}" if where else message)


class PolicyError(AgentBoxError):
    """A required intent item cannot be proven or enforced (fail closed)."""

    exit_code = 3


class SandboxError(AgentBoxError):
    """The sandbox cannot be built as planned (missing bwrap, a hidden path)."""

    exit_code = 4


class HarnessError(AgentBoxError):
    """A harness binary is missing, unparsable or failed to install."""

    exit_code = 5
