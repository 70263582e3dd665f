"""Why a slot's pod is replaced: the pod fields that differ between its old and new pod.

A pod's name is its hostname plus a hash of its spec, and ``grove.io/pod-template-hash``
is Grove's template hash: both always differ for a replaced pod, so they explain nothing
and are left out, as is the ``gitops.grove.io/rendered-by`` proof that binds the name. When nothing else differs, the template hash changed over a field the
rendered pod does not carry (``priorityClassName`` is such a field on some backends), and
that label is the one answer there is.
"""

from __future__ import annotations

from collections.abc import Iterable

from grove_gitops.diff.paths import changed_paths, join
from grove_gitops.expand.ownership import RENDERED_BY
from grove_gitops.plan.pods import RenderedPod
from grove_gitops.readmodel.snapshot import TEMPLATE_HASH

NAME_PATH = "metadata.name"
HASH_PATH = join("metadata.labels", TEMPLATE_HASH)
PROOF_PATH = join("metadata.annotations", RENDERED_BY)


def pod_fields(old: RenderedPod, new: RenderedPod) -> list[str]:
    """Changed paths of one slot (``spec.containers[prefill].image``), hash and name aside."""
    paths = [p for p in changed_paths(old.obj.obj, new.obj.obj) if p not in (NAME_PATH, HASH_PATH, PROOF_PATH)]
    if paths:
        return paths
    return [HASH_PATH] if HASH_PATH in changed_paths(old.obj.obj, new.obj.obj) else []


def restart_fields(pairs: Iterable[tuple[RenderedPod, RenderedPod]]) -> dict[str, tuple[str, ...]]:
    """``{PodClique: sorted distinct paths}`` over every (old, new) pod of changed slots."""
    out: dict[str, set[str]] = {}
    for old, new in pairs:
        out.setdefault(new.slot.podclique, set()).update(pod_fields(old, new))
    return {clique: tuple(sorted(paths)) for clique, paths in sorted(out.items())}
