"""``gitops.grove.io/v1alpha1`` NodeInventory, and the parts of a ``v1`` Node that
``grove-gitops feasibility`` reads (docs/feasibility.md).

A NodeInventory describes a cluster in node pools: ``count`` identical nodes sharing labels
(including the topology keys of the ClusterTopologyBindings), taints and allocatable
resources. A ``kubectl get nodes -o yaml`` dump says the same per node; only labels, taints,
``spec.unschedulable`` and ``status.allocatable`` are read, everything else is tolerated.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from grove_gitops.api.base import ObjectMeta, StrictModel
from grove_gitops.fields.quantity import parse_quantity

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
#: The label every node of a pool gets (its node name) unless the pool's labels set it.
HOSTNAME = "kubernetes.io/hostname"
#: Nodes of one pool. A pool is one entry however many nodes it holds; the total of a source
#: is bounded apart (``grove_gitops.api.inventorycheck``).
MAX_POOL_NODES = 100_000


def _check_quantity(value: str | int | float) -> str | int | float:
    """A Kubernetes quantity that is not negative (``"96"``, ``"1Ti"``, ``8``)."""
    parsed = parse_quantity(value)
    if parsed is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 96, 500m, 1Ti)")
    if parsed < 0:
        raise ValueError("must be greater than or equal to 0")
    return value


Quantity = Annotated[str | int | float, AfterValidator(_check_quantity)]


def quantity_value(value: str | int | float) -> Decimal:
    """The value of a quantity the model already validated."""
    parsed = parse_quantity(value)
    return parsed if parsed is not None else Decimal(0)


class Taint(StrictModel):
    key: str = Field(min_length=1)
    value: str | None = None
    effect: TaintEffect


class NodePool(StrictModel):
    """``count`` nodes named ``<name>-0`` ... ``<name>-<count-1>``, alike in every other respect.

    Each node gets ``kubernetes.io/hostname`` = its name unless the pool's labels set it.
    """

    name: str = Field(min_length=1)
    count: int = Field(ge=1, le=MAX_POOL_NODES)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    allocatable: dict[str, Quantity]


class NodeInventory(StrictModel):
    apiVersion: Literal["gitops.grove.io/v1alpha1"] = "gitops.grove.io/v1alpha1"
    kind: Literal["NodeInventory"] = "NodeInventory"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    pools: list[NodePool] = Field(min_length=1)


class _Lenient(BaseModel):
    """A kubectl dump carries many fields grove-gitops does not read; they are tolerated."""

    model_config = ConfigDict(extra="allow", strict=True)


class NodeTaint(_Lenient):
    """A Node's taint; ``timeAdded`` and the like are tolerated."""

    key: str = Field(min_length=1)
    value: str | None = None
    effect: TaintEffect


class NodeSpec(_Lenient):
    taints: list[NodeTaint] | None = None
    unschedulable: bool | None = None


class NodeStatus(_Lenient):
    allocatable: dict[str, Quantity] | None = None


class Node(_Lenient):
    """A ``v1`` Node as ``kubectl get nodes -o yaml`` writes it."""

    apiVersion: Literal["v1"]
    kind: Literal["Node"]
    metadata: ObjectMeta
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    def allocatable(self) -> dict[str, Any]:
        return dict(self.status.allocatable or {})
