"""The render inputs a ``gitops.grove.io`` PodCliqueSet carries, condensed for review.

An autoscaled workload's ``gitops.grove.io`` PodCliqueSet holds its whole render input in
``spec.source`` (its PodCliqueSet document, the render and operator configurations, bindings,
claim templates: docs/autoscaling.md), so the agent can expand live counts with the render's
own code. Any edit of the workload changes it, and its unified diff would repeat the source
edit, and the configuration around it, in every PR comment. The reviewer needs to know *that*
the agent's inputs changed and *which* document and fields, not to read them twice: the diff
shows the block as one line (its document count and digest) and the shard summary names the
changed documents and fields (:func:`input_changes`). ``--output text`` condenses the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grove_gitops.diff.model import ObjectKey
from grove_gitops.diff.paths import changed_paths
from grove_gitops.expand.scaling import API_VERSION, PCS_KIND

#: The key whose block is condensed, as the emitter writes it (two-space indent under ``spec``).
SOURCE_LINE = "  source:"
SOURCE_PATH = "spec.source"
#: How the condensed block reads in the diff.
CONDENSED_NOTE = "render inputs of the agent, condensed by grove-gitops diff"


def is_workload_object(key: ObjectKey) -> bool:
    """The ``gitops.grove.io`` PodCliqueSet: one per workload, rendered into Git."""
    return key.api_version == API_VERSION and key.kind == PCS_KIND


def source_of(obj: Mapping[str, Any]) -> list[Any] | None:
    spec = obj.get("spec")
    source = spec.get("source") if isinstance(spec, dict) else None
    return source if isinstance(source, list) else None


def digest(source: list[Any]) -> str:
    """A short, order-sensitive digest of the inputs (what the agent renders from)."""
    try:
        text = json.dumps(source, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):  # a hand-made --rendered tree with odd keys
        text = repr(source)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]


def condensed_line(source: list[Any]) -> str:
    n = len(source)
    return f"{SOURCE_LINE} '<{n} document{'s' if n != 1 else ''}, sha256:{digest(source)}: {CONDENSED_NOTE}>'"


def condense_text(key: ObjectKey, text: str, obj: Mapping[str, Any]) -> str:
    """``text`` with its ``spec.source`` block replaced by :func:`condensed_line`, for the
    ``gitops.grove.io`` PodCliqueSet; any other object, or a file laid out otherwise than the
    renderer writes it (a hand-made ``--rendered`` tree), is returned unchanged."""
    source = source_of(obj) if is_workload_object(key) else None
    if source is None:
        return text
    lines = text.splitlines()
    in_spec = False
    for i, line in enumerate(lines):
        if not line.startswith(" "):
            in_spec = line == "spec:"
            continue
        if in_spec and line == SOURCE_LINE:
            end = i + 1
            while end < len(lines) and (lines[end].startswith("   ") or lines[end].startswith("  - ")):
                end += 1
            kept = [*lines[:i], condensed_line(source), *lines[end:]]
            return "\n".join(kept) + ("\n" if text.endswith("\n") else "")
    return text


def collapse_paths(paths: list[str]) -> list[str]:
    """Every changed path inside ``spec.source`` as the one path ``spec.source`` (in place of
    the first), so a header reads "spec.source", not a list of the source's own fields."""
    out: list[str] = []
    for path in paths:
        if path == SOURCE_PATH or path.startswith(SOURCE_PATH + "["):
            if SOURCE_PATH not in out:
                out.append(SOURCE_PATH)
        else:
            out.append(path)
    return out


@dataclass(frozen=True)
class InputChange:
    """One render input (a source document) that differs: ``how`` is added, removed or
    modified; ``paths`` are its changed fields (modified only)."""

    document: str
    how: str
    paths: tuple[str, ...] = ()


def _doc_label(doc: Any, index: int) -> str:
    if not isinstance(doc, dict):
        return f"document {index}"
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    kind = doc.get("kind")
    label = str(kind) if isinstance(kind, str) and kind else f"document {index}"
    return f"{label} {name}" if isinstance(name, str) and name else label


def _by_label(source: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, doc in enumerate(source):
        label = _doc_label(doc, i)
        out[label if label not in out else f"{label} ({i})"] = doc
    return out


def input_changes(base: Mapping[str, Any] | None, head: Mapping[str, Any] | None) -> list[InputChange] | None:
    """How the render inputs of one workload differ, document by document; None when neither
    side carries any (a workload without scale targets has none)."""
    old = source_of(base) if base is not None else None
    new = source_of(head) if head is not None else None
    if old is None and new is None:
        return None
    before, after = _by_label(old or []), _by_label(new or [])
    out: list[InputChange] = []
    for label in list(before) + [k for k in after if k not in before]:
        if label not in after:
            out.append(InputChange(label, "removed"))
        elif label not in before:
            out.append(InputChange(label, "added"))
        elif before[label] != after[label]:
            out.append(InputChange(label, "modified", tuple(changed_paths(before[label], after[label]))))
    return out
