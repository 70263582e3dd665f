"""Kubernetes ``field.Error`` rendering, so messages read exactly like Grove's webhook.

``k8s.io/apimachinery/pkg/util/validation/field/errors.go`` prints
``<path>: <Type>[: <value>][: <detail>]``; the value appears only for Invalid, Duplicate,
NotFound and NotSupported, strings Go-quoted, numbers and booleans bare, anything else as
JSON.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from grove_gitops.fields.suggest import MAX_SUGGESTIONS, closest

#: The bounds of Go's ``int32``, the type of Grove's integer fields (``api.base.Int32``).
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

_NO_VALUE = object()


def go_value(value: Any) -> str:
    """Render a value the way ``field.Error`` does (``%q`` for strings, JSON otherwise)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class FieldError:
    path: str
    type: str
    detail: str = ""
    value: Any = _NO_VALUE
    #: Where the field is in the file when that is not ``path``: Grove names some fields by
    #: their Go path (``clientConnection.burst``) while the YAML key differs
    #: (``runtimeClientConnection``); the message keeps Grove's path, the position this one.
    located_at: str = ""

    def message(self) -> str:
        """Everything after the path: ``Invalid value: 0: must be greater than 0``."""
        parts = [self.type]
        if self.value is not _NO_VALUE:
            parts.append(go_value(self.value))
        if self.detail:
            parts.append(self.detail)
        return ": ".join(parts)

    def __str__(self) -> str:
        return f"{self.path}: {self.message()}"


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, "Invalid value", detail, value)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, "Required value", detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, "Duplicate value", "", value)


def not_found(path: str, value: Any) -> FieldError:
    return FieldError(path, "Not found", "", value)


def not_supported(path: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported) if supported else ""
    return FieldError(path, "Unsupported value", detail, value)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, "Forbidden", detail)


def join_path(parts: Sequence[int | str]) -> str:
    """``("spec", "cliques", 1, "name")`` → ``spec.cliques[1].name``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


_TYPE_NAMES = {
    "int_type": "integer",
    "int_from_float": "integer",
    "string_type": "string",
    "bool_type": "boolean",
    "dict_type": "object",
    "model_type": "object",
    "list_type": "array",
    "float_type": "number",
}


def quote_hint(value: Any) -> str:
    """What to write instead of a number or boolean where text is wanted (``version: 1.10``
    under labels): YAML read the unquoted scalar as something else, and reading it back as
    text cannot be trusted (``1.10`` is the number 1.1, ``yes`` the boolean true)."""
    if isinstance(value, bool):
        return (
            f'; quote it ("{go_value(value)}"): unquoted, YAML reads {go_value(value)} as a boolean '
            "(so are yes, no, on and off)"
        )
    if isinstance(value, int | float):
        return (
            "; quote it (the text you meant, in quotes): unquoted, YAML reads it as the number "
            f"{go_value(value)}, which drops how it was written (1.10 reads as 1.1)"
        )
    return ""


def type_detail(expected: str, value: Any) -> str:
    """``must be of type string``, with :func:`quote_hint` when a string was expected."""
    return f"must be of type {expected}" + (quote_hint(value) if expected == "string" else "")


def from_pydantic(exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None) -> list[FieldError]:
    """Translate pydantic's errors into Kubernetes-style field errors.

    Pydantic appends union-member and tag names to ``loc`` (``function-after``, ``str``);
    only the JSON path the user wrote is kept. With the ``model`` that was validated, an
    unknown field gets the declared field it most likely misspells (``replcias`` → ``replicas``),
    and a required field that the misspelling stands for is not reported missing as well.
    """
    errors = exc.errors(include_url=False)
    guesses = misspellings(errors, model) if model is not None else {}
    explained = {(*loc[:-1], guess) for loc, guess in guesses.items()}
    out: list[FieldError] = []
    placed: list[str] = []  # unknown fields looked for elsewhere in the model: bounded like guesses
    for err in errors:
        loc = user_loc(err["loc"])
        path = join_path([*([prefix] if prefix else []), *loc])
        kind = err["type"]
        value = err.get("input")
        if kind == "missing":
            if tuple(loc) not in explained:
                out.append(required(path))
        elif kind == "extra_forbidden":
            guess = guesses.get(tuple(loc))
            hint = f"; did you mean {guess}?" if guess else ""
            if not guess and model is not None and len(placed) < MAX_SUGGESTIONS:
                hint = misplaced(model, loc, prefix)
                placed.append(path)
            out.append(FieldError(path, "field not declared in schema" + hint))
        elif kind == "literal_error":
            expected = err.get("ctx", {}).get("expected", "")
            supported = [s.strip().strip("'") for s in str(expected).replace(" or ", ", ").split(",")]
            out.append(not_supported(path, value, [s for s in supported if s]))
        elif kind in _TYPE_NAMES:
            out.append(invalid(path, value, type_detail(_TYPE_NAMES[kind], value)))
        elif kind in ("less_than_equal", "greater_than_equal") and _is_int32_bound(err.get("ctx", {})):
            out.append(invalid(path, value, _INT32_MESSAGE))
        else:
            out.append(invalid(path, value, err["msg"]))
    return out


def misplaced(model: type[BaseModel], loc: Sequence[int | str], prefix: str = "") -> str:
    """``"; it belongs under spec: spec.template.cliques[4].spec.autoScalingConfig"`` for an
    unknown field that a mapping one level down (or the mapping one level up) declares: a
    field written at the wrong indentation, which a did-you-mean cannot name."""
    if not loc or not isinstance(loc[-1], str):
        return ""
    name, where = loc[-1], list(loc[:-1])

    def full(parts: Sequence[int | str]) -> str:
        return join_path([*([prefix] if prefix else []), *parts])

    for child in declared_fields(model, where):
        for down in ([*where, child], [*where, child, 0]):
            if name in declared_fields(model, down):
                return f"; it belongs under {child}: {full([*down, name])}"
    up = where[:-2] if where and isinstance(where[-1], int) else where[:-1]  # an item's parent: the list's holder
    if where and name in declared_fields(model, up):
        return f"; it belongs one level up: {full([*up, name])}"
    return ""


def user_loc(loc: Sequence[int | str]) -> list[int | str]:
    """Pydantic's ``loc`` without its union-member and tag names: the path the user wrote."""
    return [p for p in loc if isinstance(p, int) or not is_internal(p)]


def misspellings(errors: Sequence[Any], model: type[BaseModel]) -> dict[tuple[int | str, ...], str]:
    """For each unknown field of ``errors`` (pydantic's, of ``model``) that closely matches a
    field declared in its mapping: that field's name."""
    extra: dict[tuple[int | str, ...], str] = {}
    tried = 0  # each try compares with every declared name: bounded whether or not it matches
    for err in errors:
        if err["type"] != "extra_forbidden":
            continue
        loc = user_loc(err["loc"])
        if not loc or not isinstance(loc[-1], str):
            continue
        tried += 1
        if tried > MAX_SUGGESTIONS:
            break
        guess = closest(loc[-1], declared_fields(model, loc[:-1]))
        if guess is not None:
            extra[tuple(loc)] = guess
    return extra


_INT32_MESSAGE = f"must be a 32-bit integer ({INT32_MIN} to {INT32_MAX}), the type Grove declares"


def _is_int32_bound(ctx: dict[str, Any]) -> bool:
    """A bound of :data:`~grove_gitops.api.base.Int32` (pydantic's own wording names no type)."""
    return ctx.get("le") == INT32_MAX or ctx.get("ge") == INT32_MIN


def is_internal(part: str) -> bool:
    return part in {"str", "int", "bool", "float", "list", "dict"} or part.startswith(
        ("function-", "tagged-union", "literal[")
    )


def declared_fields(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The fields declared where ``loc`` (a path into a document of ``model``) leads, or none
    when it leads to no model (a free-form mapping, a path the model does not have)."""
    target: Any = model
    for part in loc:
        target = _inner(target, part)
        if target is None:
            return []
    target = _model_of(target)
    return list(target.model_fields) if target is not None else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds, through ``X | None`` and ``Annotated[X, ...]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def _inner(annotation: Any, part: int | str) -> Any:
    """One step down a type: a model's field, a list's item, a mapping's value."""
    model = _model_of(annotation)
    if model is not None:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        return field.annotation if field is not None else None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        for arg in typing.get_args(annotation):
            found = _inner(arg, part)
            if found is not None:
                return found
        return None
    args = typing.get_args(annotation)
    if origin is list and isinstance(part, int) and args:
        return args[0]
    if origin is dict and isinstance(part, str) and len(args) == 2:
        return args[1]
    return None
