"""The day-2 scenario world of tests/day2/harness.py on the real control plane.

The fake-server scenarios' machinery, reused as it is: the applier (Argo CD waves and delays,
holds that stall objects, Flux's one batch), the observer (every pod and PodGang moment from a
watch) and the invariants checked over every moment (no partial gang released, no wanted slot
emptied before its replacement existed, the bystander PodCliqueSet never touched). What
differs on the real plane:

- the agent runs as its own process (``grove-gitops agent``) under the overlay's ServiceAccount
  token, limited to the scenario's namespace;
- the real kube-scheduler binds released pods; the in-process kubelet of tests/day2/kubelet.py
  (``binds=False``) starts them, withholds or fails them on the test's command and ends graceful
  deletions, and the node simulator leaves the namespace to it (label
  :data:`~tests.controlplane.nodesim.HANDED_OFF`);
- the example renders for the default-scheduler profile (the plane runs no KAI scheduler) with a
  GPU per pod instead of a node's eight (the plane's 20 GPU nodes are shared by every module);
- the objects the session installed once (cluster-scoped ones: the KAI Topology, the
  ClusterTopologyBinding) and the Namespace, which the world creates labelled, are left out of
  the applied tree.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException

from tests.controlplane.nodesim import HANDED_OFF
from tests.controlplane.plane import Plane, agent_process, stop_process
from tests.day2.applier import Hold, Mode
from tests.day2.harness import BYSTANDER, EXAMPLES, Day2World, WaitTimeout, prepare_source, wait_until
from tests.day2.kubelet import KubeletConfig
from tests.day2.rest import Raw

GPU = "nvidia.com/gpu"
LEASE_NAMESPACE = "grove-gitops"


def default_scheduler_profile(source: Path) -> None:
    """The example's operator configuration with the default-scheduler profile."""
    config = source / "config" / "operator-configuration.yaml"
    text = config.read_text()
    assert "defaultProfileName: kai-scheduler" in text
    config.write_text(text.replace("defaultProfileName: kai-scheduler", "defaultProfileName: default-scheduler"))


def in_namespace(source: Path, namespace: str) -> None:
    """Move every workload of ``source`` from the example's namespace to ``namespace``."""
    for path in (source / "workloads").rglob("*.yaml"):
        path.write_text(path.read_text().replace("namespace: inference", f"namespace: {namespace}"))


def one_gpu(pcs: Raw) -> None:
    """Every GPU limit and request of the PodCliqueSet cut to one device."""
    for clique in pcs["spec"]["template"]["cliques"]:
        for container in clique["spec"]["podSpec"]["containers"]:
            for key in ("limits", "requests"):
                amounts = (container.get("resources") or {}).get(key) or {}
                if GPU in amounts:
                    amounts[GPU] = "1"


class PlaneWorld(Day2World):
    """A scenario's world on the real control plane (see the module docstring)."""

    def __init__(self, plane: Plane, agent_kubeconfig: Path, logs: Path, source: Path, out: Path, namespace: str,
                 mode: Mode, kubelet_config: KubeletConfig, sync_interval: float, wave_delay: float,
                 pods_first: bool) -> None:
        super().__init__(plane.api_client(), source, out, namespace, mode, kubelet_config, sync_interval,
                         wave_delay, pods_first)
        self.plane = plane
        self.agent_kubeconfig = agent_kubeconfig
        self.agent_log = logs / f"agent-{namespace}.log"
        self.agent: subprocess.Popen[bytes] | None = None

    # -- the agent, as its own process ---------------------------------------------------------
    def start_agent(self) -> subprocess.Popen[bytes]:
        if self.agent is not None:
            raise RuntimeError("an agent is already running")
        options = {"grace": 2.0, "resync": 1.0, **self.agent_config}
        args = [f"--{key}={value}" for key, value in sorted(options.items())]
        self.agent = agent_process(self.agent_kubeconfig, self.agent_log, "--namespace", self.namespace,
                                   "--lease-namespace", LEASE_NAMESPACE, *args)
        return self.agent

    def stop_agent(self) -> None:
        if self.agent is None:
            return
        agent, self.agent = self.agent, None
        stop_process(agent)

    def agent_running(self) -> bool:
        return self.agent is not None and self.agent.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        return self.agent_log.read_text(errors="replace")[-chars:] if self.agent_log.exists() else "(no log)"

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 5.0, what: str = "",
                   interval: float = 0.05) -> None:
        """The harness's wait; a timeout also shows the pods as last seen and the agent's log."""
        try:
            super().wait_until(predicate, timeout, what, interval)
        except WaitTimeout as exc:
            seen = self.observer.now().describe() if self.observer.mark() else "(no moment)"
            raise WaitTimeout(f"{exc}\n{seen}\nagent log:\n{self.log_tail()}") from None

    # -- Git -------------------------------------------------------------------------------------
    def render(self) -> None:
        """Render, then leave out what the session installed and the Namespace (see module doc)."""
        with self.applier.lock:
            super().render()
            for path in self.out.rglob("*.yaml"):
                if path.name == "kustomization.yaml":
                    continue
                docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
                if docs and all(not (d.get("metadata") or {}).get("namespace") for d in docs):
                    path.unlink()

    # -- what the real server recorded -----------------------------------------------------------
    def events(self, reason: str) -> list[Raw]:
        """The namespace's ``events.k8s.io/v1`` Events of ``reason``, from the real server."""
        items = self.rest.request("GET", f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")["items"]
        return [e for e in items if e.get("reason") == reason]

    def wait_for_event(self, reason: str, about: str, timeout: float = 30.0) -> Raw:
        """The first Event of ``reason`` on the real server whose note or ``regarding`` names
        ``about`` (the agent's pod Events are on the PodGang, the pod named in the note)."""
        found: list[Raw] = []

        def names(event: Raw) -> bool:
            return about in str(event.get("note", "")) or about == (event.get("regarding") or {}).get("name")

        def seen() -> bool:
            found[:] = [e for e in self.events(reason) if names(e)]
            return bool(found)

        try:
            wait_until(seen, timeout, f"a {reason} Event about {about} on the real server", interval=0.2)
        except AssertionError:
            items = self.rest.request("GET", f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")["items"]
            reasons = sorted({str(e.get("reason")) for e in items})
            raise AssertionError(f"no {reason} Event about {about} (seen: {reasons}); agent log:\n{self.log_tail()}") from None
        return found[0]

    def remove(self) -> None:
        """Leave the plane as found for the next module: the namespace's pods removed at once (no
        kubelet finishes them any more), then the namespace."""
        pods = self.rest.request("GET", f"/api/v1/namespaces/{self.namespace}/pods")["items"]
        for pod in pods:
            try:
                self.rest.request("DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{pod['metadata']['name']}",
                                  {"gracePeriodSeconds": 0})
            except ApiException as exc:
                if exc.status != 404:  # already gone
                    raise
        self.rest.request("DELETE", f"/api/v1/namespaces/{self.namespace}")


@contextlib.contextmanager
def plane_world(
    plane: Plane,
    agent_kubeconfig: Path,
    tmp: Path,
    namespace: str,
    *,
    mode: Mode = "argocd",
    edit: Callable[[Raw], None] | None = None,
    wave_delay: float = 0.0,
    pods_first: bool = False,
    holds: Iterable[Hold] = (),
    agent_config: dict[str, Any] | None = None,
    ready_delay: float = 0.2,
    termination_delay: float = 0.3,
    sync_interval: float = 0.5,
) -> Iterator[PlaneWorld]:
    """The world of :func:`tests.day2.harness.day2_env` on the plane: the example (llama-disagg)
    and the bystander in ``namespace``, applied, the agent started; torn down (the namespace
    deleted) at the end. Its invariants are the caller's to assert."""
    example = tmp / "example"
    shutil.copytree(EXAMPLES, example)
    default_scheduler_profile(example)

    def change(pcs: Raw) -> None:
        one_gpu(pcs)
        if edit is not None:
            edit(pcs)

    source = prepare_source(tmp, example, change, bystander=True)
    in_namespace(source, namespace)
    world = PlaneWorld(plane, agent_kubeconfig, tmp, source, tmp / "out", namespace, mode,
                       KubeletConfig(namespace=namespace, ready_delay=ready_delay,
                                     termination_delay=termination_delay, binds=False),
                       sync_interval, wave_delay, pods_first)
    world.agent_config = dict(agent_config or {})
    world.applier.holds.extend(holds)
    world.bystanders.append(BYSTANDER)
    world.rest.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {HANDED_OFF: "external"}},
    })
    try:
        world.observer.start()
        world.kubelet.start()
        world.render()
        world.sync()
        world.start_agent()
        world.applier.start()
        yield world
        assert world.observer.relists == 0, "the observer missed events (it had to re-list)"
        assert world.agent_running(), world.log_tail()
    finally:
        world.close()
        world.remove()


def assert_day2_invariants(world: PlaneWorld, since: int = 0) -> None:
    """The harness's invariants over every moment since ``since`` (with the real kube-scheduler's
    bindings among them), and the agent still running."""
    world.assert_invariants(since)
    assert world.agent_running(), world.log_tail()
