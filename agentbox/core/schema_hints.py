"""What one pydantic validation error says to a person: the field, the message, and the nearest valid name.

A typo (`permision_intent:`, `harness: codx`) is the commonest bad input; pydantic names what is wrong,
this names what was probably meant, from the model's own field names (or Literal values) at the place
of the error, so the hint can never drift from the schema. A validator whose values are known only when it
runs (the registered harnesses) raises pydantic's Literal error with them in its context (`allowed`).
"""

from __future__ import annotations

import difflib
import types
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = ["describe", "field_path"]


def field_path(loc: tuple[int | str, ...]) -> str:
    """The dotted field of an error, without pydantic's validator steps (`function-after[...]`)."""
    return ".".join(str(p) for p in loc if not str(p).startswith("function-"))


def describe(err: ErrorDetails, model: type[BaseModel] | None = None) -> tuple[str, str]:
    """(field, message) of one error of `ValidationError.errors()`; with MODEL, a hint at the nearest name."""
    msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
    msg = msg.removeprefix("Value error, ")
    if model is not None:
        msg += _hint(err, model)
    return field_path(err["loc"]), msg


def _hint(err: ErrorDetails, model: type[BaseModel]) -> str:
    loc = tuple(p for p in err["loc"] if not str(p).startswith("function-"))
    if err["type"] == "extra_forbidden" and loc:
        owner = _annotation_at(model, loc[:-1])
        if isinstance(owner, type) and issubclass(owner, BaseModel):
            names = list(owner.model_fields)
            near = difflib.get_close_matches(str(loc[-1]), names, n=1)
            return f"; did you mean `{near[0]}`?" if near else f" (allowed: {', '.join(names)})"
    if err["type"] == "literal_error" and isinstance(err.get("input"), str):
        ann = _annotation_at(model, loc)
        allowed = err.get("ctx", {}).get("allowed")
        if allowed is None and get_origin(ann) is Literal:
            allowed = get_args(ann)
        if allowed is not None:  # pydantic's message already lists the allowed values
            near = difflib.get_close_matches(err["input"], [str(v) for v in allowed], n=1)
            return f"; did you mean `{near[0]}`?" if near else ""
    return ""


def _unwrap(ann: Any) -> Any:
    """`X | None` and `Annotated[X, ...]` are X for walking; a union of several models is not walked."""
    while True:
        origin = get_origin(ann)
        if origin is Annotated:
            ann = get_args(ann)[0]
        elif origin in (Union, types.UnionType):
            others = [a for a in get_args(ann) if a is not type(None)]
            if len(others) != 1:
                return None
            ann = others[0]
        else:
            return ann


def _annotation_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> Any:
    """The type pydantic validated at LOC, walking model fields, dict keys and values, and list items."""
    ann: Any = model
    parts = list(loc)
    while parts:
        ann, part = _unwrap(ann), parts.pop(0)
        origin = get_origin(ann)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            field = ann.model_fields.get(str(part))
            if field is None:
                return None
            ann = field.annotation
        elif origin is dict:
            key, value = get_args(ann)
            # pydantic places `[key]` after a dict key whose key, not value, failed
            if parts[:1] == ["[key]"]:
                parts.pop(0)
                ann = key
            else:
                ann = value
        elif origin in (list, tuple, set, frozenset):
            ann = get_args(ann)[0]
        else:
            return None
    return _unwrap(ann)
