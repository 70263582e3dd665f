"""Test support for migrations: a small source tree and the live state Grove's operator makes of it.

Grove's operator is not built or run in this project, so :func:`grove_objects` writes the
objects it would have made for the PodCliqueSet, as ``spec/grove-desired-state.md`` describes
them: the ``grove.io`` PodCliqueSet with its finalizer, PodCliqueScalingGroups ``P-i-g`` owned
by it, PodCliques ``P-i-c`` / ``P-i-g-j-c`` (owned by the PodCliqueSet or the scaling group,
finalizer ``grove.io/podclique.grove.io``), pods ``<podclique>-<random 5>`` owned by their
PodClique with hostname ``<podclique>-<k>``, subdomain ``P-i`` and Grove's labels
(``managed-by: grove-operator``), PodGangs ``P-i`` / ``P-i-g-s`` (``Initialized``) and the
headless Service, ServiceAccount, Role and RoleBinding. The pod specs are the render's, so a
migration has nothing to change but the owner.
"""

from __future__ import annotations

import copy
import random
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.gatelifter.support import rendered_objects
from tests.support import write_source

Obj = dict[str, Any]
NS, PCS = "migrate-demo", "mig"
GROVE_API = "grove.io/v1alpha1"
MANAGED_BY = "app.kubernetes.io/managed-by"
PART_OF = "app.kubernetes.io/part-of"
PODCLIQUE = "grove.io/podclique"
GATE = "grove.io/podgang-pending-creation"

PCS_YAML = f"""\
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: {PCS}
  namespace: {NS}
spec:
  replicas: 1
  template:
    terminationDelay: 30m
    cliques:
      - name: router
        spec:
          roleName: router
          replicas: 2
          minAvailable: 1
          podSpec:
            terminationGracePeriodSeconds: 1
            containers:
              - name: router
                image: registry.example/router:1.0
                resources:
                  requests: {{cpu: 10m, memory: 16Mi}}
      - name: leader
        spec:
          roleName: leader
          replicas: 1
          podSpec:
            terminationGracePeriodSeconds: 1
            containers:
              - name: leader
                image: registry.example/engine:1.0
                resources:
                  requests: {{cpu: 10m, memory: 16Mi}}
      - name: worker
        spec:
          roleName: worker
          replicas: 2
          podSpec:
            terminationGracePeriodSeconds: 1
            containers:
              - name: worker
                image: registry.example/engine:1.0
                resources:
                  requests: {{cpu: 10m, memory: 16Mi}}
    podCliqueScalingGroups:
      - name: engine
        cliqueNames: [leader, worker]
        replicas: 2
        minAvailable: 1
"""

FILES = {
    "config/render.yaml": """\
        apiVersion: gitops.grove.io/v1alpha1
        kind: RenderConfiguration
        metadata: {name: render}
        kubernetesVersion: "1.35"
        defaultNamespace: default
        initContainerImage: ghcr.io/ai-dynamo/grove/grove-initc:v0.1.0
        gitops: both
        """,
    "config/operator.yaml": """\
        apiVersion: operator.config.grove.io/v1alpha1
        kind: OperatorConfiguration
        scheduler:
          defaultProfileName: default-scheduler
          profiles:
            - name: default-scheduler
        """,
    "workloads/namespace.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n",
    "workloads/mig.yaml": PCS_YAML,
}


def source(root: Path, edit: Callable[[str], str] = lambda text: text) -> Path:
    files = dict(FILES)
    files["workloads/mig.yaml"] = edit(PCS_YAML)
    return write_source(root, files)


def render(root: Path) -> list[Obj]:
    """The objects of the render, in wave order (as the GitOps tool applies them)."""
    return rendered_objects(root)


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj["metadata"]
    return meta


def _owner(kind: str, name: str, uid: str) -> Obj:
    return {"apiVersion": GROVE_API, "kind": kind, "name": name, "uid": uid, "controller": True,
            "blockOwnerDeletion": True}


def _grove_labels(labels: Obj) -> Obj:
    out = dict(labels)
    out[MANAGED_BY] = "grove-operator"
    return out


def suffix(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))


class GroveState:
    """Creates Grove's objects one kind at a time, so each child can carry its owner's uid.

    ``create(obj) -> obj`` is the caller's (a POST that returns the stored object); every object
    is created as Grove's operator would (a PodCliqueSet first, children after).
    """

    def __init__(self, rendered: list[Obj], create: Callable[[Obj], Obj], status: Callable[[Obj, Obj], Obj],
                 seed: int = 7) -> None:
        self.rendered = rendered
        self.create = create
        self.status = status  # (obj, status) -> the object with that status (a status write)
        self.rng = random.Random(seed)
        self.pods: dict[str, Obj] = {}  # hostname -> live Grove pod

    def build(self, pcs_doc: Obj) -> None:
        pcs_doc = copy.deepcopy(pcs_doc)
        _meta(pcs_doc)["finalizers"] = ["grove.io/podcliqueset.grove.io"]
        pcs = self.create(pcs_doc)
        pcs_uid = _meta(pcs)["uid"]
        pods = [o for o in self.rendered if o["kind"] == "Pod"]
        groups: dict[str, Obj] = {}
        for pod in pods:
            labels = _meta(pod)["labels"]
            group = labels.get("grove.io/podcliquescalinggroup")
            if group and group not in groups:
                names = sorted({p["metadata"]["labels"][PODCLIQUE].rsplit("-", 1)[-1] for p in pods
                                if p["metadata"]["labels"].get("grove.io/podcliquescalinggroup") == group})
                replicas = len({p["metadata"]["labels"]["grove.io/podcliquescalinggroup-replica-index"] for p in pods
                                if p["metadata"]["labels"].get("grove.io/podcliquescalinggroup") == group})
                groups[group] = self.create({
                    "apiVersion": GROVE_API, "kind": "PodCliqueScalingGroup",
                    "metadata": {"name": group, "namespace": NS, "ownerReferences": [_owner("PodCliqueSet", PCS, pcs_uid)],
                                 "finalizers": ["grove.io/podcliquescalinggroup.grove.io"],
                                 "labels": {MANAGED_BY: "grove-operator", PART_OF: PCS,
                                            "app.kubernetes.io/component": "pcs-podcliquescalinggroup"}},
                    "spec": {"replicas": replicas, "minAvailable": 1, "cliqueNames": names},
                })
        cliques: dict[str, Obj] = {}
        for pod in pods:
            labels = _meta(pod)["labels"]
            name = labels[PODCLIQUE]
            if name in cliques:
                continue
            group = labels.get("grove.io/podcliquescalinggroup")
            owner = (_owner("PodCliqueScalingGroup", group, _meta(groups[group])["uid"]) if group
                     else _owner("PodCliqueSet", PCS, pcs_uid))
            count = sum(1 for p in pods if p["metadata"]["labels"][PODCLIQUE] == name)
            clique_labels = {k: v for k, v in labels.items() if k not in (PODCLIQUE, "grove.io/podclique-pod-index")}
            cliques[name] = self.create({
                "apiVersion": GROVE_API, "kind": "PodClique",
                "metadata": {"name": name, "namespace": NS, "ownerReferences": [owner],
                             "finalizers": ["grove.io/podclique.grove.io"], "labels": _grove_labels(clique_labels)},
                "spec": {"roleName": name.rsplit("-", 1)[-1], "replicas": count, "podSpec": {"containers": pod["spec"]["containers"]}},
            })
        for pod in pods:
            self.pods[pod["spec"]["hostname"]] = self.create(self.grove_pod(pod, cliques))
        self.children(pcs_uid)

    def grove_pod(self, rendered: Obj, cliques: dict[str, Obj]) -> Obj:
        """The pod Grove's PodClique controller makes for the rendered pod's slot (ungated: its gang
        was released long ago)."""
        pod = copy.deepcopy(rendered)
        meta = _meta(pod)
        clique = meta["labels"][PODCLIQUE]
        meta["name"] = f"{clique}-{suffix(self.rng)}"
        meta["labels"] = _grove_labels(meta["labels"])
        meta["annotations"] = {}
        meta["ownerReferences"] = [_owner("PodClique", clique, _meta(cliques[clique])["uid"])]
        pod["spec"]["schedulingGates"] = [g for g in pod["spec"].get("schedulingGates") or [] if g["name"] != GATE]
        if not pod["spec"]["schedulingGates"]:
            del pod["spec"]["schedulingGates"]
        return pod

    def children(self, pcs_uid: str) -> None:
        owner = [_owner("PodCliqueSet", PCS, pcs_uid)]
        by_host = {h: _meta(p)["name"] for h, p in self.pods.items()}
        for obj in self.rendered:
            if obj["kind"] not in ("PodGang", "Service", "ServiceAccount", "Role", "RoleBinding"):
                continue
            obj = copy.deepcopy(obj)
            meta = _meta(obj)
            meta["labels"] = _grove_labels(meta.get("labels") or {})
            meta["annotations"] = {}
            meta["ownerReferences"] = owner
            if obj["kind"] == "Service":
                obj["spec"]["selector"][MANAGED_BY] = "grove-operator"
            if obj["kind"] == "PodGang":
                for group in obj["spec"]["podgroups"]:
                    for ref in group["podReferences"]:
                        ref["name"] = by_host[ref["name"].rsplit("-", 1)[0]]
                stored = self.create(obj)
                self.status(stored, {"phase": "Running", "conditions": [
                    {"type": "Initialized", "status": "True", "reason": "PodGangPodsCreated",
                     "message": "PodGang is fully initialized", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
            else:
                self.create(obj)
