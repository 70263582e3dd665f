"""The real control plane, once per test session (scripts/control-plane.sh up/down in a tmp dir).

Never skipped: when the binary cannot be built or started the tier fails with the script's
message (a missing Go, an unreachable module proxy), as CI must on a machine that cannot run it.
"""

from __future__ import annotations

import functools
import os
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


#: The gate-lifter components the workloads of this tier need beside the overlay's own KAI one:
#: test_agent's default-scheduler example renders Workload API gang objects (issue 31.7).
COMPONENTS = ("backends/default-scheduler",)


@pytest.fixture(scope="session")
def installed(plane: Plane, tmp_path_factory: pytest.TempPathFactory) -> Plane:
    """CRDs and the cluster-wide gate-lifter overlay (RBAC + pod policies) with the components of
    the backends its workloads use, from a kustomization of the user's own, as a cluster admin does."""
    kube = plane.kube()
    apply_all(kube, all_crds())
    for crd in all_crds():
        wait_until("CRDs established", functools.partial(crd_established, kube, crd["metadata"]["name"]))
    install = tmp_path_factory.mktemp("install")
    overlay = PROJECT / "overlays" / "gate-lifter"
    (install / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        f"  - {os.path.relpath(overlay, install)}\ncomponents:\n"
        + "".join(f"  - {os.path.relpath(overlay / c, install)}\n" for c in COMPONENTS)
    )
    apply_all(kube, kustomize(install))
    return plane


@pytest.fixture(scope="session")
def agent_kubeconfig(installed: Plane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = service_account_kubeconfig(installed, "grove-gitops", "grove-gitops-gate-lifter", tmp_path_factory.mktemp("agent") / "kubeconfig")
    assert whoami(client_for(path)) == AGENT
    return path
