"""The real control plane, once per test session (scripts/control-plane.sh up/down in a tmp dir).

Never skipped: when the binary cannot be built or started the tier fails with the script's
message (a missing Go, an unreachable module proxy), as CI must on a machine that cannot run it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controlplane.plane import (
    Plane,
    all_crds,
    apply_all,
    client_for,
    crd_established,
    kustomize,
    service_account_kubeconfig,
    start,
    stop,
    wait_until,
    whoami,
)
from tests.support import PROJECT

AGENT = "system:serviceaccount:grove-gitops:grove-gitops-gate-lifter"


@pytest.fixture(scope="session")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    directory = tmp_path_factory.mktemp("controlplane")
    try:
        running = start(directory)
    except BaseException:
        stop(directory)
        raise
    print(f"\ncontrol plane up in {running.up_seconds:.1f} s")
    try:
        yield running
    finally:
        stop(directory)


@pytest.fixture(scope="session")
def installed(plane: Plane) -> Plane:
    """CRDs and the cluster-wide gate-lifter overlay (RBAC + pod policies), as a cluster admin does."""
    kube = plane.kube()
    apply_all(kube, all_crds())
    for crd in all_crds():
        wait_until("CRDs established", functools.partial(crd_established, kube, crd["metadata"]["name"]))
    apply_all(kube, kustomize(PROJECT / "overlays" / "gate-lifter"))
    return plane


@pytest.fixture(scope="session")
def agent_kubeconfig(installed: Plane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = service_account_kubeconfig(installed, "grove-gitops", "grove-gitops-gate-lifter", tmp_path_factory.mktemp("agent") / "kubeconfig")
    assert whoami(client_for(path)) == AGENT
    return path
