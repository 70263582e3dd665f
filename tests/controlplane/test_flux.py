"""The whole GitOps loop with the real Flux on the real control plane (issue 36, part 1): nothing
simulated but the nodes (KWOK).

A developer ``git push``es a PodCliqueSet over HTTPS to a loopback forge (``git http-backend``,
tests/controlplane/gitserver.py) -> ``grove-gitops controller`` (its own process) renders the
commit and pushes the ``rendered`` branch, posting the commit status to a fake GitHub API ->
Flux's source-controller (built from its module, its own process) pulls the branch; the
kustomize-controller applies the root Kustomization at ``_flux/`` (the ``wiring:`` the render
generated), whose shard Kustomizations apply the workload -> the agent (its own process, under
its ServiceAccount token) releases the gangs -> the real kube-scheduler binds -> KWOK runs the
pods. Then, on the same loop:

- an image bump: a rolling update whose old pods go in the order ``grove-gitops plan --output
  json`` predicts;
- a ``/scale`` write on the workload's scale target survives Flux's next reconcile (requested
  with ``reconcile.fluxcd.io/requestedAt``, awaited through ``lastHandledReconcileAt``);
- a bad commit (an invalid PodCliqueSet): the commit status says failure, the rendered branch,
  Flux's artifact and every pod stay as they were;
- the workload removed from Git: Flux prunes the shard, the agent's objects are garbage
  collected, the agent retires the rendered pods (Flux never prunes a pod: prune protection).

At every observed moment the agent releases a pod only while its whole gang exists, and no pod
is bound gated (PodWatch). The loop renders the default scheduler without its Workload API
gangs: Flux drops the pods' ``spec.workloadRef`` on 1.35, so with them the agent would release
none of the pods (:func:`test_flux_drops_the_pods_workload_ref_and_the_agent_holds_them` pins
both, by turning ``gangScheduling`` on for one push and back off).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from grove_gitops.agent.kube import Kube
from grove_gitops.cli import main
from tests.controlplane.fluxengine import (
    FLUX_NS,
    KUSTOMIZE,
    SOURCE,
    Flux,
    GitForge,
    flux_controllers,
    flux_crds,
    git_forge,
    is_ready,
    kustomizations,
    request_reconcile,
)
from tests.controlplane.plane import Obj, Plane, apply_all, crd_established, stop_process, wait_until
from tests.controlplane.workloads import GangInvariant, default_scheduler_source, render, running_agent
from tests.day2.harness import bump_image
from tests.prcheck.fakegithub import FakeGitHub
from tests.prcheck.fakejson import running
from tests.support import PROJECT

NS = "cp-flux"
WORKLOAD = "llama-flux"
REPO = "workloads.git"
TOKEN = "ghs_FLUXSTATUS0123456789token"
WORKLOAD_FILE = Path("workloads") / "llm-inference" / f"{WORKLOAD}.yaml"
PODS = f"/api/v1/namespaces/{NS}/pods"
TIMELINE = 400
TARGET = f"/apis/gitops.grove.io/v1alpha1/namespaces/{NS}/podcliquescalinggroups/{WORKLOAD}-0-prefill"


class PodWatch(GangInvariant):
    """Every pod moment of the namespace, in server order, checking the agent's half of the
    gang contract: a pod is released (its gate removed) only while its whole gang exists
    (at least the PodGang's Σ minReplicas pods) and no pod is ever bound gated. Also kept: the
    order in which pods began to go (a deletion timestamp or their removal, whichever the watch
    saw first) and the pods the scheduler bound before their gang's minimum was released
    (``placed_early``: without the Workload API's gangs, or with Flux on 1.35, the scheduler has
    no gang to hold them, see :func:`test_flux_drops_the_pods_workload_ref_and_the_agent_holds_them`)."""

    def __init__(self, plane: Plane, namespace: str) -> None:
        self.retired: list[str] = []
        self.deleted: list[str] = []
        self.released: set[str] = set()
        self.placed_early: list[str] = []
        self.timeline: list[str] = []  # the last TIMELINE moments, for a failure's message
        super().__init__(plane, namespace)

    def observe(self, kind: str, pod: Any) -> None:
        self.events += 1
        name = pod.metadata.name
        gang = (pod.metadata.labels or {}).get("grove.io/podgang")
        gated, node = bool(pod.spec.scheduling_gates), pod.spec.node_name
        self.timeline = [*self.timeline[-TIMELINE:], f"{kind} {name} gated={gated} node={node} gang={gang} "
                         f"deleting={bool(pod.metadata.deletion_timestamp)} rv={pod.metadata.resource_version}"]
        if (kind == "DELETED" or pod.metadata.deletion_timestamp) and name not in self.retired:
            self.retired.append(name)
        if kind == "DELETED":
            self.deleted.append(name)
            self.pods.pop(name, None)
            return
        self.pods[name] = (gated, node, gang)
        if node and gated:
            self.violations.append(f"{name} bound while gated")
        if gang is None:
            return
        minimum = self.gang_minimum(gang)
        if not gated and name not in self.released:
            self.released.add(name)
            present = sum(1 for _, _, g in self.pods.values() if g == gang)
            if minimum is None or present < minimum:
                self.violations.append(f"{name} released with {present} pods of gang {gang} present, minimum {minimum}")
        if node and name not in self.bound:
            self.bound.add(name)
            released = sum(1 for g_, _, g in self.pods.values() if g == gang and not g_)
            if minimum is None or released < minimum:
                self.placed_early.append(name)


@dataclass
class Loop:
    """One module's loop: the developer's clone, the forge, Flux, the controller, the agent."""

    kube: Kube
    tmp: Path
    work: Path
    forge: GitForge
    flux: Flux
    github: FakeGitHub
    watch: PodWatch
    logs: list[Path] = field(default_factory=list)
    first_ready_seconds: float = 0.0

    def git(self, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run(["git", *args], cwd=cwd or self.work, env=self.forge.git_env(), capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
        return proc.stdout.strip()

    def push(self, message: str) -> str:
        """Commit everything in the clone and ``git push`` it to the forge; the commit's sha."""
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        self.git("push", "-q", "origin", "main")
        return self.git("rev-parse", "HEAD")

    def rendered_head(self) -> str:
        out = self.git("ls-remote", self.forge.url(REPO), "refs/heads/rendered")
        return out.split()[0] if out else ""

    def desired_pods(self) -> dict[str, str]:
        """Pod name -> hostname (its slot) of what Git holds now, rendered as the controller does."""
        return {o["metadata"]["name"]: o["spec"]["hostname"] for o in render(self.work) if o["kind"] == "Pod"}

    def pods(self) -> list[Obj]:
        return list(self.kube.raw("GET", PODS)["items"])

    def ready_pods(self) -> set[str]:
        return {p["metadata"]["name"] for p in self.pods()
                if not p["metadata"].get("deletionTimestamp") and not p["spec"].get("schedulingGates")
                and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])}

    def status_of(self, sha: str) -> list[str]:
        return [s["state"] for s in self.github.statuses if s["sha"] == sha]

    def diagnostics(self) -> str:
        tails = [f"--- {p.name}\n{p.read_text(errors='replace')[-2500:]}" for p in self.logs if p.exists()]
        flux = {n: (k.get("status") or {}).get("conditions") for n, k in kustomizations(self.kube).items()}
        return "\n".join([f"kustomizations: {json.dumps(flux)[:3000]}", self.flux.log_tail(2500), *tails])

    def wait(self, what: str, predicate: Callable[[], bool], timeout: float) -> None:
        """Wait for ``predicate``; fail at once if a Flux controller exits, with every log."""
        def check() -> bool:
            if not self.flux.running():
                raise AssertionError(f"a Flux controller exited while waiting for {what}")
            return predicate()

        try:
            wait_until(what, check, timeout=timeout, interval=0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.diagnostics()}") from None

    def shard(self) -> Obj:
        (found,) = [k for k in kustomizations(self.kube).values() if k["spec"]["path"] == f"./{NS}/{WORKLOAD}"]
        return found

    def wait_deployed(self, what: str, timeout: float) -> None:
        """Exactly Git's pods Ready, nothing else left in the namespace, every Kustomization Ready."""
        def done() -> bool:
            names = {p["metadata"]["name"] for p in self.pods()}
            wanted = set(self.desired_pods())
            return (self.ready_pods() == wanted and names == wanted
                    and all(is_ready(k) for k in kustomizations(self.kube).values()))

        self.wait(what, done, timeout)


def set_gang_scheduling(source: Path, on: bool) -> None:
    """The default-scheduler profile's ``gangScheduling`` in the source's OperatorConfiguration."""
    config = source / "config" / "operator-configuration.yaml"
    text = config.read_text()
    before, after = (("false", "true") if on else ("true", "false"))
    assert f"gangScheduling: {before}\n" in text
    config.write_text(text.replace(f"gangScheduling: {before}\n", f"gangScheduling: {after}\n"))


def wiring(forge: GitForge) -> str:
    """The RenderConfiguration's ``wiring:`` (docs/gitops-wiring.md) for this loop: Flux only;
    grove-gitops' CRDs are installed with the agent (the session's ``installed``), so no
    ``dependsOn`` a CRDs Kustomization."""
    return (f"wiring:\n  repoURL: {forge.url(REPO)}\n  targetRevision: rendered\n  flux:\n"
            f"    sourceRef: {{kind: GitRepository, name: grove-rendered}}\n    namespace: {FLUX_NS}\n"
            "    timeout: 2m\n    crdsKustomization: null\n")


def flux_objects(forge: GitForge) -> list[Obj]:
    """What a Flux user writes once (overlays/flux/gitrepository.yaml and docs/gitops-wiring.md's
    root Kustomization), pointed at the loopback forge and trusting its CA."""
    return [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "grove-rendered-ca", "namespace": FLUX_NS},
         "stringData": {"ca.crt": forge.ca.read_text()}},
        {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
         "metadata": {"name": "grove-rendered", "namespace": FLUX_NS},
         "spec": {"interval": "2s", "timeout": "20s", "url": forge.url(REPO), "ref": {"branch": "rendered"},
                  "secretRef": {"name": "grove-rendered-ca"}}},
        {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
         "metadata": {"name": "grove-wiring", "namespace": FLUX_NS},
         "spec": {"interval": "10m", "sourceRef": {"kind": "GitRepository", "name": "grove-rendered"},
                  "path": "./_flux", "prune": True}},
    ]


def controller_process(loop: Loop, log: Path) -> subprocess.Popen[bytes]:
    """``grove-gitops controller`` as its own process, polling the forge every second."""
    exe = Path(os.environ.get("VIRTUAL_ENV", PROJECT / ".venv")) / "bin" / "grove-gitops"
    env = {**loop.forge.git_env(), "GROVE_GITOPS_STATUS_TOKEN": TOKEN}
    with log.open("wb") as handle:
        return subprocess.Popen(
            [str(exe), "controller", "--repo", loop.forge.url(REPO), "--source-branch", "main",
             "--output-branch", "rendered", "--workdir", str(loop.tmp / "controller"), "--interval", "1",
             "--heartbeat-interval", "0", "--jobs", "1", "--status-forge", "github",
             "--status-api-url", loop.github.url, "--status-repo", loop.github.repo],
            stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=loop.tmp)


@pytest.fixture(scope="module")
def loop(installed: Plane, agent_kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    tmp = tmp_path_factory.mktemp("flux")
    kube = installed.kube()
    crds = flux_crds()
    apply_all(kube, crds)
    for crd in crds:
        wait_until("Flux's CRDs established", functools.partial(crd_established, kube, crd["metadata"]["name"]))
    apply_all(kube, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FLUX_NS}}])
    with git_forge(installed, tmp / "forge") as forge, running(FakeGitHub(token=TOKEN).start()) as github, \
            flux_controllers(installed, tmp / "flux") as flux:
        # The developer's clone holds the source without the workload: its first push renders
        # the cluster-wide objects only.
        source = default_scheduler_source(tmp, NS, (WORKLOAD,))
        set_gang_scheduling(source, False)
        config = source / "config" / "render-configuration.yaml"
        text = config.read_text()
        assert "gitops: both\n" in text
        config.write_text(text.replace("gitops: both\n", "gitops: flux\n") + wiring(forge))
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(forge.root / REPO)], check=True, timeout=60)
        work = tmp / "work"
        watch = PodWatch(installed, NS)
        loop = Loop(kube, tmp, work, forge, flux, github, watch)
        loop.git("clone", "-q", forge.url(REPO), str(work), cwd=tmp)
        shutil.copytree(source, work, dirs_exist_ok=True)
        workload = work / WORKLOAD_FILE
        (tmp / "workload.yaml").write_text(workload.read_text())
        workload.unlink()
        loop.push("cluster-wide objects")
        controller_log, agent_log = tmp / "controller.log", tmp / "agent.log"
        loop.logs += [controller_log, agent_log, forge.root.parent / "gitserver.log"]
        controller = controller_process(loop, controller_log)
        try:
            # The GitRepository once the branch exists: a first fetch of a missing branch would
            # put source-controller into its failure backoff.
            loop.wait("the first render pushed", lambda: bool(loop.rendered_head()), timeout=60)
            apply_all(kube, flux_objects(forge))
            with running_agent(agent_kubeconfig, agent_log, "--namespace", NS, "--resync", "1"):
                loop.wait("the cluster shard Ready", lambda: len(kustomizations(kube)) == 2
                          and all(is_ready(k) for k in kustomizations(kube).values()), timeout=90)
                yield loop
                assert flux.running(), flux.log_tail()
                assert controller.poll() is None, controller_log.read_text()[-3000:]
        finally:
            stop_process(controller)
            watch.close()
    # Flux's objects keep their finalizers once the controllers are gone: release them, then free
    # the namespaces for later modules.
    for plural, api in (("kustomizations", KUSTOMIZE), ("gitrepositories", SOURCE)):
        for obj in kube.raw("GET", f"{api}/namespaces/{FLUX_NS}/{plural}")["items"]:
            path = f"{api}/namespaces/{FLUX_NS}/{plural}/{obj['metadata']['name']}"
            kube.raw("PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
            kube.raw("DELETE", path)
    kube.raw("DELETE", f"/api/v1/namespaces/{NS}")
    kube.raw("DELETE", f"/api/v1/namespaces/{FLUX_NS}")


@pytest.fixture
def checked(loop: Loop) -> Iterator[Loop]:
    """After each test: no partial gang placed at any observed moment, Flux running."""
    yield loop
    assert loop.watch.events > 0
    if loop.watch.violations:
        events = loop.kube.raw("GET", f"/api/v1/namespaces/{NS}/events")["items"]
        told = [f"{e.get('lastTimestamp') or e.get('eventTime')} {e['involvedObject']['kind']}/{e['involvedObject']['name']} "
                f"{e['reason']}: {e.get('message', '')[:200]}" for e in events]
        raise AssertionError("\n".join([*loop.watch.violations, *loop.watch.timeline, "events:", *told]))
    assert loop.flux.running(), loop.flux.log_tail()


def plan_steps(base: Path, head: Path) -> list[list[str]]:
    """``grove-gitops plan BASE HEAD --output json``: the hostnames of each step of the workload."""
    result = CliRunner().invoke(main, ["plan", str(base), str(head), "--output", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (entry,) = [p for p in json.loads(result.stdout)["podcliquesets"] if p["name"] == WORKLOAD]
    return [list(step["pods"]) for step in entry["steps"]]


def test_a_pushed_podcliqueset_runs_through_the_controller_flux_and_the_agent(checked: Loop) -> None:
    loop = checked
    shutil.copy(loop.tmp / "workload.yaml", loop.work / WORKLOAD_FILE)
    t0 = time.monotonic()
    sha = loop.push(f"add {WORKLOAD}")
    loop.wait_deployed("every pod of the pushed workload Ready", timeout=150)
    loop.first_ready_seconds = time.monotonic() - t0
    print(f"\npush -> all {len(loop.desired_pods())} pods Ready: {loop.first_ready_seconds:.1f} s")
    # The controller rendered this very commit, said so on the forge, and Flux applied its render.
    assert loop.status_of(sha)[-1] == "success", loop.github.statuses
    rendered = loop.rendered_head()
    repo = loop.kube.raw("GET", f"{SOURCE}/namespaces/{FLUX_NS}/gitrepositories/grove-rendered")
    assert repo["status"]["artifact"]["revision"] == f"rendered@sha1:{rendered}"
    loop.git("fetch", "-q", "origin", "rendered")
    assert f"Grove-Render-Dry-Sha: {sha}" in loop.git("log", "-1", "--format=%B", "FETCH_HEAD")
    shard = loop.shard()
    assert shard["status"]["lastAppliedRevision"] == f"rendered@sha1:{rendered}"
    # Flux applied Git's objects (its field manager) and created Git's pods; the agent's scale
    # target is not in Git (autoscaling.md): Flux has no say over its count.
    pod = loop.pods()[0]
    assert any(m.get("manager") == "kustomize-controller" for m in pod["metadata"]["managedFields"])
    assert loop.kube.raw("GET", TARGET)["spec"]["replicas"] == 2
    inventory = {e["id"] for e in shard["status"]["inventory"]["entries"]}
    assert f"{NS}_{WORKLOAD}_gitops.grove.io_PodCliqueSet" in inventory, inventory
    assert not any(i.endswith("_PodCliqueScalingGroup") for i in inventory), inventory


def test_flux_drops_the_pods_workload_ref_and_the_agent_holds_them(checked: Loop) -> None:
    """A finding of this tier (docs/gitops-wiring.md, "Verified against real Flux"): Flux's
    server-side apply normalises every Pod through client-go's typed PodSpec, which in
    k8s.io/api v0.36 (Flux 2.9) no longer has ``spec.workloadRef`` (1.36 replaced it with
    ``spec.schedulingGroup``). On a 1.35 cluster the default-scheduler backend's pods lose
    their link to the Workload's gang, and the real scheduler would place them pod by pod. The
    agent sees it (the PodGang's ``gitops.grove.io/pod-binding`` names the field): turning
    ``gangScheduling`` on renames every pod, and the rollout takes no step, since no new pod
    could be released; every old pod stays Ready. Turning it off again brings the old pods'
    PodGangs back, and the unreleased new pods are removed. This test fails once a Flux release
    keeps the field."""
    loop = checked
    old = loop.desired_pods()
    mark = len(loop.watch.retired)
    set_gang_scheduling(loop.work, True)
    git = [o for o in render(loop.work) if o["kind"] == "Pod"]
    assert git and all(o["spec"]["workloadRef"]["name"] for o in git)  # what Git holds
    assert not set(loop.desired_pods()) & set(old)
    loop.push("gang scheduling on")
    base = f"/apis/scheduler.grove.io/v1alpha1/namespaces/{NS}/podgangs/{WORKLOAD}-0"

    def held() -> bool:
        conditions = (loop.kube.raw("GET", base).get("status") or {}).get("conditions") or []
        return any(c["type"] == "RolloutBlocked" and c["status"] == "True" and c["reason"] == "NewPodUnbound"
                   and "/spec/workloadRef is missing" in c["message"] for c in conditions)

    loop.wait("the rollout held: its new pods lack spec.workloadRef", held, timeout=120)
    live = {p["metadata"]["name"]: p for p in loop.pods()}
    new = [live[o["metadata"]["name"]] for o in git if o["metadata"]["name"] in live]
    assert new and all("workloadRef" not in p["spec"] for p in new)  # what Flux applied
    assert all(p["spec"].get("schedulingGates") for p in new)  # none released
    workloads = loop.kube.raw("GET", f"/apis/scheduling.k8s.io/v1alpha1/namespaces/{NS}/workloads")["items"]
    assert {w["metadata"]["name"] for w in workloads} == {o["spec"]["workloadRef"]["name"] for o in git}
    assert set(old) <= loop.ready_pods() and loop.watch.retired[mark:] == []  # no old pod went
    set_gang_scheduling(loop.work, False)
    assert loop.desired_pods() == old
    loop.push("gang scheduling off")
    loop.wait_deployed("the old pods alone again, the unreleased new ones removed", timeout=120)
    assert set(loop.watch.retired[mark:]) == {p["metadata"]["name"] for p in new}


def test_an_image_bump_rolls_the_pods_in_the_plans_order(checked: Loop) -> None:
    loop = checked
    base = loop.tmp / "base"
    shutil.copytree(loop.work, base, ignore=shutil.ignore_patterns(".git"))
    old = loop.desired_pods()
    bump_image(loop.work, name=WORKLOAD)
    new = loop.desired_pods()
    assert sorted(new.values()) == sorted(old.values()) and not set(new) & set(old)  # every slot changes
    steps = plan_steps(base, loop.work)
    assert sorted(h for step in steps for h in step) == sorted(old.values())
    mark = len(loop.watch.retired)
    t0 = time.monotonic()
    loop.push("bump the images")
    loop.wait_deployed("every slot Ready with its new pod, the old ones gone", timeout=180)
    print(f"\nimage bump push -> all {len(new)} new pods Ready: {time.monotonic() - t0:.1f} s")
    step_of = {host: i for i, step in enumerate(steps) for host in step}
    order = [step_of[old[name]] for name in loop.watch.retired[mark:] if name in old]
    assert order == sorted(order) and sorted(set(order)) == list(range(len(steps))), (order, steps)
    assert not set(loop.watch.retired[mark:]) - set(old)  # no new pod went


def test_a_scale_write_survives_fluxs_next_reconcile(checked: Loop) -> None:
    loop = checked
    loop.kube.raw("PATCH", f"{TARGET}/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    prefill = f"{WORKLOAD}-0-prefill-"

    def scaled() -> bool:
        status = loop.kube.raw("GET", TARGET).get("status") or {}
        pods = [n for n in loop.ready_pods() if n.startswith(prefill)]
        return len(pods) == 12 and status.get("replicas") == 3 and status.get("readyReplicas") == 3

    loop.wait("the prefill group at 3 replicas", scaled, timeout=90)
    before = loop.ready_pods()
    gone = len(loop.watch.deleted)
    shard = request_reconcile(loop.kube, f"{KUSTOMIZE}/namespaces/{FLUX_NS}/kustomizations/{loop.shard()['metadata']['name']}")
    assert shard["status"]["lastAppliedRevision"] == f"rendered@sha1:{loop.rendered_head()}"
    assert loop.kube.raw("GET", TARGET)["spec"]["replicas"] == 3
    assert loop.ready_pods() == before and loop.watch.deleted[gone:] == []


def test_a_bad_commit_fails_its_status_and_applies_nothing(checked: Loop) -> None:
    loop = checked
    workload = loop.work / WORKLOAD_FILE
    text = workload.read_text()
    assert "spec:\n  replicas: 1\n" in text
    workload.write_text(text.replace("spec:\n  replicas: 1\n", "spec:\n  replicas: -2\n", 1))
    rendered = loop.rendered_head()
    pods = {p["metadata"]["name"]: p["metadata"]["uid"] for p in loop.pods()}
    sha = loop.push("an invalid PodCliqueSet")
    loop.wait("the failure status on the bad commit", lambda: "failure" in loop.status_of(sha), timeout=60)
    (failure,) = [s for s in loop.github.statuses if s["sha"] == sha and s["state"] == "failure"]
    assert "replicas" in failure["description"], failure
    # Nothing new reached Flux: the branch, the artifact, the shard and every pod as they were.
    assert loop.rendered_head() == rendered
    repo = request_reconcile(loop.kube, f"{SOURCE}/namespaces/{FLUX_NS}/gitrepositories/grove-rendered")
    assert repo["status"]["artifact"]["revision"] == f"rendered@sha1:{rendered}"
    assert loop.shard()["status"]["lastAppliedRevision"] == f"rendered@sha1:{rendered}"
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in loop.pods()} == pods


def test_a_workload_removed_from_git_is_pruned_and_garbage_collected(checked: Loop) -> None:
    loop = checked
    (loop.work / WORKLOAD_FILE).unlink()
    sha = loop.push(f"remove {WORKLOAD}")
    loop.wait("the removal rendered", lambda: "success" in loop.status_of(sha), timeout=60)

    def leftovers() -> list[str]:
        out = [p["metadata"]["name"] for p in loop.pods()]
        for plural, api in (("podgangs", "scheduler.grove.io/v1alpha1"), ("workloads", "scheduling.k8s.io/v1alpha1"),
                            ("podcliquescalinggroups", "gitops.grove.io/v1alpha1"),
                            ("podcliquesets", "gitops.grove.io/v1alpha1"), ("services", "v1")):
            base = f"/apis/{api}" if "/" in api else f"/api/{api}"
            out += [f"{plural}/{o['metadata']['name']}" for o in loop.kube.raw("GET", f"{base}/namespaces/{NS}/{plural}")["items"]]
        return out

    shard = loop.shard()["metadata"]["name"]
    loop.wait("the shard Kustomization pruned", lambda: shard not in kustomizations(loop.kube), timeout=60)
    assert len(kustomizations(loop.kube)) == 2  # the root and the cluster shard stay
    loop.wait("the workload's objects gone from the cluster", lambda: leftovers() == [], timeout=120)
