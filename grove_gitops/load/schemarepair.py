"""Check the rest of a document that failed its schema only on unknown fields.

Pydantic reports every schema error of a document at once, but Grove's own checks (a
topology domain the binding does not define, a ``startsAfter`` cycle) need the parsed model,
so a document with ``replcias: 3`` used to hide ``required: regoin`` until the typo was
fixed. When every schema error is an unknown field, the document is repaired on a copy and
checked again, and those checks' errors are reported beside the schema errors:

- an unknown key with a close declared name that the mapping does not hold already is read
  as that name (``replcias: 3`` as ``replicas: 3``: what the user meant, so what is checked is
  what they will get once it is fixed); errors at or below that name are left out (the line
  at fault is already reported);
- any other unknown key is dropped, and errors anywhere in the mapping that held it are left
  out (its absence could cause them).

A required field counts as supplied when a misspelling of it is renamed. Any other schema
error (a wrong type, a missing field) leaves nothing safe to check: its value would have to
be guessed, and the guess would produce errors of its own. Repairs touch
only what pydantic reported, so they are bounded by the document's size.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from grove_gitops.fields.fielderrors import FieldError, join_path, misspellings, user_loc

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Repaired(Generic[M]):
    """A model to run the remaining checks on, and where their errors are not to be trusted."""

    model: M
    #: Field paths: an error at one of them, or below it, is left out.
    hidden: tuple[str, ...]

    def keeps(self, error: FieldError) -> bool:
        """Whether a check's error on the repaired model stands for the document as written."""
        return not any(_at_or_below(error.path, prefix) for prefix in self.hidden)


def _at_or_below(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith((prefix + ".", prefix + "["))


def repair(model: type[M], data: Any, exc: ValidationError) -> Repaired[M] | None:
    """``data`` with its unknown fields renamed or dropped, validated as ``model``; None when
    some schema error is neither an unknown field nor a required one that a rename supplies,
    or the repaired copy still fails."""
    errors = exc.errors(include_url=False)
    guesses = misspellings(errors, model)
    supplied = {(*loc[:-1], guess) for loc, guess in guesses.items()}
    for err in errors:
        if err["type"] == "extra_forbidden":
            continue
        if err["type"] != "missing" or tuple(user_loc(err["loc"])) not in supplied:
            return None
    fixed = copy.deepcopy(data)
    hidden: list[str] = []
    for err in errors:
        loc = user_loc(err["loc"])
        if err["type"] != "extra_forbidden":
            continue
        if not loc or not isinstance(loc[-1], str):
            return None
        parent = _walk(fixed, loc[:-1])
        if not isinstance(parent, dict) or loc[-1] not in parent:
            return None
        value = parent.pop(loc[-1])
        guess = guesses.get(tuple(loc))
        if guess is not None and guess not in parent:
            parent[guess] = value
            hidden.append(join_path([*loc[:-1], guess]))
        else:
            hidden.append(join_path(loc[:-1]))
    try:
        return Repaired(model.model_validate(fixed), tuple(hidden))
    except ValidationError:
        return None


def _walk(data: Any, loc: list[int | str]) -> Any:
    for part in loc:
        in_list = isinstance(part, int) and isinstance(data, list) and 0 <= part < len(data)
        in_mapping = isinstance(part, str) and isinstance(data, dict) and part in data
        if not (in_list or in_mapping):
            return None
        data = data[part]
    return data
