"""Expand and serialise PodCliqueSets in worker processes (``render --jobs N``, issue 10).

Why processes: expansion and YAML emission are pure Python, so threads would share one
interpreter lock. Each PodCliqueSet is independent once the plan is validated, so workers
get the validated plan once (without the source documents they do not need) and then one
:class:`~grove_gitops.render.PlannedPCS` at a time, and send back the shard's bytes. The
parent consumes the results in plan order and merges them exactly as the serial path does,
so the output is byte-identical to ``--jobs 1`` whatever the scheduling. Once the parent
publishes its writer's staging tree (``render`` into OUT, :mod:`grove_gitops.output.staging`),
a worker writes each PodCliqueSet's own directory there itself and sends back only the rest.

Fork- and spawn-safe: workers hold no state but the plan given to their initialiser, and the
worker functions live at module level so ``spawn`` can import them. ``fork`` (cheap, shares
the parent's imports) is used on Linux when the process runs no other thread
(forking a threaded process can copy a lock held by another thread); ``spawn`` otherwise.
"""

from __future__ import annotations

import dataclasses
import gc
import multiprocessing
from collections.abc import Callable, Generator
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from multiprocessing.pool import AsyncResult, Pool
from typing import Any

from grove_gitops.cache import CachedShard
from grove_gitops.errors import InputProblem, InvalidInputError, OutputError
from grove_gitops.load.source import SourceSet
from grove_gitops.output.staging import MAX_PUBLISHED_BYTES, Published, spill_shard
from grove_gitops.procs import FORK_SAFE_THREAD_PREFIX, default_jobs, start_method
from grove_gitops.render import PlannedPCS, RenderPlan

#: Pods each worker must get to pay for itself (issue 35.4). A worker costs a fork, its share
#: of the pool's start (about 50 ms on the 2-core bench machine) and about 20 % more CPU for
#: the same shards than the parent would spend (first touches of a copy-on-write heap, results
#: sent back as bytes); at about 0.25 ms of expansion and serialisation per pod, 1,000 pods are
#: about 0.25 s of work, so a pool of two starts at 2,000 pods, as measured in issue 10, and each
#: further worker needs another 1,000 (BENCHMARKS.md, "Mid-size render").
MIN_PODS = 1000

__all__ = [
    "FORK_SAFE_THREAD_PREFIX",
    "MIN_PODS",
    "EarlyPool",
    "default_jobs",
    "render_shards",
    "start_method",
    "worker_count",
]


@dataclass(frozen=True)
class _Failure:
    """A user-facing error raised in a worker, sent back as data (exceptions whose
    ``__init__`` takes structured arguments do not survive pickling)."""

    problems: list[InputProblem] | None
    message: str


_PLAN: RenderPlan | None = None
_RENDER: Callable[[RenderPlan, PlannedPCS], CachedShard] | None = None
#: Set by the parent when it no longer wants the queued work (:meth:`EarlyPool.close`).
_CANCEL: Any = None
#: Shared bytes, empty until the parent publishes its output's staging tree
#: (:class:`~grove_gitops.output.staging.Published`); from then on a worker writes the files of
#: each PodCliqueSet it renders there itself and sends back the rest (issue 35.4).
_STAGING: Any = None


def _init(
    plan: RenderPlan,
    render: Callable[[RenderPlan, PlannedPCS], CachedShard],
    cancel: Any = None,
    staging: Any = None,
) -> None:
    global _PLAN, _RENDER, _CANCEL, _STAGING
    _PLAN, _RENDER, _CANCEL, _STAGING = plan, render, cancel, staging


def _work(item: PlannedPCS) -> CachedShard | _Failure | None:
    assert _PLAN is not None and _RENDER is not None, "worker used before its initialiser ran"
    if _CANCEL is not None and _CANCEL.is_set():
        return None  # dropped: the parent stopped wanting it
    try:
        shard = _RENDER(_PLAN, item)
        published = Published.decode(_STAGING.value) if _STAGING is not None else None
        return spill_shard(shard, published) if published is not None else shard
    except InvalidInputError as exc:
        return _Failure(exc.problems, str(exc))
    except OutputError as exc:
        return _Failure(None, str(exc))


def worker_count(jobs: int, items: list[PlannedPCS], min_pods: int = MIN_PODS) -> int:
    """How many workers pay for themselves, from the work as well as ``jobs`` (the CPUs by
    default): at most one per PodCliqueSet and one per ``min_pods`` pods to expand; none
    (serial) when fewer than two would (``min_pods`` 0: ``jobs``, as long as there are items)."""
    workers = min(jobs, len(items))
    if min_pods > 0:
        workers = min(workers, sum(max(item.pods, 1) for item in items) // min_pods)
    return workers if workers >= 2 else 0


def _slim(plan: RenderPlan) -> RenderPlan:
    """The plan without what expansion does not read (the PodCliqueSet documents, the items,
    the files). It keeps what :meth:`RenderPlan.render_inputs` copies into an autoscaled
    workload's object: the render and operator configurations and the pass-through objects
    (an empty source there gave ``--jobs 2`` another ``spec.source`` than ``--jobs 1``)."""
    src = plan.inputs.source
    kept = SourceSet(render_config=src.render_config, operator_config=src.operator_config, passthrough=src.passthrough)
    inputs = dataclasses.replace(plan.inputs, source=kept, problems=[], warnings=[])
    return dataclasses.replace(plan, items=[], extra=[], warnings=[], inputs=inputs, early=None)


def _start_pool(
    ctx: BaseContext,
    workers: int,
    plan: RenderPlan,
    render: Callable[[RenderPlan, PlannedPCS], CachedShard],
    cancel: Any = None,
    staging: Any = None,
) -> Pool:
    """A pool of ``workers`` initialised with ``plan`` (slimmed), ``cancel`` (an event that
    makes them skip what is still queued) and ``staging`` (where to write shards, once
    published: :data:`_STAGING`); raises OSError where no processes can be made."""
    fork = ctx.get_start_method() == "fork"
    if fork:
        # Forked workers share the parent's heap copy-on-write; their garbage collector
        # would touch (and so copy) every inherited object. Frozen objects are not scanned.
        gc.freeze()
    try:
        return ctx.Pool(workers, initializer=_init, initargs=(_slim(plan), render, cancel, staging))
    finally:
        if fork:
            gc.unfreeze()


def _checked(result: CachedShard | _Failure | None) -> CachedShard:
    if result is None:  # only a cancelled pool skips work, and its results are not read
        raise OutputError("internal error: a worker skipped a PodCliqueSet")
    if isinstance(result, _Failure):
        if result.problems is not None:
            raise InvalidInputError(result.problems)
        raise OutputError(result.message)
    return result


class EarlyPool:
    """Workers that render the first PodCliqueSets while the parent still validates the rest
    (issue 35.4: the parent's validation, about a sixth of a mid-size render, ran before any
    worker started).

    Planning tells :meth:`offer` of each PodCliqueSet it accepts, in order
    (:func:`grove_gitops.render.plan_loaded`'s ``on_accepted``). The pool starts (forked with
    the plan's context, as :func:`render_shards` does) once the accepted ones hold ``min_pods``
    pods, a worker's worth of work that is certain, and their pods extrapolated to every
    document of the source (from the documents planned so far, cache hits counting as none)
    reach ``2 * min_pods``, the least :func:`worker_count` gives a pool;
    every accepted PodCliqueSet is queued then, later ones as they are accepted. How many
    workers: :func:`worker_count`'s rule on that extrapolation, at most ``jobs`` and one per
    document. A tree that never gets there never starts one (the output stage decides then, as
    before). The extrapolation can be wrong for a tree whose first documents are much larger
    than the rest; the pool then still has ``min_pods`` pods of work, which pays for it.

    Nothing is read from the workers before the plan is complete: when a later document fails,
    planning raises its problems and :meth:`close` drops what the workers made, so errors,
    their order and the absence of output are those of a render without it; a shard's own
    render error surfaces in plan order when :meth:`shards` reaches it, as in
    :func:`render_shards`.
    """

    def __init__(
        self,
        jobs: int,
        documents: int,
        render: Callable[[RenderPlan, PlannedPCS], CachedShard],
        min_pods: int | None = None,
        method: str | None = None,
    ) -> None:
        self._jobs = jobs
        self._documents = max(1, documents)
        self._render = render
        self._min_pods = max(0, MIN_PODS if min_pods is None else min_pods)
        self._method = method
        self._offered: list[PlannedPCS] = []
        self._seen = 0
        self._pods = 0
        self._pool: Pool | None = None
        self._cancel: Any = None
        self._staging: Any = None
        self._unavailable = False
        self._results: list[AsyncResult[CachedShard | _Failure | None]] = []

    @property
    def started(self) -> bool:
        return self._pool is not None

    def offer(self, context: RenderPlan, item: PlannedPCS) -> None:
        """Planning accepted ``item`` (``context``: the plan without its items). A cache hit
        (``pcs`` None) is not rendered; it counts as a document without pods to render."""
        self._seen += 1
        if item.pcs is None:
            return
        self._offered.append(item)
        self._pods += max(item.pods, 1)
        if self._pool is None:
            if self._unavailable or self._jobs < 2 or self._pods < self._min_pods:
                return
            workers = min(self._jobs, self._documents)
            if self._min_pods > 0:  # 0: the tests' way to force a pool, as in worker_count
                estimate = self._pods * self._documents // self._seen
                if estimate < 2 * self._min_pods:
                    return
                workers = min(workers, estimate // self._min_pods)
            if workers < 2:
                return
            ctx = multiprocessing.get_context(self._method or start_method())
            try:
                self._cancel = ctx.Event()
                self._staging = ctx.Array("c", MAX_PUBLISHED_BYTES + 1)
                self._pool = _start_pool(ctx, workers, context, self._render, self._cancel, self._staging)
            except OSError:  # no processes here: the output stage renders them itself
                self._unavailable = True
                return
            self._results = [self._pool.apply_async(_work, (queued,)) for queued in self._offered]
            return
        self._results.append(self._pool.apply_async(_work, (item,)))

    def shards(self, items: list[PlannedPCS]) -> Generator[CachedShard, None, None] | None:
        """The shards of ``items`` in order, or None when no pool started or ``items`` are not
        exactly the PodCliqueSets offered (the caller renders them itself then)."""
        if self._pool is None or len(items) != len(self._offered):
            return None
        if any(a is not b for a, b in zip(items, self._offered, strict=True)):
            return None
        return (_checked(result.get()) for result in self._results)

    def publish(self, staging: bytes) -> None:
        """From now on each worker writes the PodCliqueSets it renders into the staging tree
        ``staging`` describes (:meth:`Published.encode`, :data:`_STAGING`); shards begun
        before come back as bytes. Only while the pool runs."""
        if self._pool is not None:
            self._staging.value = staging

    def close(self) -> None:
        """Stop the workers, dropping whatever they still hold.

        Not ``Pool.terminate``: killing a worker while it writes a result leaves the result
        queue's lock taken, and the pool's own threads then wait for it forever (it happened
        when a later document failed the plan under load). The workers are told to skip what is
        still queued, finish the shard in hand (at most one each) and exit."""
        pool, self._pool = self._pool, None
        if pool is not None:
            self._cancel.set()
            pool.close()
            pool.join()


def render_shards(
    plan: RenderPlan,
    items: list[PlannedPCS],
    workers: int,
    render: Callable[[RenderPlan, PlannedPCS], CachedShard],
    method: str | None = None,
    published: Published | None = None,
) -> Generator[CachedShard, None, None]:
    """``render(plan, item)`` for every item, in ``workers`` processes, yielded in item order;
    with ``published``, each worker writes its shards into that staging tree itself
    (:meth:`EarlyPool.publish`). Without processes, the same work in this one, as bytes.

    A generator: the pool lives while the caller consumes it and is shut down when it is
    exhausted or closed (also on an error in the caller, or a shard's own error). Shut down as
    :meth:`EarlyPool.close` does, never with ``Pool.terminate`` (``with pool``): killing a
    worker while it writes a result leaves the result queue's lock taken and the pool's threads
    wait for it forever; the workers skip what is still queued and exit after the shard in hand.
    """
    ctx: BaseContext = multiprocessing.get_context(method or start_method())
    chunk = max(1, min(8, len(items) // (workers * 8)))
    try:
        cancel = ctx.Event()
        staging: Any = None
        if published is not None:
            staging = ctx.Array("c", MAX_PUBLISHED_BYTES + 1)
            staging.value = published.encode()
        pool = _start_pool(ctx, workers, plan, render, cancel, staging)
    except OSError:
        # No processes here (a sandbox without /dev/shm or fork): the same work in this one.
        yield from (render(plan, item) for item in items)
        return
    try:
        for result in pool.imap(_work, items, chunksize=chunk):
            yield _checked(result)
    finally:
        cancel.set()
        pool.close()
        pool.join()
