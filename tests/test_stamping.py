"""Stamped pods (issue 10): the pods of one clique share their spec's subtrees, and nothing a
reader can see depends on that: the YAML, the pod names and the pickled form are exactly what
a pod built on its own would give."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import yaml

from grove_gitops.expand import ownership
from grove_gitops.expand.hashing import short_hash
from grove_gitops.expand.jsoncopy import json_copy
from grove_gitops.frozen import SharedDict, SharedList, share_values
from grove_gitops.output.emit import emit
from grove_gitops.output.serialize import dump_object_pyyaml
from grove_gitops.render import render_source
from tests.support import objects_by_kind, render_files
from tests.test_expansion_details import SHARING

ROOT = Path(__file__).resolve().parents[1]


def _pods(result: Any) -> list[dict[str, Any]]:
    return [o.obj for o in result.objects if o.obj.get("kind") == "Pod"]


def test_pods_of_a_clique_share_their_spec_subtrees() -> None:
    pods = [p for p in _pods(render_source(ROOT / "examples")) if p["metadata"]["name"].startswith("llama-disagg-0-")]
    by_clique: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        by_clique.setdefault(pod["metadata"]["labels"]["grove.io/podclique"], []).append(pod)
    multi = [group for group in by_clique.values() if len(group) > 1]
    assert multi, "the example needs a clique with more than one pod"
    for group in multi:
        first, second = group[0], group[1]
        assert first["spec"]["containers"] is second["spec"]["containers"]
        assert isinstance(first["spec"]["containers"], SharedList)
        # ... but each pod owns what differs between pods.
        assert first["spec"] is not second["spec"]
        assert first["metadata"]["labels"] is not second["metadata"]["labels"]
        assert first["spec"]["hostname"] != second["spec"]["hostname"]


def test_every_rendered_object_emits_and_hashes_as_its_plain_copy() -> None:
    for source in (ROOT / "examples", ROOT.parent / "shared" / "samples" / "grove" / "simple"):
        result = render_source(source)
        pods = _pods(result)
        assert pods
        for obj in (o.obj for o in result.objects):
            plain = json_copy(obj)
            # twice: the second emit reads the cached text of the shared subtrees
            assert emit(obj) == emit(plain) == emit(obj)
            assert dump_object_pyyaml(obj) == dump_object_pyyaml(plain)
            assert yaml.safe_load(emit(obj)) == plain
        for pod in pods:
            name = pod["metadata"]["name"]
            unnamed = json_copy(pod)
            del unnamed["metadata"]["name"]
            # The name hashes everything but the ownership proof, which binds the name itself.
            assert ownership.verify(pod), name
            del unnamed["metadata"]["annotations"][ownership.RENDERED_BY]
            if not unnamed["metadata"]["annotations"]:
                del unnamed["metadata"]["annotations"]
            assert name.endswith("-" + short_hash(unnamed)), name


def test_a_pod_with_its_own_claims_gets_its_own_spec(tmp_path: Path) -> None:
    result = render_files(tmp_path, {"w.yaml": SHARING})
    pods = objects_by_kind(result, "Pod")
    solo = sorted((p for p in pods.values() if "-solo-" in p["metadata"]["name"]), key=lambda p: p["spec"]["hostname"])
    assert len(solo) >= 2
    # a clique-level PerReplica claim is one claim per pod: each pod mounts its own
    claim_names = [[c["resourceClaimName"] for c in p["spec"]["resourceClaims"]] for p in solo]
    assert claim_names[0] != claim_names[1]
    assert solo[0]["spec"]["containers"] is not solo[1]["spec"]["containers"]
    for pod in solo:
        mounted = {c["name"] for c in pod["spec"]["resourceClaims"]}
        for container in pod["spec"]["containers"]:
            assert {c["name"] for c in container["resources"]["claims"]} == mounted


def test_shared_subtrees_pickle_without_their_cached_text() -> None:
    inner = SharedDict({"b": 1, "a": [1, 2]})
    spec = share_values({"containers": [{"name": "c", "image": "x"}], "hostname": "h", "empty": []})
    assert type(spec["containers"]) is SharedList and spec["empty"] == [] and type(spec["empty"]) is list
    obj = {"spec": spec, "extra": inner, "again": inner}
    text = emit(obj)
    assert spec["containers"].texts and inner.texts
    back = pickle.loads(pickle.dumps(obj))
    assert back == obj and back["again"] is back["extra"]  # sharing survives, as pickle's memo keeps it
    assert type(back["extra"]) is SharedDict and back["extra"].texts == {}
    assert emit(back) == text
