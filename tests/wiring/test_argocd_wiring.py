"""``overlays/argocd``: the health ConfigMap, Application, ApplicationSet and plugin files agree
with the Lua sources, carry the settings gated Pods need, and build with ``kubectl kustomize``."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from .helpers import ARGOCD, GANG_KINDS, GITOPS_KINDS, HEALTH, kubectl, load_docs, load_one, rendered_objects

HEALTH_PREFIX = "resource.customizations.health."
KAI_RUNTIME_POINTERS = [
    "/spec/markUnschedulable",
    "/spec/schedulingBackoff",
    "/spec/queue",
    "/metadata/labels/kai.scheduler~1node-pool",
    "/metadata/labels/kai.scheduler~1queue",
]
REQUIRED_SYNC_OPTIONS = {"RespectIgnoreDifferences=true", "ApplyOutOfSyncOnly=true", "PruneLast=true"}
FORBIDDEN_SYNC_OPTIONS = re.compile(r"^(Replace|Force)=", re.IGNORECASE)
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def health_configmap() -> dict[str, Any]:
    return load_one(ARGOCD / "argocd-cm-health.yaml")


# --- health ConfigMap ---------------------------------------------------------------------------


def test_health_configmap_is_an_argocd_cm_patch() -> None:
    cm = health_configmap()
    assert (cm["apiVersion"], cm["kind"], cm["metadata"]["name"]) == ("v1", "ConfigMap", "argocd-cm")
    # A patch must not move argocd-cm to another namespace, nor carry anything but health checks.
    assert "namespace" not in cm["metadata"]
    assert all(key.startswith(HEALTH_PREFIX) for key in cm["data"])


def test_health_configmap_embeds_the_lua_files_byte_for_byte() -> None:
    data = health_configmap()["data"]
    files = {path.stem: path for path in HEALTH.glob("*.lua")}
    assert {key.removeprefix(HEALTH_PREFIX) for key in data} == set(files)
    for key, script in data.items():
        path = files[key.removeprefix(HEALTH_PREFIX)]
        assert script.encode() == path.read_bytes(), (
            f"{key} differs from {path.relative_to(ARGOCD)}: copy the .lua file into argocd-cm-health.yaml"
        )


def test_every_gang_and_topology_kind_has_a_health_check() -> None:
    data = health_configmap()["data"]
    for group, kind, _ in GANG_KINDS + GITOPS_KINDS:
        key = f"{HEALTH_PREFIX}{group}_{kind}"
        assert key in data, f"no health check for {group}/{kind}"
        assert (HEALTH / f"{group}_{kind}.lua").is_file()
    assert len(data) == len(GANG_KINDS) + len(GITOPS_KINDS)


# --- Application / ApplicationSet -----------------------------------------------------------------


def application_specs() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(file, metadata, spec) of the Application and of the ApplicationSet's template."""
    app = load_one(ARGOCD / "application.yaml")
    appset = load_one(ARGOCD / "applicationset.yaml")
    assert (app["apiVersion"], app["kind"]) == ("argoproj.io/v1alpha1", "Application")
    assert (appset["apiVersion"], appset["kind"]) == ("argoproj.io/v1alpha1", "ApplicationSet")
    template = appset["spec"]["template"]
    return [
        ("application.yaml", app["metadata"], app["spec"]),
        ("applicationset.yaml", template["metadata"], template["spec"]),
    ]


@pytest.mark.parametrize("name", ["application.yaml", "applicationset.yaml"])
def test_pod_scheduling_gates_and_kai_fields_are_ignored(name: str) -> None:
    _, _, spec = next(a for a in application_specs() if a[0] == name)
    rules = {(r["group"], r["kind"]): r for r in spec["ignoreDifferences"]}
    assert rules[("", "Pod")]["jsonPointers"] == ["/spec/schedulingGates"]
    assert rules[("scheduling.run.ai", "PodGroup")]["jsonPointers"] == KAI_RUNTIME_POINTERS
    for rule in spec["ignoreDifferences"]:
        # JSON pointers only: jqPathExpressions/managedFieldsManagers do not cover a removed list item.
        assert set(rule) == {"group", "kind", "jsonPointers"}


@pytest.mark.parametrize("name", ["application.yaml", "applicationset.yaml"])
def test_sync_policy_is_gate_safe(name: str) -> None:
    _, metadata, spec = next(a for a in application_specs() if a[0] == name)
    policy = spec["syncPolicy"]
    assert policy["automated"] == {"prune": True, "selfHeal": True}
    options = set(policy["syncOptions"])
    assert options >= REQUIRED_SYNC_OPTIONS
    assert not [o for o in options if FORBIDDEN_SYNC_OPTIONS.match(o)], "Replace/Force recreate gated Pods"
    assert not [o for o in options if o.lower().startswith("serversideapply")]
    assert metadata["annotations"]["argocd.argoproj.io/compare-options"] == "ServerSideDiff=false"
    assert "argocd.argoproj.io/sync-options" not in metadata["annotations"]


def test_no_replace_or_force_anywhere_in_the_overlay() -> None:
    for path in sorted(ARGOCD.glob("*.yaml")):
        text = "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
        assert not re.search(r"\b(Replace|Force)=true\b", text), path.name


def test_applications_have_no_destination_namespace() -> None:
    """Rendered objects carry their namespaces; a destination namespace would only hide mistakes."""
    for _, _, spec in application_specs():
        assert spec["destination"] == {"server": "https://kubernetes.default.svc"}


# The ApplicationSet's name template, and the same function in Python.
APPSET_NAME_TEMPLATE = (
    'grove-{{ .path.path | replace "/" "-" | replace "_" "" | trunc 40 | trimSuffix "-" }}'
    "-{{ .path.path | sha256sum | trunc 8 }}"
)


def appset_name(path: str) -> str:
    base = path.replace("/", "-").replace("_", "")[:40].removesuffix("-")
    return f"grove-{base}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"


def go_path_match(pattern: str, path: str) -> bool:
    """Go's ``path.Match`` for the patterns used here: ``*`` never crosses a ``/``."""
    regex = "".join("[^/]*" if ch == "*" else re.escape(ch) for ch in pattern)
    return re.fullmatch(regex, path) is not None


def test_applicationset_shards_every_rendered_object_exactly_once(rendered_examples: Path) -> None:
    appset = load_one(ARGOCD / "applicationset.yaml")
    assert appset["spec"]["goTemplate"] is True
    assert appset["spec"]["template"]["metadata"]["name"] == APPSET_NAME_TEMPLATE
    assert appset["spec"]["template"]["spec"]["source"]["path"] == "{{ .path.path }}"
    (generator,) = appset["spec"]["generators"]
    patterns = [d["path"] for d in generator["git"]["directories"] if not d.get("exclude")]
    assert patterns == ["_cluster", "*/*"]

    directories = sorted(
        rel
        for rel in (p.relative_to(rendered_examples).as_posix() for p in rendered_examples.rglob("*") if p.is_dir())
        if any(go_path_match(pattern, rel) for pattern in patterns)
    )
    assert "_cluster" in directories and "inference/llama-disagg" in directories
    owners: dict[str, list[str]] = {}
    for rel in rendered_objects(rendered_examples):
        owners[rel] = [d for d in directories if str(PurePosixPath(rel).parent) == d]
    assert all(len(apps) == 1 for apps in owners.values()), {k: v for k, v in owners.items() if len(v) != 1}
    for directory in directories:
        assert (rendered_examples / directory / "kustomization.yaml").is_file()


def test_applicationset_names_are_valid_unique_and_stable() -> None:
    paths = [
        "_cluster",
        "inference/llama-disagg",
        "inference/_resources",
        "inference/resources",
        "a-b/c",
        "a/b-c",
        "a-very-long-namespace-name-for-serving/a-podcliqueset-with-an-even-longer-name",
    ]
    names = [appset_name(p) for p in paths]
    assert len(set(names)) == len(names)
    for name in names:
        assert DNS_SUBDOMAIN.match(name) and len(name) <= 63, name
    assert appset_name("inference/llama-disagg").startswith("grove-inference-llama-disagg-")
    assert appset_name("_cluster").startswith("grove-cluster-")


# --- Config Management Plugin ---------------------------------------------------------------------


def cmp_plugin() -> dict[str, Any]:
    cm = load_one(ARGOCD / "cmp-plugin.yaml")
    assert (cm["apiVersion"], cm["kind"]) == ("v1", "ConfigMap")
    plugin = yaml.safe_load(cm["data"]["plugin.yaml"])
    assert isinstance(plugin, dict)
    return plugin


def test_cmp_plugin_config() -> None:
    plugin = cmp_plugin()
    assert (plugin["apiVersion"], plugin["kind"]) == ("argoproj.io/v1alpha1", "ConfigManagementPlugin")
    assert plugin["metadata"]["name"] == "grove-gitops"
    generate = plugin["spec"]["generate"]
    assert generate["command"] == ["sh", "-c"]
    assert "grove-gitops render . --out" in generate["args"][0]
    assert "kubectl" not in generate["args"][0], "the sidecar must not need kubectl"
    assert "discover" not in plugin["spec"], "Applications opt in by name"


def test_cmp_sidecar_patch_follows_argo_cd_conventions() -> None:
    patch = load_one(ARGOCD / "cmp-sidecar-patch.yaml")
    assert (patch["kind"], patch["metadata"]["name"]) == ("Deployment", "argocd-repo-server")
    pod = patch["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert container["securityContext"]["runAsUser"] == 999
    assert container["securityContext"]["runAsNonRoot"] is True
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/var/run/argocd"]["name"] == "var-files"
    assert mounts["/home/argocd/cmp-server/plugins"]["name"] == "plugins"
    config = mounts["/home/argocd/cmp-server/config/plugin.yaml"]
    assert config["subPath"] == "plugin.yaml"
    # Its own /tmp, never the repo-server's `tmp` volume.
    assert mounts["/tmp"]["name"] not in ("tmp", "var-files", "plugins")
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[config["name"]]["configMap"]["name"] == load_one(ARGOCD / "cmp-plugin.yaml")["metadata"]["name"]
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]


# --- kustomize ------------------------------------------------------------------------------------


def build(directory: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d is not None]


def test_kubectl_kustomize_builds_the_overlay() -> None:
    docs = build(ARGOCD)
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    assert kinds == [
        ("ApplicationSet", "grove-workloads"),
        ("ConfigMap", "grove-gitops-cmp"),
    ]
    assert all(d["metadata"]["namespace"] == "argocd" for d in docs)


def test_no_whole_tree_application() -> None:
    """issue 24: `kustomize build` of the whole output grows past Argo CD's 90 s timeout (580 s
    at 300 PodCliqueSets): nothing shipped points an Application at the tree's root, and the
    single-shard template names a shard and the size limit."""
    app = load_one(ARGOCD / "application.yaml")
    path = PurePosixPath(app["spec"]["source"]["path"])
    assert str(path) not in (".", "", "/") and len(path.parts) in (1, 2), path
    assert str(path) == "_cluster" or len(path.parts) == 2
    text = (ARGOCD / "application.yaml").read_text()
    assert "Never `path: .`" in text and "beyond 10 PodCliqueSets" in text
    appset = load_one(ARGOCD / "applicationset.yaml")
    dirs = appset["spec"]["generators"][0]["git"]["directories"]
    assert all(d["path"] not in (".", "", "*") for d in dirs)


STUB_INSTALL = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  labels: {app.kubernetes.io/part-of: argocd}
data:
  url: https://argocd.example.com
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: argocd-repo-server
spec:
  selector: {matchLabels: {app.kubernetes.io/name: argocd-repo-server}}
  template:
    metadata: {labels: {app.kubernetes.io/name: argocd-repo-server}}
    spec:
      containers:
        - name: argocd-repo-server
          image: quay.io/argoproj/argocd:v3.5.0
      volumes:
        - {name: var-files, emptyDir: {}}
        - {name: plugins, emptyDir: {}}
        - {name: tmp, emptyDir: {}}
"""


def test_patches_apply_to_an_argo_cd_install(tmp_path: Path) -> None:
    """With an Argo CD install in the build, argocd-cm gains the checks and the repo-server the sidecar."""
    overlay = tmp_path / "argocd"
    shutil.copytree(ARGOCD, overlay)
    (overlay / "install.yaml").write_text(STUB_INSTALL)
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["resources"].append("install.yaml")
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))

    docs = {(d["kind"], d["metadata"]["name"]): d for d in build(overlay)}
    cm = docs[("ConfigMap", "argocd-cm")]
    assert cm["data"]["url"] == "https://argocd.example.com", "the patch must keep existing settings"
    assert cm["metadata"]["namespace"] == "argocd"
    for path in HEALTH.glob("*.lua"):
        assert cm["data"][HEALTH_PREFIX + path.stem] == path.read_text()

    pod = docs[("Deployment", "argocd-repo-server")]["spec"]["template"]["spec"]
    assert sorted(c["name"] for c in pod["containers"]) == ["argocd-repo-server", "grove-gitops-cmp"]
    volumes = {v["name"] for v in pod["volumes"]}
    assert {"var-files", "plugins", "tmp", "grove-gitops-cmp", "grove-gitops-cmp-tmp"} <= volumes


def test_every_overlay_file_is_used() -> None:
    kustomization = load_one(ARGOCD / "kustomization.yaml")
    used = set(kustomization["resources"]) | {p["path"] for p in kustomization["patches"]}
    # application.yaml: a one-shard template to copy (beside the ApplicationSet it would manage
    # that shard twice).
    assert used == {p.name for p in ARGOCD.glob("*.yaml")} - {"kustomization.yaml", "application.yaml"}
    for name in used:
        assert load_docs(ARGOCD / name), name
