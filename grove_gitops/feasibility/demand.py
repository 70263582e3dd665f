"""What one rendered pod asks of a node: its resource requests and which nodes it may use.

Requests follow the scheduler (``resourcehelper.PodRequests``): the containers' sum, maxed
with each init container (a restartable "sidecar" init container adds to both), plus
``spec.overhead``; a container's limit stands in for a request it does not state, as the API
server defaults it. Every pod also takes one of the node's ``pods``.

Node choice honours ``nodeSelector``, required node affinity (``matchExpressions`` with In,
NotIn, Exists, DoesNotExist, Gt, Lt; ``matchFields`` on ``metadata.name``) and tolerations
against NoSchedule/NoExecute taints. Preferred affinity and pod (anti-)affinity are not modelled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from grove_gitops.feasibility.inventory import ClusterNode
from grove_gitops.feasibility.units import milli


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    out = {name: milli(v) for name, v in (resources.get("limits") or {}).items()}
    out.update({name: milli(v) for name, v in (resources.get("requests") or {}).items()})
    return out


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, 0) + amount


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if amount > into.get(name, 0):
            into[name] = amount


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """The pod's effective requests in thousandths of a unit (``pods`` included)."""
    reqs: dict[str, int] = {}
    for container in spec.get("containers") or []:
        _add(reqs, _container_requests(container))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in spec.get("initContainers") or []:
        own = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(reqs, own)
            _add(sidecars, own)
            during = dict(sidecars)
        else:
            during = dict(own)
            _add(during, sidecars)
        _max(init_peak, during)
    _max(reqs, init_peak)
    _add(reqs, {name: milli(v) for name, v in (spec.get("overhead") or {}).items()})
    reqs["pods"] = 1000
    return {name: amount for name, amount in reqs.items() if amount > 0}


@dataclass(frozen=True)
class NodeFilter:
    """The node-choosing part of a pod spec, as canonical JSON (pods sharing it share the answer)."""

    text: str

    @staticmethod
    def of(spec: Mapping[str, Any]) -> NodeFilter:
        affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        data = [spec.get("nodeSelector") or {}, affinity or {}, spec.get("tolerations") or []]
        return NodeFilter(json.dumps(data, sort_keys=True, separators=(",", ":")))

    @cached_property
    def parsed(self) -> tuple[Any, Any, Any]:
        """(nodeSelector, required node affinity, tolerations), parsed once per filter."""
        selector, affinity, tolerations = json.loads(self.text)
        return selector, affinity, tolerations

    def strings(self) -> Iterator[str]:
        """Every string of the filter (keys and values): the only node names and hostnames it
        can single out (``placement`` tracks those nodes of a pool one by one)."""
        stack: list[Any] = list(self.parsed)
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                yield item
            elif isinstance(item, dict):
                yield from (k for k in item if isinstance(k, str))
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)

    def allows(self, node: ClusterNode) -> bool:
        selector, affinity, tolerations = self.parsed
        if any(node.labels.get(k) != v for k, v in selector.items()):
            return False
        terms = affinity.get("nodeSelectorTerms") if isinstance(affinity, dict) else None
        if terms and not any(_term_matches(t, node) for t in terms):
            return False
        return all(_tolerated(taint, tolerations) for taint in node.taints)

    def reasons(self) -> str:
        """What this filter consists of, for a message (``nodeSelector, tolerations``)."""
        selector, affinity, tolerations = self.parsed
        parts = [
            name
            for name, value in (("nodeSelector", selector), ("required node affinity", affinity))
            if value
        ]
        parts.append("tolerations (against the nodes' taints)" if tolerations else "taints (it has no tolerations)")
        return ", ".join(parts)


def _term_matches(term: Mapping[str, Any], node: ClusterNode) -> bool:
    """One nodeSelectorTerm: every expression holds. An empty term matches nothing."""
    exprs = list(term.get("matchExpressions") or [])
    fields = list(term.get("matchFields") or [])
    if not exprs and not fields:
        return False
    if not all(_expr_matches(e, node.labels) for e in exprs):
        return False
    return all(_expr_matches(f, {"metadata.name": node.name}) for f in fields)


def _expr_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), list(expr.get("values") or [])
    present = key in labels
    value = labels.get(key, "") if isinstance(key, str) else ""
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _tolerated(taint: tuple[str, str, str], tolerations: list[Mapping[str, Any]]) -> bool:
    key, value, effect = taint
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != effect:
            continue
        op = tol.get("operator") or "Equal"
        tkey = tol.get("key") or ""
        if op == "Exists" and (not tkey or tkey == key):
            return True
        if op == "Equal" and tkey == key and (tol.get("value") or "") == value:
            return True
    return False
