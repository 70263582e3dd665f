"""Where a slow rollout step's time goes: timestamps per phase (issue 35.1).

    python -m bench.rollout_bench --gangs 50 --pods 1000 --trace DIR

A rollout step is: the kubelet writes a replacement pod's Ready status, the server sends that
event down the agent's pod watch, the agent's watch thread takes it, a pass starts, decides,
and sends the DELETE of the next old pod, which the server accepts. ``--trace`` records each of
those moments, on the machine's one monotonic clock (``CLOCK_MONOTONIC`` is shared by every
process), in both processes:

- the benchmark's world (:class:`WorldTrace`, this process): every commit of the fake API
  server's store (resourceVersion, pod, time), every pod event written to the agent's watch
  stream, every pod DELETE the agent sent (received, answered), this process's collector
  pauses;
- the agent (``python -m bench.rollout_trace agent FILE -- <agent arguments>``, run by the
  benchmark in place of ``grove-gitops agent``): every watch event taken, relist, pass (start,
  end, time deciding, size, the resync slice in it), DELETE (sent, answered), lease renewal,
  and its collector pauses (``gc.callbacks``).

:func:`phases` splits every step over 100 ms into (a) Ready written -> event sent to the agent,
(a2) sent -> taken by the agent's watch thread, (b) taken -> the pass that acts on it starts,
(c) pass start -> DELETE sent (deciding), (d) DELETE sent -> the server committed it, and says
which collector pauses, relists, lease renewals and resync slices overlapped the step. The
benchmark adds the summary to its JSON line (``trace_*``) and writes every slow step to
``DIR/steps.json``. The recording is a list append per moment; nothing is printed.
"""

from __future__ import annotations

import atexit
import gc
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The User-Agent the traced agent sends, so the server can tell its watch streams apart.
AGENT_UA = "grove-gitops-bench-agent"
_RV = re.compile(rb'"resourceVersion":"(\d+)"')
_NAME = re.compile(rb'"name":"([^"]+)"')


class _Gc:
    """Collector pauses of this process, as (start, end, generation)."""

    def __init__(self, out: list[tuple[Any, ...]]) -> None:
        self.out = out
        self.began = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.began = time.monotonic()
        else:
            self.out.append(("gc", self.began, time.monotonic(), int(info.get("generation", 0))))


class CommitClock:
    """When the fake API server committed each pod write (resourceVersion -> monotonic time):
    the benchmark's figures "as the server sees them". One dict store per pod commit."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self._undo: Callable[[], None] | None = None

    def install(self) -> None:
        from tests.fakeserver import store

        at = self.at
        append = store.Store._append

        def clocked(self: Any, event: Any) -> None:
            append(self, event)
            if event.group_resource.resource == "pods":
                at[event.rv] = time.monotonic()

        store.Store._append = clocked  # type: ignore[method-assign]

        def undo() -> None:
            store.Store._append = append  # type: ignore[method-assign]

        self._undo = undo

    def uninstall(self) -> None:
        if self._undo is not None:
            self._undo()
            self._undo = None


class WorldTrace:
    """The fake API server's side (see the module's comment); :meth:`install` patches it."""

    def __init__(self) -> None:
        self.records: list[tuple[Any, ...]] = []
        self._undo: list[Callable[[], None]] = []
        self._gc = _Gc(self.records)

    def install(self) -> None:
        from tests.fakeserver import http_server, store

        records = self.records
        append = store.Store._append

        def traced_append(self: Any, event: Any) -> None:
            append(self, event)
            if event.group_resource.resource == "pods":
                records.append(("commit", time.monotonic(), event.rv, event.type,
                                str((event.obj.get("metadata") or {}).get("name", ""))))

        serve = http_server._Handler._serve

        def traced_serve(self: Any) -> None:
            agent = self.headers.get("User-Agent", "") == AGENT_UA
            began = time.monotonic()
            serve(self)
            if agent and self.command in ("DELETE", "PATCH") and "/pods/" in self.path:
                records.append(("request", began, time.monotonic(), self.command, self.path.rsplit("/", 1)[-1]))

        stream = http_server._Handler._stream

        def traced_stream(self: Any, watch: Any) -> None:
            if self.headers.get("User-Agent", "") != AGENT_UA or "/pods" not in self.path:
                return stream(self, watch)
            lines = watch.lines

            def traced_lines(client_gone: Callable[[], bool]) -> Any:
                for line in lines(client_gone):
                    yield line
                    rv = _RV.search(line)  # after the caller wrote and flushed it
                    if rv is not None:
                        records.append(("sent", time.monotonic(), int(rv.group(1))))

            watch.lines = traced_lines
            return stream(self, watch)

        store.Store._append = traced_append  # type: ignore[method-assign]
        http_server._Handler._serve = traced_serve  # type: ignore[method-assign]
        http_server._Handler._stream = traced_stream  # type: ignore[method-assign,assignment]
        gc.callbacks.append(self._gc)

        def undo() -> None:
            store.Store._append = append  # type: ignore[method-assign]
            http_server._Handler._serve = serve  # type: ignore[method-assign]
            http_server._Handler._stream = stream  # type: ignore[method-assign]
            gc.callbacks.remove(self._gc)

        self._undo.append(undo)

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()


# ------------------------------------------------------------------------------ the agent's side
def _agent(out: Path, argv: list[str]) -> int:
    """Run ``grove-gitops agent argv`` with its moments recorded, written to ``out`` at exit."""
    import kubernetes.client

    from grove_gitops.agent import cache, kube, leader, loop
    from grove_gitops.cli.main import main as cli_main

    records: list[tuple[Any, ...]] = []
    gc.callbacks.append(_Gc(records))

    def wrap(cls: Any, name: str, record: Callable[[float, float, Any, tuple[Any, ...]], tuple[Any, ...] | None]) -> None:
        inner = getattr(cls, name)

        def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
            began = time.monotonic()
            result = inner(self, *args, **kwargs)
            row = record(began, time.monotonic(), self, args)
            if row is not None:
                records.append(row)
            return result

        setattr(cls, name, traced)

    client_init = kubernetes.client.ApiClient.__init__

    def ua_init(self: Any, *args: Any, **kwargs: Any) -> None:
        client_init(self, *args, **kwargs)
        self.user_agent = AGENT_UA

    kubernetes.client.ApiClient.__init__ = ua_init  # type: ignore[method-assign]

    def on_event(began: float, ended: float, _: Any, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        kind, event_type, obj = args
        if kind != "pods":
            return None
        meta = obj.get("metadata") or {}
        return ("event", began, int(meta.get("resourceVersion") or 0), event_type, str(meta.get("name", "")))

    wrap(cache.WatchCache, "apply", on_event)
    wrap(cache.WatchCache, "replace", lambda b, e, _, a: ("relist", b, e, a[0], len(a[1])))

    def on_pass(began: float, ended: float, agent: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return ("pass", began, ended, agent._decide_s, len(set(args[0])), agent._trace_resync)

    this_pass = loop.Agent._this_pass

    def traced_this_pass(self: Any, dirty: set[Any]) -> set[Any]:
        before = len(self._resync)
        take: set[Any] = this_pass(self, dirty)
        self._trace_resync = before - len(self._resync)  # workloads of the resync in this pass
        return take

    loop.Agent._this_pass = traced_this_pass  # type: ignore[method-assign]
    loop.Agent._trace_resync = 0  # type: ignore[attr-defined]
    wrap(loop.Agent, "sync_workloads", on_pass)
    wrap(kube.Kube, "delete_pod", lambda b, e, _, a: ("delete", b, e, a[1]))
    wrap(leader.LeaderElector, "_attempt", lambda b, e, _, a: ("lease", b, e))

    def dump() -> None:
        out.write_text(json.dumps(records))

    atexit.register(dump)
    try:
        return int(cli_main(["agent", *argv], prog_name="grove-gitops", standalone_mode=False) or 0)
    finally:
        dump()


# ------------------------------------------------------------------------------ the analysis
SLOW = 0.1


def phases(world: list[list[Any]], agent: list[list[Any]], steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Split each step over :data:`SLOW` into its phases; ``steps`` are the benchmark's, each
    with the resourceVersions where it began (``from_rv``) and ended (``to_rv``, the old
    pod's DELETE) and the old pod's name (``old``)."""
    commit_at = {r[2]: r[1] for r in world if r[0] == "commit"}
    sent_at: dict[int, float] = {}
    for r in world:
        if r[0] == "sent":
            sent_at.setdefault(r[2], r[1])
    taken_at: dict[int, float] = {}
    for r in agent:
        if r[0] == "event":
            taken_at.setdefault(r[2], r[1])
    passes = sorted((r[1], r[2], r[3], r[4], r[5]) for r in agent if r[0] == "pass")
    deletes = {r[3]: (r[1], r[2]) for r in agent if r[0] == "delete"}
    served = {r[4]: (r[1], r[2]) for r in world if r[0] == "request" and r[3] == "DELETE"}
    agent_gc = [(r[1], r[2]) for r in agent if r[0] == "gc"]
    world_gc = [(r[1], r[2]) for r in world if r[0] == "gc"]
    leases = [(r[1], r[2]) for r in agent if r[0] == "lease"]
    relists = [(r[1], r[2]) for r in agent if r[0] == "relist"]

    def overlap(spans: list[tuple[float, float]], lo: float, hi: float) -> float:
        return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in spans)

    def pass_at(t: float) -> tuple[float, float, float, int, int] | None:
        for p in passes:  # the first pass starting after t (short list walks: the bench's size)
            if p[0] >= t:
                return p
        return None

    rows = []
    for step in steps:
        start = commit_at.get(step["from_rv"])
        end = commit_at.get(step["to_rv"])
        if start is None or end is None or end - start < SLOW:
            continue
        sent = sent_at.get(step["from_rv"])
        taken = taken_at.get(step["from_rv"])
        delete = deletes.get(step["old"])
        request = served.get(step["old"])
        first = pass_at(taken) if taken is not None else None
        # The pass that sent the DELETE: the last pass starting before it was sent.
        acting = max((p for p in passes if delete is not None and p[0] <= delete[0]), default=None)
        row: dict[str, Any] = {
            "pcs": step["pcs"], "old": step["old"], "server_s": round(end - start, 4),
            "bench_s": step["bench_s"],
            "a_sent": _d(start, sent), "a2_taken": _d(sent, taken),
            "b_pass_start": _d(taken, acting[0] if acting else None),
            "c_delete_sent": _d(acting[0] if acting else None, delete[0] if delete else None),
            "d_committed": _d(delete[0] if delete else None, end),
            "d_request_received": _d(delete[0] if delete else None, request[0] if request else None),
            "passes_between": sum(1 for p in passes if taken is not None and delete is not None
                                  and taken <= p[0] <= delete[0]),
            "first_pass_after_event": _d(taken, first[0] if first else None),
            "acting_pass_s": round(acting[1] - acting[0], 4) if acting else None,
            "acting_pass_decide_s": round(acting[2], 4) if acting else None,
            "acting_pass_workloads": acting[3] if acting else None,
            "acting_pass_resync": acting[4] if acting else None,
            "agent_gc_s": round(overlap(agent_gc, start, end), 4),
            "world_gc_s": round(overlap(world_gc, start, end), 4),
            "lease_s": round(overlap(leases, start, end), 4),
            "relist_s": round(overlap(relists, start, end), 4),
        }
        rows.append(row)
    return {"steps": rows, "summary": _summary(rows, agent_gc, world_gc)}


def _d(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(b - a, 4)


def _summary(rows: list[dict[str, Any]], agent_gc: list[tuple[float, float]],
             world_gc: list[tuple[float, float]]) -> dict[str, Any]:
    """Per phase: its total over the slow steps and how often it was the largest part."""
    keys = ("a_sent", "a2_taken", "b_pass_start", "c_delete_sent", "d_committed")
    total = {k: round(sum(r[k] or 0.0 for r in rows), 3) for k in keys}
    owner = {k: 0 for k in keys}
    for r in rows:
        owner[max(keys, key=lambda k: r[k] or 0.0)] += 1
    return {
        "slow_steps": len(rows),
        "phase_total_s": total,
        "phase_largest_in": owner,
        "with_agent_gc": sum(1 for r in rows if r["agent_gc_s"] > 0),
        "with_world_gc": sum(1 for r in rows if r["world_gc_s"] > 0),
        "with_lease": sum(1 for r in rows if r["lease_s"] > 0),
        "with_relist": sum(1 for r in rows if r["relist_s"] > 0),
        "agent_gc_max_ms": round(1000 * max((b - a for a, b in agent_gc), default=0.0), 1),
        "world_gc_max_ms": round(1000 * max((b - a for a, b in world_gc), default=0.0), 1),
    }


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "agent" or argv[2] != "--":
        print("usage: python -m bench.rollout_trace agent FILE -- <grove-gitops agent arguments>", file=sys.stderr)
        return 2
    return _agent(Path(argv[1]), argv[3:])


if __name__ == "__main__":
    threading.current_thread().name = "MainThread"
    sys.exit(main(sys.argv[1:]))
