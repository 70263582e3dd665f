"""Issue 32.3 on the real server: a KAI Topology level change applied the way the rendered
manifests tell Argo CD and Flux to.

KAI's Topology CRD (../shared/crds/kai) refuses an in-place change of a level's ``nodeLabel``
(a transition rule), so a plain server-side apply of the new render fails; the rendered Topology
carries ``Force=true,Replace=true`` (Argo CD: ``kubectl replace --force``, a delete and a create)
and ``kustomize.toolkit.fluxcd.io/force: enabled`` (Flux re-creates an object whose apply fails
on an immutable field), and that delete + create is accepted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from grove_gitops.output.gitopsmeta import recreated_on_sync
from tests.controlplane.plane import Obj, Plane, path_of, server_side_apply, wait_until
from tests.gatelifter.support import rendered_objects
from tests.support import PROJECT

IMMUTABLE = "nodeLabel structure is immutable; only aliases may be edited"
NAME = "cp-topology-change"  # not the examples' name: other tests apply those


def rendered_topology(tmp_path: Path, rack_label: str) -> Obj:
    """The auto-managed KAI Topology of the examples, rendered with the rack level's node label."""
    source = tmp_path / rack_label.replace("/", "_")
    shutil.copytree(PROJECT / "examples", source)
    binding = source / "topology" / "gpu-fabric.yaml"
    binding.write_text(binding.read_text().replace("key: network.example.com/rack\n", f"key: {rack_label}\n"))
    (topology,) = [o for o in rendered_objects(source) if o["kind"] == "Topology"]
    topology["metadata"]["name"] = NAME
    return topology


def test_a_level_change_is_refused_in_place_and_applied_by_re_creation(installed: Plane, tmp_path: Path) -> None:
    kube = installed.kube()
    old = rendered_topology(tmp_path, "network.example.com/rack")
    new = rendered_topology(tmp_path, "network.example.com/rack-v2")
    assert recreated_on_sync(new), new["metadata"]
    annotations = new["metadata"]["annotations"]
    assert {"Force=true", "Replace=true"} <= set(annotations["argocd.argoproj.io/sync-options"].split(","))
    assert annotations["kustomize.toolkit.fluxcd.io/force"] == "enabled"

    server_side_apply(kube, old)
    # What an ordinary sync does: the API server refuses the new levels.
    with pytest.raises(ApiException) as info:
        server_side_apply(kube, new)
    assert info.value.status == 422, info.value.body
    assert IMMUTABLE in json.loads(str(info.value.body))["message"]

    # What Force=true,Replace=true / force: enabled do: delete, then create the new object.
    path, _ = path_of(kube, new)
    kube.raw("DELETE", path)

    def gone() -> bool:
        try:
            kube.raw("GET", path)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    wait_until("the old Topology deleted", gone)
    created = server_side_apply(kube, new)
    labels = [level["nodeLabel"] for level in created["spec"]["levels"]]
    assert labels[2] == "network.example.com/rack-v2"
    assert kube.raw("GET", path)["spec"]["levels"] == new["spec"]["levels"]
