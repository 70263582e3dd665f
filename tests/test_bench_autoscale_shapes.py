"""``bench.autoscale_bench --shape``: each shape's source renders, and scaling every one of its
targets from low to high creates the new gangs the shape says (issue 35.2: the status writes
per new gang are judged against this count, and against one write per target and workload).

Rendered only (no world, no agent): the bench itself runs each shape end to end.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import autoscale_bench as B
from grove_gitops.render import plan_source


def _objects(root: Path, shape: B.Shape, count: int) -> list[dict]:
    plan = plan_source(root)
    counts = B._counts(shape, count)
    out: list[dict] = []
    for item in plan.items:
        out += [o.obj for o in plan.expand(item, counts.get(item.key[1]))[0]]
    return out


@pytest.mark.parametrize("name", sorted(B.SHAPES))
def test_each_shape_renders_and_scales_its_targets_into_the_expected_gangs(name: str, tmp_path: Path) -> None:
    shape = B.SHAPES[name]
    root = B.shape_source(tmp_path / "source", shape)
    low = _objects(root, shape, shape.low)
    high = _objects(root, shape, shape.high)

    def names(objs: list[dict], kind: str) -> set[str]:
        return {o["metadata"]["name"] for o in objs if o["kind"] == kind}

    # Grove renders one HPA per scale target, named as the target the bench writes /scale to.
    targets = {B._target_name(*t) for t in shape.targets()}
    assert names(low, "HorizontalPodAutoscaler") == targets
    grouped = sum(len(w.groups) * w.replicas for w in shape.workloads)
    new_gangs = names(high, "PodGang") - names(low, "PodGang")
    assert len(new_gangs) == grouped * (shape.high - shape.low)
    new_pods = names(high, "Pod") - names(low, "Pod")
    per_replica = B.PODS_PER_REPLICA * grouped + sum(len(w.cliques) * w.replicas for w in shape.workloads)
    assert len(new_pods) == per_replica * (shape.high - shape.low)
    backends = {o["kind"] for o in high} & {"PodGroup"}
    assert backends == ({"PodGroup"} if shape.backend in B.GANG_OBJECTS else set())
    assert all(shape.low < step < shape.high for step in shape.steps)


def test_an_unknown_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown shape 'nope'"):
        B.run(2, 3, 1, shape="nope")
