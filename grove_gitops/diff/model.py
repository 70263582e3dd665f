"""Two rendered trees as objects, and the object-level changes between them.

The diff works on *rendered* trees (``{relative path: bytes}``, the same shape
:func:`grove_gitops.output.layout.build_tree` returns and ``render`` writes), never on the
source: what a reviewer must see is what Argo CD / Flux will apply, and the renderer is the
only thing that knows how a source edit turns into objects (spec/gitops.md §4.1, "compare
desired states").

Objects are keyed by ``(shard, apiVersion, kind, namespace, name)``. File names are not the
identity: they carry the sync wave, which may legitimately move. Pods get one extra rule:
their names end in a hash of the whole pod, so any spec change removes one pod and adds
another. A removed and an added pod with the same namespace and ``spec.hostname`` (which is
``<podclique>-<index>``, stable across spec changes) are paired into one *replaced* change,
so the reviewer sees "pod 0 of clique X changed its image" instead of "-1 pod, +1 pod".
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grove_gitops.diff.errors import DiffError

#: Files of a rendered tree that are build instructions or summaries, not objects.
NON_OBJECT_FILES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})
YAML_SUFFIXES = (".yaml", ".yml")
#: The C loader is an order of magnitude faster on trees with thousands of pods.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, order=True)
class ObjectKey:
    """Identity of an object in a rendered tree."""

    shard: str
    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def group(self) -> str:
        return self.api_version.split("/")[0] if "/" in self.api_version else ""

    @property
    def kind_label(self) -> str:
        """``Kind.group`` as in spec/gitops.md §4.5 (``PodGroup.scheduling.run.ai``): the group
        tells a KAI PodGroup from a Volcano one; core kinds stay bare (``Pod``)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def object_label(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True)
class TreeObject:
    """One object of a rendered tree: where it was, its text (for the unified diff) and its
    parsed form (for the semantic summary)."""

    key: ObjectKey
    path: str
    text: str
    obj: dict[str, Any]


class ChangeType(enum.Enum):
    ADDED = "added"
    REMOVED = "removed"
    MODIFIED = "modified"
    REPLACED = "replaced"


@dataclass(frozen=True)
class Change:
    """One object-level change. ``base`` is absent for additions, ``head`` for removals; a
    replacement has both, with different keys."""

    type: ChangeType
    base: TreeObject | None
    head: TreeObject | None

    @property
    def current(self) -> TreeObject:
        """The head object when there is one, else the removed base object."""
        obj = self.head or self.base
        assert obj is not None
        return obj

    @property
    def key(self) -> ObjectKey:
        return self.current.key

    @property
    def shard(self) -> str:
        return self.current.key.shard


def _shard_of(path: str) -> str:
    """The directory of a tree path ('' at the root); string operations, not PurePosixPath:
    a large tree has tens of thousands of paths (issue 14)."""
    return path.rpartition("/")[0]


def is_object_file(path: str) -> bool:
    """A ``.yaml``/``.yml`` file other than a kustomization (PurePosixPath's suffix rule: a
    name that starts with its only dot has no suffix)."""
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    return 0 < dot < len(name) - 1 and name[dot:] in YAML_SUFFIXES and name not in NON_OBJECT_FILES


def _key(shard: str, obj: dict[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return ObjectKey(
        shard=shard,
        api_version=str(obj.get("apiVersion", "")),
        kind=str(obj.get("kind", "")),
        namespace=str(meta.get("namespace") or "") if isinstance(meta, dict) else "",
        name=str(meta.get("name") or "") if isinstance(meta, dict) else "",
    )


#: Parsed documents by (path, file bytes): the two sides of a diff share most files, and a
#: file equal on both sides is parsed once (issue 14).
ParseMemo = dict[tuple[str, bytes], tuple[str, list[Any]]]


def load_objects(files: Mapping[str, bytes], memo: ParseMemo | None = None) -> dict[ObjectKey, TreeObject]:
    """Parse every object file of a rendered tree.

    One object per file is the layout's contract; a multi-document file (a hand-made tree
    given with ``--rendered``) is accepted, each document then diffed in its own
    ``yaml.safe_dump`` form because a slice of the file would not be stable.
    """
    out: dict[ObjectKey, TreeObject] = {}
    for path in sorted(files):
        if not is_object_file(path):
            continue
        found = memo.get((path, files[path])) if memo is not None else None
        if found is not None:
            text, docs = found
        else:
            try:
                text = files[path].decode("utf-8")
                docs = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
            except (UnicodeDecodeError, yaml.YAMLError) as exc:
                raise DiffError(f"{path}: cannot parse the rendered file: {exc}") from exc
            if memo is not None:
                memo[(path, files[path])] = (text, docs)
        for doc in docs:
            if not isinstance(doc, dict) or not doc.get("kind") or not doc.get("apiVersion"):
                raise DiffError(f"{path}: not a Kubernetes object (no apiVersion/kind)")
            key = _key(_shard_of(path), doc)
            if key in out:
                raise DiffError(f"{path}: {key.kind_label} {key.object_label} is also defined in {out[key].path}")
            body = text if len(docs) == 1 else yaml.safe_dump(doc, sort_keys=False)
            out[key] = TreeObject(key, path, body, doc)
    return out


def read_tree(root: Path) -> dict[str, bytes]:
    """The files of a rendered tree on disk as ``{relative posix path: bytes}``.

    Hidden directories are skipped (a ``.git`` next to the manifests is not part of them).
    """
    if not root.is_dir():
        raise DiffError(f"{root}: not a directory")
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if is_object_file(rel):
                try:
                    files[rel] = full.read_bytes()
                except OSError as exc:
                    raise DiffError(f"{full}: cannot read: {exc}") from exc
    return files


def _pairing_key(obj: TreeObject) -> tuple[str, str, str] | None:
    """Pods pair with their replacement by namespace and ``spec.hostname``."""
    if obj.key.kind != "Pod" or obj.key.group:
        return None
    spec = obj.obj.get("spec")
    hostname = spec.get("hostname") if isinstance(spec, dict) else None
    if not isinstance(hostname, str) or not hostname:
        return None
    return (obj.key.shard, obj.key.namespace, hostname)


def compare(base: Mapping[ObjectKey, TreeObject], head: Mapping[ObjectKey, TreeObject]) -> list[Change]:
    """Every object-level change from ``base`` to ``head``, sorted by shard and key.

    Objects whose text is byte-identical are unchanged. Removed and added pods sharing a
    pairing key become :attr:`ChangeType.REPLACED`, paired in name order when (unusually)
    several pods share a hostname.
    """
    changes: list[Change] = []
    for key in sorted(base.keys() & head.keys()):
        if base[key].text != head[key].text:
            changes.append(Change(ChangeType.MODIFIED, base[key], head[key]))
    removed = [base[k] for k in sorted(base.keys() - head.keys())]
    added = [head[k] for k in sorted(head.keys() - base.keys())]
    waiting: dict[tuple[str, str, str], list[TreeObject]] = {}
    for obj in added:
        pk = _pairing_key(obj)
        if pk is not None:
            waiting.setdefault(pk, []).append(obj)
    paired: set[ObjectKey] = set()
    for obj in removed:
        pk = _pairing_key(obj)
        candidates = waiting.get(pk) if pk is not None else None
        if candidates:
            new = candidates.pop(0)
            paired.add(new.key)
            changes.append(Change(ChangeType.REPLACED, obj, new))
        else:
            changes.append(Change(ChangeType.REMOVED, obj, None))
    changes += [Change(ChangeType.ADDED, None, obj) for obj in added if obj.key not in paired]
    return sorted(changes, key=lambda c: (c.shard, c.key))


def shards_of(objects: Iterable[TreeObject]) -> set[str]:
    return {o.key.shard for o in objects}
