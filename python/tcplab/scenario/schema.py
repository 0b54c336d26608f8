"""Walk the scenario models by TOML key: which keys a table allows, what a key holds.

Used to list the allowed keys in "unknown key" errors and to check `--set` paths before they
are applied.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from .model import Scenario

FieldKind = Literal["model", "list", "dict", "leaf"]


def field_by_key(model: type[BaseModel] | None, key: str) -> FieldInfo | None:
    """The field whose TOML key (alias, else attribute name) is `key`."""
    if model is None:
        return None
    for name, field in model.model_fields.items():
        if (field.alias or name) == key:
            return field
    return None


def keys_of(model: type[BaseModel] | None) -> list[str]:
    """TOML keys of a table, in declaration order."""
    if model is None:
        return []
    return [field.alias or name for name, field in model.model_fields.items()]


def field_kind(annotation: Any) -> tuple[FieldKind, type[BaseModel] | None]:
    """What a field holds: a sub-table (`model`), an array of tables (`list`), a free-form
    table (`dict`) or a value (`leaf`); optional (`X | None`) fields are unwrapped."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return field_kind(inner[0]) if len(inner) == 1 else ("leaf", None)
    if origin is list:
        (item,) = typing.get_args(annotation)
        kind, model = field_kind(item)
        return ("list", model) if kind == "model" else ("leaf", None)
    if origin is dict:
        return "dict", None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "model", annotation
    return "leaf", None


def model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model of the table at `loc` (list indices are skipped); None if not a model."""
    model: type[BaseModel] | None = Scenario
    for key in loc:
        if isinstance(key, int):
            continue
        field = field_by_key(model, key)
        if field is None:
            return None
        model = field_kind(field.annotation)[1]
    return model
