"""The controller Deployment (``overlays/controller``): one writer, Git token from a Secret, no API access."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from grove_gitops.gitops.repo import TOKEN_ENV
from tests.schemas import builtin_errors

from .helpers import CONTROLLER, KUBE_VERSIONS, container, deployment_params, expand_args, mount_for, one, pod_spec
from .test_gate_lifter import assert_hardened

Objects = list[dict[str, Any]]
SECRET_NAME = "grove-gitops-git-credentials"


def _deployment(objs: Objects) -> dict[str, Any]:
    return one(objs, "Deployment", "grove-gitops-controller")


def test_single_writer(controller_objs: Objects) -> None:
    deployment = _deployment(controller_objs)
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert_hardened(deployment)


def test_no_api_token(controller_objs: Objects) -> None:
    deployment = _deployment(controller_objs)
    spec = pod_spec(deployment)
    sa = one(controller_objs, "ServiceAccount")
    assert spec["serviceAccountName"] == sa["metadata"]["name"]
    assert sa["automountServiceAccountToken"] is False
    assert spec["automountServiceAccountToken"] is False


def test_git_token_comes_from_the_secret(controller_objs: Objects) -> None:
    ctr = container(_deployment(controller_objs), "controller")
    env = {e["name"]: e for e in ctr["env"]}
    assert TOKEN_ENV == "GROVE_GITOPS_GIT_TOKEN"
    assert env[TOKEN_ENV] == {
        "name": TOKEN_ENV,
        "valueFrom": {"secretKeyRef": {"name": SECRET_NAME, "key": "token", "optional": False}},
    }
    # The token appears nowhere else: not in args, not as a literal value, not via envFrom.
    assert "envFrom" not in ctr
    assert not any("token" in a.lower() for a in ctr["args"])
    # The commit-status token (issue 24 §4) is the only other secret, optional: no key, no status.
    assert env["GROVE_GITOPS_STATUS_TOKEN"]["valueFrom"] == {
        "secretKeyRef": {"name": SECRET_NAME, "key": "status-token", "optional": True}
    }
    secret_env = {e["name"] for e in ctr["env"] if "secretKeyRef" in (e.get("valueFrom") or {})}
    assert secret_env == {TOKEN_ENV, "GROVE_GITOPS_STATUS_TOKEN"}
    assert not [v for v in pod_spec(_deployment(controller_objs)).get("volumes", []) if "secret" in v]


def test_secret_example_matches_and_is_not_applied(controller_objs: Objects) -> None:
    assert not [o for o in controller_objs if o["kind"] == "Secret"]
    kustomization = yaml.safe_load((CONTROLLER / "kustomization.yaml").read_text())
    assert "secret-example.yaml" not in kustomization["resources"]
    secret = yaml.safe_load((CONTROLLER / "secret-example.yaml").read_text())
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == SECRET_NAME
    assert secret["metadata"]["namespace"] == _deployment(controller_objs)["metadata"]["namespace"]
    assert set(secret["stringData"]) == {"token"}
    for version in KUBE_VERSIONS:
        assert builtin_errors(secret, version) == []


def test_writable_paths_are_empty_dirs(controller_objs: Objects) -> None:
    deployment = _deployment(controller_objs)
    ctr = container(deployment, "controller")
    params = deployment_params(deployment, "controller")
    workdir = Path(params["workdir"])
    # The clone and its lock file (.<name>.lock next to it, grove_gitops/gitops/repo.py) are writable.
    for path in (workdir, workdir.parent / f".{workdir.name}.lock"):
        volume = mount_for(deployment, ctr, str(path))
        assert volume is not None and "emptyDir" in volume, path
    assert mount_for(deployment, ctr, str(workdir.parent)) is not None
    # HOME (git's config lookups, ~/.cache default) and /tmp (the GIT_ASKPASS helper) too.
    home = {e["name"]: e.get("value") for e in ctr["env"]}["HOME"]
    for path in (home, "/tmp"):
        volume = mount_for(deployment, ctr, path)
        assert volume is not None and "emptyDir" in volume, path


def test_branch_mode_args(controller_objs: Objects, lifter_objs: Objects) -> None:
    deployment = _deployment(controller_objs)
    ctr = container(deployment, "controller")
    assert expand_args(deployment, ctr) == ["controller"]  # every setting by name, in env
    params = deployment_params(deployment, "controller")
    assert params["repo"].startswith("https://")
    assert params["output_branch"] != params["source_branch"]  # branch mode
    assert params["once"] is False
    host, _, port = params["metrics_address"].rpartition(":")
    assert host == "0.0.0.0" and int(port) == 8080
    assert {p["name"]: p["containerPort"] for p in ctr["ports"]} == {"http-metrics": 8080}
    for probe in ("livenessProbe", "readinessProbe"):
        assert ctr[probe]["httpGet"] == {"path": "/healthz", "port": 8080}
    # One image (the Dockerfile's) for both processes.
    assert ctr["image"] == container(one(lifter_objs, "Deployment"), "gate-lifter")["image"]
