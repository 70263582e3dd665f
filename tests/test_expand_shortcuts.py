"""Shortcuts on expansion's per-pod path (issue 35.4) give exactly what their plain definitions
give: the ownership proof hashes ``json.dumps`` of its parts, ``json_copy`` is a deep copy
(equal, nothing mutable shared, leaves of any type kept), and the variables Grove injects are
each container's own."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.expand import labels as L
from grove_gitops.expand import ownership
from grove_gitops.expand.jsoncopy import json_copy
from tests.support import objects_by_kind, render_files

# Label values and names as a hostile or unusual source may write them: quotes, backslashes,
# control characters, non-ASCII, astral characters and lone surrogates (escaped alike).
_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), min_size=1, max_size=40)


def _reference_proof(namespace: str, name: str, labels: dict[str, str]) -> str:
    """The proof as docs/day2.md defines it: SHA-256 of the compact ASCII JSON array."""
    parts = [ownership._TAG, namespace, name, *(labels[k] for k in ownership.BOUND_LABELS)]
    data = json.dumps(parts, separators=(",", ":"), ensure_ascii=True)
    return "v1:" + hashlib.sha256(data.encode()).hexdigest()


@given(namespace=_TEXT, name=_TEXT, values=st.lists(_TEXT, min_size=7, max_size=7))
def test_the_proof_hashes_the_json_array_of_its_parts(namespace: str, name: str, values: list[str]) -> None:
    labels = dict(zip(ownership.BOUND_LABELS, values, strict=True))
    assert ownership.proof(namespace, name, labels) == _reference_proof(namespace, name, labels)


def test_the_proof_of_a_plain_pod_is_unchanged() -> None:
    labels = {k: f"v-{i}" for i, k in enumerate(ownership.BOUND_LABELS)}
    labels[L.POD_INDEX] = "0"
    # A fixed value: a live pod stamped by an earlier render must still verify.
    assert ownership.proof("inference", "llama-0-router-0-abcdefgh", labels) == _reference_proof(
        "inference", "llama-0-router-0-abcdefgh", labels
    )
    assert ownership.proof("ns", 'a"b\\c', labels) == _reference_proof("ns", 'a"b\\c', labels)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=30,
)


def _containers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


@given(_JSON)
def test_json_copy_is_an_equal_copy_sharing_nothing_mutable(value: Any) -> None:
    copied = json_copy(value)
    assert copied == value
    assert json.dumps(copied) == json.dumps(value)
    originals = {id(c) for c in _containers(value)}
    assert not any(id(c) in originals for c in _containers(copied))


def test_json_copy_keeps_leaves_of_other_types_and_copies_nested_ones() -> None:
    marker = object()
    inner = {"k": [1, 2.5, True, None, "s"]}
    value = {"a": marker, "b": [inner, [inner]]}
    copied = json_copy(value)
    assert copied["a"] is marker
    assert copied["b"][0] == inner and copied["b"][0] is not inner
    assert copied["b"][0]["k"] is not inner["k"]
    assert copied["b"][1][0] is not inner


_TWO_CONTAINERS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: envs, namespace: ml}
spec:
  replicas: 1
  template:
    podCliqueScalingGroups: [{name: g, cliqueNames: [a]}]
    cliques:
    - name: a
      spec:
        replicas: 1
        roleName: a
        podSpec:
          initContainers: [{name: i, image: x}]
          containers:
          - {name: c, image: x, env: [{name: GROVE_PCSG_INDEX, value: spoofed}, {name: MINE, value: kept}]}
          - {name: d, image: x}
"""


def test_every_container_gets_grove_variables_of_its_own(tmp_path: Path) -> None:
    """Grove's variables, then the scaling group's, then the user's of other names; built
    afresh per container, so no two containers (nor two cliques) share an entry."""
    result = render_files(tmp_path, {"s.yaml": _TWO_CONTAINERS})
    pod = next(iter(objects_by_kind(result, "Pod").values()))
    spec = pod["spec"]
    lists = [c["env"] for c in (*spec["containers"], *spec["initContainers"])]
    grove = ["GROVE_PCS_NAME", "GROVE_PCS_INDEX", "GROVE_PCLQ_NAME", "GROVE_HEADLESS_SERVICE", "GROVE_PCLQ_POD_INDEX"]
    group = ["GROVE_PCSG_NAME", "GROVE_PCSG_TEMPLATE_NUM_PODS", "GROVE_PCSG_INDEX"]
    assert [e["name"] for e in lists[0]] == [*grove, *group, "MINE"]
    assert all([e["name"] for e in env] == [*grove, *group] for env in lists[1:])
    assert lists[1] == lists[2] == lists[0][:-1]
    entries = [id(e) for env in lists for e in env]
    nested = [id(e["valueFrom"]) for env in lists for e in env if "valueFrom" in e]
    assert len(set(entries)) == len(entries) and len(set(nested)) == len(nested)
