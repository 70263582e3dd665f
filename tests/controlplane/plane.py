"""Test support for the real control plane (scripts/control-plane.sh): start/stop it, apply objects
server-side as Argo CD and Flux do, and give a process the agent's ServiceAccount token.

Everything here talks to a real kube-apiserver, so what passes here passed the server's own
validation, admission (RBAC, OwnerReferencesPermissionEnforcement, PodSecurity, the overlay's
ValidatingAdmissionPolicies) and the real scheduler, not the project's fake.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import yaml
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from tests.support import CRDS, OUR_CRDS, PROJECT

SCRIPT = PROJECT / "scripts" / "control-plane.sh"
ARGOCD_MANAGER = "argocd-controller"  # Argo CD's server-side apply field manager
FLUX_MANAGER = "kustomize-controller"
Obj = dict[str, Any]


@dataclass
class Plane:
    """A running control plane: its directory, the admin kubeconfig and how long `up` took."""

    dir: Path
    kubeconfig: Path
    up_seconds: float

    def api_client(self) -> kubernetes.client.ApiClient:
        api: kubernetes.client.ApiClient = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(self.kubeconfig)
        )
        return api

    def kube(self) -> Kube:
        return Kube(self.api_client(), field_manager=ARGOCD_MANAGER)

    def server(self) -> str:
        config = yaml.safe_load(self.kubeconfig.read_text())
        return str(config["clusters"][0]["cluster"]["server"])

    def ca_data(self) -> str:
        config = yaml.safe_load(self.kubeconfig.read_text())
        return str(config["clusters"][0]["cluster"]["certificate-authority-data"])


def start(directory: Path, nodes: int | None = None) -> Plane:
    """``control-plane.sh up``; it builds the binary first when the cache has none (a fresh machine)."""
    args = ["bash", str(SCRIPT), "up", str(directory)] + (["--nodes", str(nodes)] if nodes else [])
    t0 = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=3600, cwd=PROJECT)
    if proc.returncode != 0:
        raise AssertionError(f"control-plane.sh up failed ({proc.returncode}):\n{proc.stderr[-6000:]}")
    return Plane(directory, directory / "kubeconfig", time.monotonic() - t0)


def stop(directory: Path) -> None:
    subprocess.run(["bash", str(SCRIPT), "down", str(directory)], check=True, timeout=120, cwd=PROJECT)


# -- applying -----------------------------------------------------------------------------------
def path_of(kube: Kube, obj: Obj) -> tuple[str, bool]:
    """The object's URL and whether its kind is namespaced (from discovery, as kubectl does)."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    plural = kube.plural(api_version, kind)
    assert plural, f"{api_version} {kind} is not served"
    base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    resources = kube.raw("GET", base)["resources"]
    namespaced = next(bool(r["namespaced"]) for r in resources if r["name"] == plural)
    name = obj["metadata"]["name"]
    ns = obj["metadata"].get("namespace") or "default"
    return (f"{base}/namespaces/{ns}/{plural}/{name}" if namespaced else f"{base}/{plural}/{name}"), namespaced


def server_side_apply(kube: Kube, obj: Obj, manager: str = ARGOCD_MANAGER, dry_run: bool = False) -> Obj:
    """PATCH application/apply-patch+yaml with force, as Argo CD (ServerSideApply=true) and Flux do.
    A namespace on a cluster-scoped object is dropped, as both tools do."""
    obj = json.loads(json.dumps(obj))
    path, namespaced = path_of(kube, obj)
    if not namespaced:
        obj["metadata"].pop("namespace", None)
    query = f"?fieldManager={manager}&force=true" + ("&dryRun=All" if dry_run else "")
    return kube.raw("PATCH", path + query, json.dumps(obj), content_type="application/apply-patch+yaml")


def apply_all(kube: Kube, objs: list[Obj], manager: str = ARGOCD_MANAGER) -> None:
    """Apply in order; an error names the object and carries the server's message."""
    for obj in objs:
        try:
            server_side_apply(kube, obj, manager)
        except ApiException as exc:
            raise AssertionError(f"{obj['kind']} {obj['metadata'].get('namespace')}/{obj['metadata']['name']}: {exc.status} {exc.body}") from exc


def load_docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def kustomize(directory: Path) -> list[Obj]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is needed to build the overlays (kubectl kustomize)"
    out = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, check=True, timeout=120)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def all_crds() -> list[Obj]:
    files = sorted(CRDS.rglob("*.yaml")) + sorted(p for p in OUR_CRDS.glob("*.yaml") if p.name != "kustomization.yaml")
    return [d for f in files for d in load_docs(f) if d.get("kind") == "CustomResourceDefinition"]


def wait_until(what: str, predicate: Callable[[], bool], timeout: float = 60.0, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def crd_established(kube: Kube, name: str) -> bool:
    crd = kube.raw("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    conditions = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
    return conditions.get("Established") == "True"


# -- the agent's identity -----------------------------------------------------------------------
def service_account_kubeconfig(plane: Plane, namespace: str, name: str, target: Path) -> Path:
    """A kubeconfig holding a TokenRequest token of the ServiceAccount (what the kubelet mounts)."""
    kube = plane.kube()
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    token = kube.raw("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", body)["status"]["token"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "plane", "cluster": {"server": plane.server(), "certificate-authority-data": plane.ca_data()}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": "agent", "context": {"cluster": "plane", "user": name}}],
        "current-context": "agent",
    }
    target.write_text(yaml.safe_dump(config))
    target.chmod(0o600)
    return target


def client_for(kubeconfig: Path) -> Kube:
    return Kube(kubernetes.config.new_client_from_config(config_file=str(kubeconfig)))  # type: ignore[no-untyped-call]


def whoami(kube: Kube) -> str:
    review = kube.raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return str(review["status"]["userInfo"]["username"])


def agent_process(kubeconfig: Path, log: Path, *args: str) -> subprocess.Popen[bytes]:
    """``grove-gitops agent`` as its own process (as in its Deployment), under the given kubeconfig."""
    exe = Path(os.environ.get("VIRTUAL_ENV", PROJECT / ".venv")) / "bin" / "grove-gitops"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROVE_GITOPS_")}
    env["KUBECONFIG"] = str(kubeconfig)
    with log.open("wb") as handle:  # the child keeps its own descriptor
        return subprocess.Popen(
            [str(exe), "agent", "--kubeconfig", str(kubeconfig), "--metrics-address", "127.0.0.1:0", *args],
            stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=log.parent,
        )


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, up to 30 s for a clean exit (the agent releases its lease), then SIGKILL."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
