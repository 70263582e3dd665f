"""The entries of the render cache: what one rendered PodCliqueSet leaves behind.

Owns :class:`ShardMeta` and :class:`CachedShard`, the types both the in-memory cache
(:mod:`grove_gitops.cache`) and the store on disk (:mod:`grove_gitops.cachestore`) hold; kept
apart so that the store and the cache each import them and never each other both ways.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ShardMeta:
    """What planning and the summaries need of a rendered PodCliqueSet, without its files:
    a fresh ``diff`` learns from it that a PodCliqueSet is cached on both sides and never
    reads its files (:meth:`RenderCache.peek_shard`)."""

    key: tuple[str, str]  # (namespace, name)
    source_file: str
    kind_counts: dict[str, int]
    gangs: list[tuple[str, str, str]]  # (PodGang, scheduler, podgroups)
    warnings: list[str]
    pods: int = 0  # counted against maxPodsPerRender on a cache hit too
    update_strategy: str = "RollingRecreate"  # defaulted spec.updateStrategy.type (``plan``)
    #: The shard directory's kustomization.yaml (a fresh process would serialise ~1,000 of them).
    kustomization: bytes = b""

    @property
    def objects_per_shard(self) -> dict[str, int]:
        """Output shard -> how many objects (files) of this PodCliqueSet it holds."""
        out: dict[str, int] = {}
        for key, n in self.kind_counts.items():
            shard = key.partition("\0")[0]
            out[shard] = out.get(shard, 0) + n
        return out


@dataclass(frozen=True)
class CachedShard(ShardMeta):
    """One PodCliqueSet's rendered files and what the summaries need."""

    files: dict[str, bytes] = field(default_factory=dict)  # path relative to the output root -> bytes
    #: path -> the object each file serialises, for a shard just rendered with
    #: ``keep_objects`` (``diff``: parsing the bytes back would give the same, slower; the
    #: emitter's round-trip property tests hold it to that). Never stored on disk.
    objects: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    #: Paths of this shard a render's worker wrote straight into the output's staging tree
    #: (:mod:`grove_gitops.output.staging`); their bytes are not in ``files``, so such a
    #: shard is never cached (only a render without a cache store writes them).
    written: tuple[str, ...] = field(default=(), compare=False, repr=False)
