"""Expand and serialise PodCliqueSets in worker processes (``render --jobs N``, issue 10).

Why processes: expansion and YAML emission are pure Python, so threads would share one
interpreter lock. Each PodCliqueSet is independent once the plan is validated, so workers
get the validated plan once (without the source documents they do not need) and then one
:class:`~grove_gitops.render.PlannedPCS` at a time, and send back the shard's bytes. The
parent consumes the results in plan order and merges them exactly as the serial path does,
so the output is byte-identical to ``--jobs 1`` whatever the scheduling.

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

from grove_gitops.cache import CachedShard
from grove_gitops.errors import InputProblem, InvalidInputError, OutputError
from grove_gitops.load.source import SourceSet
from grove_gitops.procs import FORK_SAFE_THREAD_PREFIX, default_jobs, start_method
from grove_gitops.render import PlannedPCS, RenderPlan

#: Pods each worker must get to pay for itself (issue 35.4). A worker costs a fork, its share
#: of the pool's start (about 50 ms on the 2-core bench machine) and about 20 % more CPU for
#: the same shards than the parent would spend (first touches of a copy-on-write heap, results
#: sent back as bytes); at about 0.25 ms of expansion and serialisation per pod, 1,000 pods are
#: about 0.25 s of work, so a pool of two starts at 2,000 pods, as measured in issue 10, and each
#: further worker needs another 1,000 (BENCHMARKS.md, "Mid-size render").
MIN_PODS = 1000

__all__ = ["FORK_SAFE_THREAD_PREFIX", "MIN_PODS", "default_jobs", "render_shards", "start_method", "worker_count"]


@dataclass(frozen=True)
class _Failure:
    """A user-facing error raised in a worker, sent back as data (exceptions whose
    ``__init__`` takes structured arguments do not survive pickling)."""

    problems: list[InputProblem] | None
    message: str


_PLAN: RenderPlan | None = None
_RENDER: Callable[[RenderPlan, PlannedPCS], CachedShard] | None = None


def _init(plan: RenderPlan, render: Callable[[RenderPlan, PlannedPCS], CachedShard]) -> None:
    global _PLAN, _RENDER
    _PLAN, _RENDER = plan, render


def _work(item: PlannedPCS) -> CachedShard | _Failure:
    assert _PLAN is not None and _RENDER is not None, "worker used before its initialiser ran"
    try:
        return _RENDER(_PLAN, item)
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
    return dataclasses.replace(plan, items=[], extra=[], warnings=[], inputs=inputs)


def render_shards(
    plan: RenderPlan,
    items: list[PlannedPCS],
    workers: int,
    render: Callable[[RenderPlan, PlannedPCS], CachedShard],
    method: str | None = None,
) -> Generator[CachedShard, None, None]:
    """``render(plan, item)`` for every item, in ``workers`` processes, yielded in item order.

    A generator: the pool lives while the caller consumes it and is shut down when it is
    exhausted or closed (also on an error in the caller).
    """
    ctx: BaseContext = multiprocessing.get_context(method or start_method())
    chunk = max(1, min(8, len(items) // (workers * 8)))
    fork = ctx.get_start_method() == "fork"
    if fork:
        # Forked workers share the parent's heap copy-on-write; their garbage collector
        # would touch (and so copy) every inherited object. Frozen objects are not scanned.
        gc.freeze()
    try:
        pool = ctx.Pool(workers, initializer=_init, initargs=(_slim(plan), render))
    except OSError:
        # No processes here (a sandbox without /dev/shm or fork): the same work in this one.
        yield from (render(plan, item) for item in items)
        return
    finally:
        if fork:
            gc.unfreeze()
    with pool:
        for result in pool.imap(_work, items, chunksize=chunk):
            if isinstance(result, _Failure):
                if result.problems is not None:
                    raise InvalidInputError(result.problems)
                raise OutputError(result.message)
            yield result
