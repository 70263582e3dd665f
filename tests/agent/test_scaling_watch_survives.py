"""Issue 31, point 3: no record stops the autoscaling of the others, and no thread dies unseen.

A record whose ``spec.source`` nests a list 3,000 deep cannot be decoded by Python's JSON
decoder (``RecursionError``). Before the fix it killed the list+watch thread of the kind, the
cache never synced and no workload in any namespace was scaled, with ``/healthz`` still
green. Now the list is decoded with a nesting bound, the deep record alone is reported
(``Ready=False``, an ``InvalidWorkload`` Event) and every other workload is scaled; a watch
event that cannot be decoded makes the thread list again; and a dead thread fails
``healthy()``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grove_gitops.agent.scaling.bounded import MAX_DEPTH, loads_bounded
from grove_gitops.expand.scaling import PCLQ_KIND
from tests.agent.scaling_env import render_at, scaling_env, wait_until
from tests.agent.test_scaling_limits import NS, _condition, _pcs, _pods, _source
from tests.fakeserver.app import HttpRequest, HttpResponse

DEPTH = 3000
DEEP = "[" * DEPTH + "]" * DEPTH


def _deep_lists(server: Any) -> None:
    """The server answers every list of gitops.grove.io PodCliqueSets with record ``deep``'s
    ``spec.source`` nested 3,000 levels (as kube-apiserver stores it; the fake server's own
    JSON encoder could not write it)."""
    handle = server.app.handle

    def deep_handle(request: HttpRequest) -> HttpResponse:
        response = handle(request)
        listing = (request.method == "GET" and request.path.endswith("/podcliquesets")
                   and "/gitops.grove.io/" in request.path and request.query.get("watch") not in ("true", "1"))
        if not listing or response.status != 200 or not isinstance(response.body, dict):
            return response
        for item in response.body.get("items") or []:
            if item["metadata"]["name"] == "deep":
                item["spec"]["source"] = "@@DEEP@@"
        return HttpResponse(200, json.dumps(response.body).replace('"@@DEEP@@"', DEEP), response.headers)

    server.app.handle = deep_handle


class _DeepEvents:
    """The agent's Kube, but a watch event of record ``deep`` fails to decode as it would
    (the same ``RecursionError`` the list raised)."""

    def __init__(self, kube: Any) -> None:
        self._kube = kube

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kube, name)

    def watch_objects(self, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        for event in self._kube.watch_objects(*args, **kwargs):
            if event["object"]["metadata"]["name"] == "deep":
                json.loads(DEEP)  # raises RecursionError
            yield event


def test_a_deeply_nested_record_is_reported_and_every_other_workload_is_scaled(tmp_path: Path) -> None:
    scaled = {"scaleConfig": {"minReplicas": 1, "maxReplicas": 3}}
    src = _source(tmp_path, _pcs("good", group=scaled), _pcs("deep", group=scaled))
    with scaling_env(tmp_path / "live", NS) as env:
        _deep_lists(env.server)
        scaler = env.agent.scaler
        assert scaler is not None
        scaler.gitops.kube = _DeepEvents(env.kube)  # type: ignore[assignment]
        env.apply(render_at(src))
        env.start_agent()
        assert wait_until(lambda: env.target("good-0-prefill") is not None, timeout=30)
        env.scale("good-0-prefill", 3)
        assert wait_until(lambda: len(_pods(env, "good", True)) == 6, timeout=30)

        def reported() -> bool:
            events = env.server.store.list_objects("events.events.k8s.io", NS)
            return any(e.get("reason") == "InvalidWorkload" and e["regarding"]["name"] == "deep" for e in events)

        assert wait_until(reported, timeout=30)
        event = next(e for e in env.server.store.list_objects("events.events.k8s.io", NS)
                     if e.get("reason") == "InvalidWorkload")
        assert f"nested deeper than {MAX_DEPTH} levels" in event["note"]
        record = env.server.get_object("podcliquesets.gitops.grove.io", NS, "deep")
        assert wait_until(lambda: _condition(env.server.get_object("podcliquesets.gitops.grove.io", NS, "deep"),
                                             "Ready").get("reason") == "InvalidWorkload")
        assert record is not None and env.target("deep-0-prefill") is None
        assert not _pods(env, "deep", True)
        # A later scale write is served too: the watch threads live (a deep event re-lists).
        env.scale("good-0-prefill", 2)
        assert wait_until(lambda: len(_pods(env, "good", True)) == 3, timeout=30)
        assert all(t.is_alive() for t in scaler.threads) and len(scaler.threads) == 3
        assert env.agent.healthy()


def test_a_dead_autoscaling_thread_fails_the_health_check(tmp_path: Path) -> None:
    src = _source(tmp_path, _pcs("good", group={"scaleConfig": {"minReplicas": 1, "maxReplicas": 3}}))
    with scaling_env(tmp_path / "live", NS) as env:
        scaler = env.agent.scaler
        assert scaler is not None
        real = scaler.gitops.list_watch
        ended = threading.Event()

        def list_watch(kind: str, stop: threading.Event) -> None:
            if kind == PCLQ_KIND:
                ended.set()
                return  # as a thread that died would
            real(kind, stop)

        scaler.gitops.list_watch = list_watch  # type: ignore[method-assign]
        env.apply(render_at(src))
        env.start_agent()
        assert ended.wait(10)
        assert wait_until(lambda: env.agent.cache.ready())
        assert wait_until(lambda: not env.agent.healthy(), timeout=10)


def test_the_bounded_decoder_cuts_only_what_is_too_deep_and_says_which_item() -> None:
    listing = ('{"kind":"List","items":[{"metadata":{"name":"a"},"x":"[[[[{{{{"},'
               f'{{"metadata":{{"name":"b"}},"spec":{{"source":{DEEP}}}}},'
               '{"metadata":{"name":"c"},"y":[[[1]]]}],"metadata":{"resourceVersion":"7"}}')
    decoded = loads_bounded(listing, 16)
    assert decoded.cut and decoded.cut_items == {1}
    items = decoded.value["items"]
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c"]
    assert items[0]["x"] == "[[[[{{{{" and items[2]["y"] == [[[1]]]  # brackets in strings do not count
    source = items[1]["spec"]["source"]
    depth = 0
    while isinstance(source, list):
        source, depth = source[0] if source else None, depth + 1
    assert 0 < depth <= 16 and source is None
    assert decoded.value["metadata"] == {"resourceVersion": "7"}
    shallow = loads_bounded('{"items":[{"a":[1,{"b":2}]}]}', 16)
    assert not shallow.cut and shallow.value == {"items": [{"a": [1, {"b": 2}]}]}
