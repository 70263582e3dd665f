"""The autoscaling loop's own limits: set by whoever runs the agent, never by a record.

A ``gitops.grove.io`` PodCliqueSet carries the render inputs of its workload (``spec.source``),
a RenderConfiguration among them, and whoever may write such a record chooses what it holds.
Issue 31: rendering with the record's ``limits`` let one record raise
``maxPodsPerPodCliqueSet`` to 200,000 and have the agent create pods for minutes, with its
memory and liveness gone. So the render limits the agent applies are its own settings
(``grove-gitops agent --max-pods-per-podcliqueset`` ... , defaults as ``render``'s): every
RenderConfiguration a record carries gets them in place of its own (:func:`with_limits`),
and a record whose workload is over them does not render, so it is refused (``Ready=False``
and an ``InvalidWorkload`` Event) and nothing is created for it.

The agent also bounds its own work per pass: one pass writes at most
``writes_per_pass`` objects for one workload (a whole gang is never split: at least one gang
per pass), so a scale-out of thousands of pods proceeds in bounded steps and every other
workload is served between them; and the renders it keeps use at most ``cache_bytes``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from grove_gitops.api.renderconfig import DEFAULT_MAX_PODS_PER_PCS, DEFAULT_MAX_PODS_PER_RENDER, MAX_PODS_CEILING
from grove_gitops.load.source import RENDERCFG_KIND

#: Objects one pass creates, replaces or deletes for one workload, by default.
DEFAULT_WRITES_PER_PASS = 200
#: The most that may be configured (a pass then takes about a minute of API calls).
MAX_WRITES_PER_PASS = 10_000
#: Memory the renders the agent keeps (one per workload) may take, by default (bytes of JSON).
DEFAULT_CACHE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class ScalingLimits:
    """What the agent's operator allows; every field is in range (checked here, once)."""

    max_pods_per_pcs: int = DEFAULT_MAX_PODS_PER_PCS
    max_pods_per_render: int = DEFAULT_MAX_PODS_PER_RENDER
    writes_per_pass: int = DEFAULT_WRITES_PER_PASS
    cache_bytes: int = DEFAULT_CACHE_BYTES

    def __post_init__(self) -> None:
        for name, value, high in (
            ("max_pods_per_pcs", self.max_pods_per_pcs, MAX_PODS_CEILING),
            ("max_pods_per_render", self.max_pods_per_render, MAX_PODS_CEILING),
            ("writes_per_pass", self.writes_per_pass, MAX_WRITES_PER_PASS),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise ValueError(f"{name}: expected an integer from 1 to {high}, got {value!r}")
        if isinstance(self.cache_bytes, bool) or not isinstance(self.cache_bytes, int) or self.cache_bytes < 0:
            raise ValueError(f"cache_bytes: expected a non-negative integer, got {self.cache_bytes!r}")

    @property
    def render_limits(self) -> dict[str, int]:
        """The ``limits`` of a RenderConfiguration, as the agent's settings give them."""
        return {"maxPodsPerPodCliqueSet": self.max_pods_per_pcs, "maxPodsPerRender": self.max_pods_per_render}


def with_limits(source: Iterable[dict[str, Any]], limits: ScalingLimits) -> list[dict[str, Any]]:
    """The record's render inputs with the agent's limits in place of any the record carries:
    every RenderConfiguration gets them (a second one is refused by the loader anyway), and
    inputs without one get a RenderConfiguration holding only them (its other fields at their
    defaults, as when none is given)."""
    out: list[dict[str, Any]] = []
    found = False
    for doc in source:
        if (doc.get("apiVersion"), doc.get("kind")) == RENDERCFG_KIND:
            doc = {**doc, "limits": limits.render_limits}
            found = True
        out.append(doc)
    if not found:
        out.append({"apiVersion": RENDERCFG_KIND[0], "kind": RENDERCFG_KIND[1], "limits": limits.render_limits})
    return out
