"""Shared model configuration and Kubernetes object metadata."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from grove_gitops.fields.fielderrors import INT32_MAX, INT32_MIN

#: An ``int32`` field of a Grove type: Grove cannot even decode a larger number, so one is
#: refused while parsing, before any arithmetic or loop sees it.
Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]


class StrictModel(BaseModel):
    """Unknown fields are errors and no type is coerced.

    ``kubectl apply`` validates strictly by default (``--validate=strict``), so a typo such
    as ``replica:`` must fail here too instead of being silently pruned.
    """

    model_config = ConfigDict(extra="forbid", strict=True, validate_assignment=False)


class ObjectMeta(BaseModel):
    """The parts of ``metadata`` the renderer reads; other metadata fields are tolerated."""

    model_config = ConfigDict(extra="allow", strict=True)

    name: str = ""
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


def labels_of(meta: ObjectMeta) -> dict[str, str]:
    return dict(meta.labels or {})


def annotations_of(meta: ObjectMeta) -> dict[str, str]:
    return dict(meta.annotations or {})


JSONDict = dict[str, Any]
