"""The overlays are kustomize bases a user references, never copies: every customisation
docs/deploy.md shows (the ``<!-- kustomize-example: NAME -->`` snippets) is built here with
``kubectl kustomize`` from a directory outside the project, and its result is checked."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from .helpers import (
    DEPLOY_DOC,
    LEASE_NAME,
    LIFTER_SA,
    NAMESPACED_SA,
    PROJECT,
    WATCHED_NAMESPACE,
    Authorizer,
    Request,
    build,
    container,
    deployment_params,
    find,
    one,
    require_kubectl,
)

Objects = list[dict[str, Any]]
_EXAMPLE = re.compile(r"<!-- kustomize-example: ([a-z0-9-]+) -->\n```yaml\n(.*?)```", re.S)


def doc_examples() -> dict[str, str]:
    """The named kustomization snippets of docs/deploy.md."""
    found = _EXAMPLE.findall(DEPLOY_DOC.read_text())
    names = [name for name, _ in found]
    assert len(names) == len(set(names)), names
    return dict(found)


def build_example(tmp_path: Path, name: str) -> Objects:
    """Write the snippet ``name`` (``<grove-gitops>`` = a relative path to this checkout, as a
    user's repository would hold it) into its own directory and build it."""
    kubectl = require_kubectl()
    directory = tmp_path / name
    directory.mkdir()
    text = doc_examples()[name].replace("<grove-gitops>", os.path.relpath(PROJECT, directory))
    (directory / "kustomization.yaml").write_text(text)
    proc = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{name}:\n{proc.stderr}"
    return [d for d in yaml.safe_load_all(proc.stdout) if d is not None]


def _namespaced_ids(objs: Objects) -> set[tuple[str, str | None]]:
    return {(o["kind"], o["metadata"].get("namespace")) for o in objs}


def test_every_example_is_tested() -> None:
    assert set(doc_examples()) == {
        "namespaced-llm-prod",
        "drift-events-llm-prod",
        "namespaced-llm-dev",
        "cluster-wide-ops",
        "settings-and-image",
        "volcano-with-claims",
    }


def test_namespace_moves_roles_bindings_subjects_and_watch_namespace(tmp_path: Path) -> None:
    """issue 24: `namespace: llm-prod` on the namespaced overlay moves the Role, the RoleBinding,
    its subjects and the agent's watched namespace together."""
    objs = build_example(tmp_path, "namespaced-llm-prod")
    cluster_kinds = {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}
    assert not find(objs, "Namespace")  # never renames anything onto the user's namespace
    for obj in objs:
        assert obj["metadata"].get("namespace") == (None if obj["kind"] in cluster_kinds else "llm-prod"), obj["metadata"]
    for binding in find(objs, "RoleBinding") + find(objs, "ClusterRoleBinding"):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAMESPACED_SA, "namespace": "llm-prod"}]
    params = deployment_params(one(objs, "Deployment"), "gate-lifter")
    assert params["namespace"] == params["lease_namespace"] == "llm-prod"
    authz = Authorizer(objs, "llm-prod", NAMESPACED_SA)
    for ns, allowed in (("llm-prod", True), (WATCHED_NAMESPACE, False), ("grove-gitops", False)):
        assert authz.allows(Request("list", "scheduler.grove.io", "podgangs", ns, None)) is allowed, ns
        assert authz.allows(Request("patch", "", "pods", ns, "p")) is allowed, ns
        assert authz.allows(Request("update", "coordination.k8s.io", "leases", ns, LEASE_NAME)) is allowed, ns


def test_drift_events_follow_the_agent(tmp_path: Path) -> None:
    agent = build_example(tmp_path, "namespaced-llm-prod")
    events = build_example(tmp_path, "drift-events-llm-prod")
    assert _namespaced_ids(events) == {("Role", "default"), ("RoleBinding", "default")}
    drift = Request("create", "events.k8s.io", "events", "default", None)
    assert Authorizer(agent + events, "llm-prod", NAMESPACED_SA).allows(drift)
    assert not Authorizer(agent, "llm-prod", NAMESPACED_SA).allows(drift)


def test_two_namespaced_agents_do_not_collide(tmp_path: Path) -> None:
    """Applying both builds to one cluster: every object either has its own identity or is
    byte-for-byte the same (the CRDs); each agent's bindings name its own ServiceAccount."""
    prod = build_example(tmp_path, "namespaced-llm-prod")
    dev = build_example(tmp_path, "namespaced-llm-dev")

    def ident(o: dict[str, Any]) -> tuple[str, str, str | None, str]:
        return (o["apiVersion"], o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])

    by_id = {ident(o): o for o in prod}
    shared = [ident(o) for o in dev if ident(o) in by_id]
    assert {i[1] for i in shared} == {"CustomResourceDefinition"}
    assert all(by_id[ident(o)] == o for o in dev if ident(o) in by_id)
    crb = one(dev, "ClusterRoleBinding")
    assert crb["metadata"]["name"] == "grove-gitops-gate-lifter-namespaced-llm-dev"
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": f"{NAMESPACED_SA}-llm-dev", "namespace": "llm-dev"}]
    deployment = one(dev, "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == f"{NAMESPACED_SA}-llm-dev"
    params = deployment_params(deployment, "gate-lifter")
    assert params["namespace"] == "llm-dev"
    authz = Authorizer(prod + dev, "llm-dev", f"{NAMESPACED_SA}-llm-dev")
    assert authz.allows(Request("list", "scheduler.grove.io", "podgangs", "llm-dev", None))
    assert not authz.allows(Request("list", "scheduler.grove.io", "podgangs", "llm-prod", None))
    assert authz.allows(Request("list", "grove.io", "clustertopologybindings", None, None))
    # The Lease name is the same literal in both: one Lease per namespace, each granted its own.
    assert authz.allows(Request("update", "coordination.k8s.io", "leases", "llm-dev", params["lease_name"]))


def test_cluster_wide_agent_moves_with_its_lease(tmp_path: Path) -> None:
    objs = build_example(tmp_path, "cluster-wide-ops")
    namespace = one(objs, "Namespace")
    assert namespace["metadata"]["name"] == "grove-ops"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    params = deployment_params(one(objs, "Deployment"), "gate-lifter")
    assert params["namespace"] is None and params["lease_namespace"] == "grove-ops"
    authz = Authorizer(objs, "grove-ops", LIFTER_SA)
    assert authz.allows(Request("update", "coordination.k8s.io", "leases", "grove-ops", LEASE_NAME))
    assert authz.allows(Request("list", "scheduler.grove.io", "podgangs", None, None))
    assert not Authorizer(objs).allows(Request("list", "scheduler.grove.io", "podgangs", None, None))


def test_settings_by_name_and_image(tmp_path: Path) -> None:
    objs = build_example(tmp_path, "settings-and-image")
    controller = one(objs, "Deployment", "grove-gitops-controller")
    agent = one(objs, "Deployment", "grove-gitops-gate-lifter")
    for deployment, name in ((controller, "controller"), (agent, "gate-lifter")):
        assert container(deployment, name)["image"] == "ghcr.io/acme/grove-gitops:v0.1.0"
    ctl = deployment_params(controller, "controller")
    assert ctl["repo"] == "https://git.acme.example/ml/inference.git"
    assert ctl["source_branch"] == "main"  # the other settings are untouched
    lifter = deployment_params(agent, "gate-lifter")
    assert lifter["grace"] == 120.0
    assert lifter["lease_name"] == LEASE_NAME
    # The patch replaced by name: still one variable each.
    names = [e["name"] for e in container(controller, "controller")["env"]]
    assert names.count("GROVE_GITOPS_CONTROLLER_REPO") == 1


@pytest.mark.parametrize("overlay", ["gate-lifter/base", "controller"])
def test_no_setting_is_positional(overlay: str) -> None:
    """Every option is set by name (env), so no overlay has to patch an args index."""
    for deployment in find(build(PROJECT / "overlays" / overlay), "Deployment"):
        for ctr in deployment["spec"]["template"]["spec"]["containers"]:
            assert len(ctr["args"]) == 1 and not ctr["args"][0].startswith("-"), ctr["args"]


def _option_envvars(command: str) -> set[str]:
    """GROVE_GITOPS_<COMMAND>_<OPTION> of every option of ``command`` (click's auto_envvar_prefix
    naming: the option's name upper-cased)."""
    import click

    from grove_gitops.cli import main

    with click.Context(main) as ctx:
        cmd = main.get_command(ctx, command)
        assert cmd is not None
    prefix = f"GROVE_GITOPS_{command.upper().replace('-', '_')}_"
    out: set[str] = set()
    for p in cmd.params:
        if isinstance(p, click.Option) and p.name:
            # The CLI names each variable explicitly (grove_gitops/cli/envvars.py); else click's rule.
            out.add(p.envvar if isinstance(p.envvar, str) else prefix + p.name.upper())
    return out


@pytest.mark.parametrize(("overlay", "name"), [("gate-lifter/namespaced", "gate-lifter"), ("controller", "controller")])
def test_every_setting_names_a_real_option(overlay: str, name: str) -> None:
    """click ignores an environment variable it does not know, so a typo (…_LEASENAME) would
    silently fall back to the default: every GROVE_GITOPS_<COMMAND>_* the manifests set is an
    option of the command they run."""
    deployment = one(build(PROJECT / "overlays" / overlay), "Deployment")
    ctr = container(deployment, name)
    command = ctr["args"][0]
    prefix = f"GROVE_GITOPS_{command.upper()}_"
    names = {e["name"] for e in ctr["env"] if e["name"].startswith(prefix)}
    assert names and names <= _option_envvars(command), names - _option_envvars(command)


def test_components_choose_the_backend_and_claims(tmp_path: Path) -> None:
    """issue 31.7: without the overlay's KAI component, Volcano and claims only: the agent may
    write Volcano PodGroups and ResourceClaims in every namespace, and no other backend's kinds."""
    objs = build_example(tmp_path, "volcano-with-claims")
    authz = Authorizer(objs, "grove-gitops", LIFTER_SA)
    for verb in ("get", "list", "create", "delete"):
        assert authz.allows(Request(verb, "scheduling.volcano.sh", "podgroups", "team-a", "x")), verb
    for verb in ("list", "create", "delete"):
        assert authz.allows(Request(verb, "resource.k8s.io", "resourceclaims", "team-a", "x")), verb
    for group, resource in (
        ("scheduling.run.ai", "podgroups"),
        ("scheduling.k8s.io", "workloads"),
        ("scheduling.x-k8s.io", "podgroups"),
        ("scheduling.sigs.k8s.io", "podgroups"),
    ):
        assert not authz.allows(Request("get", group, resource, "team-a", "x")), group
    assert not authz.allows(Request("get", "kai.scheduler", "topologies", None, "x"))
    assert find(objs, "ValidatingAdmissionPolicy")


def test_namespaced_agent_with_a_suffix_gets_its_component(tmp_path: Path) -> None:
    """The llm-dev example (nameSuffix) with the KAI component: PodGroups in llm-dev only, the
    KAI Topology read in its ClusterRole, which still holds cluster-scoped reads only."""
    dev = build_example(tmp_path, "namespaced-llm-dev")
    authz = Authorizer(dev, "llm-dev", f"{NAMESPACED_SA}-llm-dev")
    assert authz.allows(Request("create", "scheduling.run.ai", "podgroups", "llm-dev", None))
    assert not authz.allows(Request("create", "scheduling.run.ai", "podgroups", "team-b", None))
    assert authz.allows(Request("get", "kai.scheduler", "topologies", None, "x"))
    cluster_role = one(dev, "ClusterRole")
    assert {g for rule in cluster_role["rules"] for g in rule["apiGroups"]} == {"grove.io", "kai.scheduler"}
