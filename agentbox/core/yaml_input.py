"""A YAML input file validated by a pydantic model, each error naming the line it is on.

The file is parsed once, keeping the node tree (its marks hold the lines) beside the data; an error's
`loc` path is walked back down that tree to the key or item it names. Nothing here writes anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentbox.errors import InputError
from agentbox.core.schema_hints import describe

__all__ = ["Document", "parse"]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Document:
    data: Any
    node: Any  # the yaml.Node of the document, None for an empty file
    file: str

    def line_of(self, loc: tuple[int | str, ...]) -> int | None:
        """The 1-based line of the key or item LOC names, or of its deepest part that is in the file.

        A part that is not in the file (a missing field, pydantic's `[key]` or a validator step) is
        passed over, so a missing field points at the mapping that lacks it."""
        import yaml

        node, line = self.node, None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                hit = next(
                    ((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None
                )
                if hit:
                    line, node = hit[0].start_mark.line + 1, hit[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
        return line

    def validate(self, model: type[M]) -> M:
        try:
            return model.model_validate(self.data)
        except ValidationError as exc:
            raise self.error(exc, model) from None

    def error(self, exc: ValidationError, model: type[BaseModel]) -> InputError:
        """One InputError for every error of EXC, a `file:line: field: message` line each, top to bottom."""
        found = [(self.line_of(err["loc"]), *describe(err, model)) for err in exc.errors()]
        found.sort(key=lambda f: f[0] or 0)  # stable: errors with no line (the model's own checks) lead
        (line, field, msg), rest = found[0], found[1:]
        more = [str(InputError(m, file=self.file, field=f or None, line=n)) for n, f, m in rest]
        return InputError("\n".join([msg, *more]), file=self.file, field=field or None, line=line)


def parse(text: str | bytes, file: str) -> Document:
    """Parse TEXT as one YAML document, the way `yaml.safe_load` does, keeping its nodes."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            f"malformed YAML: {getattr(exc, 'problem', None) or exc}", file=file, line=mark.line + 1 if mark else None
        ) from None
    finally:
        loader.dispose()
    return Document(data, node, file)
