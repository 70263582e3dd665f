"""Fields of an OperatorConfiguration that Grove does not know: errors, with a did-you-mean.

Grove's operator decodes its configuration non-strictly and drops a field it does not know,
so a misspelt key changes nothing and says nothing: ``scheduler.defaultProfile: kai-scheduler``
(for ``defaultProfileName``) kept ``default-scheduler`` as the default profile, and an 80-GPU
gang rendered without any gang objects. The models of ``api/operatorconfig.py`` declare every
field of Grove's type and keep other keys aside; each such key is reported here at its path
(``scheduler.defaultProfile``), which the error output turns into a line, with the field it most
likely misspells, at the same level or, for a key that belongs elsewhere, at its full path.
"""

from __future__ import annotations

import difflib
import functools
import types
import typing
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel

from grove_gitops.api.operatorconfig import GroveConfigModel, OperatorConfiguration
from grove_gitops.backendapi import SchedulerBackend
from grove_gitops.fields.fielderrors import FieldError
from grove_gitops.fields.suggest import MAX_SUGGESTIONS

UNKNOWN = "field not declared in schema"
#: Why it is an error although Grove itself accepts the file.
_WHY = "Grove's operator ignores a field it does not know, so this one would have no effect"
#: A key longer than this is not a typo of a field name; difflib is quadratic in its length.
_MAX_WORD = 100


def _models_of(annotation: Any) -> list[type[GroveConfigModel]]:
    """The OperatorConfiguration models an annotation holds (through ``X | None``, ``list[X]``)."""
    if isinstance(annotation, type) and issubclass(annotation, GroveConfigModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, list):
        return [m for arg in typing.get_args(annotation) for m in _models_of(arg)]
    return []


@functools.cache
def _field_paths() -> dict[str, tuple[str, ...]]:
    """Every declared field name → the paths it is declared at (``profiles`` →
    ``scheduler.profiles``), from the models themselves: one source for the known keys."""
    found: dict[str, list[str]] = {}

    def walk(model: type[GroveConfigModel], base: str) -> None:
        for name, info in model.model_fields.items():
            path = f"{base}.{name}" if base else name
            found.setdefault(name, []).append(path)
            for inner in _models_of(info.annotation):
                walk(inner, path)

    walk(OperatorConfiguration, "")
    return {name: tuple(paths) for name, paths in found.items()}


def _closest(key: str, known: Collection[str]) -> str:
    """``; did you mean defaultProfileName?`` for the closest of ``known``, or nothing."""
    if len(key) > _MAX_WORD:
        return ""
    by_lower = {name.lower(): name for name in known}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean {by_lower[close[0]]}?" if close else ""


def _suggestion(key: str, model: type[GroveConfigModel], path: str) -> str:
    """The closest field at this level, or a field of that name elsewhere, or nothing."""
    close = _closest(key, list(model.model_fields))
    if close or len(key) > _MAX_WORD:
        return close
    elsewhere = [p for p in _field_paths().get(key, ()) if p != path]
    if elsewhere:
        return f"; did you mean {elsewhere[0]}?"
    return ""


def unknown_field_errors(cfg: OperatorConfiguration) -> list[FieldError]:
    """Each key of ``cfg`` that Grove's OperatorConfiguration does not declare, at every level.

    The walk follows the parsed models, so it is bounded by what the loader accepted (its depth
    and size limits); a profile's ``config`` is the backend's and is not walked.
    """
    errors: list[FieldError] = []

    def visit(node: BaseModel, base: str) -> None:
        model = type(node)
        if not issubclass(model, GroveConfigModel):
            return
        for key in node.model_extra or {}:
            if key in model.accepted_extra:
                continue
            path = f"{base}.{key}" if base else key
            # difflib per key: only for as many keys as a document lists (problems.py's cap)
            hint = _suggestion(key, model, path) if len(errors) < MAX_SUGGESTIONS else ""
            errors.append(FieldError(path, f"{UNKNOWN}{hint} ({_WHY})"))
        for name in model.model_fields:
            value = getattr(node, name)
            path = f"{base}.{name}" if base else name
            if isinstance(value, BaseModel):
                visit(value, path)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, BaseModel):
                        visit(item, f"{path}[{i}]")

    visit(cfg, "")
    return errors


def profile_config_errors(
    cfg: OperatorConfiguration, backends: Mapping[str, type[SchedulerBackend]]
) -> list[FieldError]:
    """Keys of a profile's ``config`` its backend does not declare (``config_keys``).

    Grove's backends decode their config non-strictly too: ``gangSchedulng: true`` for
    default-scheduler would leave gang scheduling off and render no gang objects. A backend
    that checks its own config (``config_keys`` None) is left to do so.
    """
    errors: list[FieldError] = []
    for i, profile in enumerate(cfg.scheduler.profiles):
        backend = backends.get(profile.name)
        known = backend.config_keys if backend is not None else None
        if known is None or not profile.config:
            continue
        for key in profile.config:
            if key not in known:
                if len(errors) >= MAX_SUGGESTIONS:
                    hint = ""
                else:
                    hint = _closest(str(key), known) if known else f"; {profile.name} takes no config keys"
                errors.append(FieldError(f"scheduler.profiles[{i}].config.{key}", f"{UNKNOWN}{hint} ({_WHY})"))
    return errors
