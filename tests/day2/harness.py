"""The day-2 scenario harness: fake API server, GitOps applier, kubelet, observer and agent.

This module is the one place that imports the fake API server and the agent, so moving
either means editing only here (:func:`start_server`, :func:`start_agent`).

A :class:`Day2Env` owns one scenario's world: a copy of a source tree the test may edit, the
rendered output tree, an :class:`~tests.day2.applier.Applier` that applies it as Argo CD or
Flux would, a :class:`~tests.day2.kubelet.Kubelet`, an :class:`~tests.day2.observer.Observer`
and the agent, each over real HTTP against the same server.

Every scenario's cluster also holds a second, unrelated PodCliqueSet (``BYSTANDER``, from
``tests/day2/workloads/``) in the same namespace, applied by the same applier (issue 22: an
agent that keeps one workload's memory per pass only fails with two). Edits go to the
example's PodCliqueSet (``PRIMARY``) unless a test names another, and
:meth:`Day2Env.assert_invariants`, which every scenario ends with (and the fixture runs again
at teardown), checks over every observed moment that no gang was released partially, that
no wanted slot was emptied by the agent before its replacement existed, and that the
bystander's pods were never touched, and that no pod was bound while gated or before its
PodGang existed.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client
import yaml

from grove_gitops.output.layout import build_tree
from grove_gitops.output.writer import write_tree
from grove_gitops.render import plan_source, render_source
from tests.day2 import observer as O
from tests.day2.applier import Applier, FileCache, Hold, Mode, read_tree
from tests.day2.kubelet import Kubelet, KubeletConfig
from tests.day2.observer import Moment, Observer, PodView, Slot
from tests.day2.rest import Raw, Rest
from tests.fakeserver import FakeApiServer
from tests.support import PROJECT

EXAMPLES = PROJECT / "examples"
EXAMPLE_NAMESPACE = "inference"
EXAMPLE_PCS = PROJECT / "examples" / "workloads" / "llm-inference" / "llama-disagg.yaml"
PRIMARY = "llama-disagg"  # the PodCliqueSet the scenarios act on
#: The second PodCliqueSet every scenario deploys by default, and where in the source tree.
BYSTANDER = "multinode-aggregated"
BYSTANDER_SOURCE = Path(__file__).parent / "workloads" / "multinode-aggregated.yaml"
BYSTANDER_PATH = Path("workloads") / "bystander" / "multinode-aggregated.yaml"
#: A podgroup partially released for longer than this is reported (a generous bound: a
#: release burst takes milliseconds, a loaded CI machine a few hundred).
LINGER_SECONDS = 10.0

ARGO_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
ARGO_COMPARE_OPTIONS = "argocd.argoproj.io/compare-options"
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"


# ------------------------------------------------------------------------------ the server
def start_server() -> FakeApiServer:
    """The fake API server with its defaults (Grove's, the schedulers' and our gitops.grove.io
    CRDs, the HorizontalPodAutoscalers the render writes to Git) and an event window no
    scenario exhausts."""
    return FakeApiServer(event_window=200_000).start()


# ------------------------------------------------------------------------------ the agent
class RunningAgent:
    """The agent running in a thread; :meth:`stop` ends it (as a killed pod would)."""

    def __init__(self, impl: Any, run: Callable[[threading.Event], None]) -> None:
        self.impl = impl
        self._stop = threading.Event()
        self._thread = threading.Thread(target=run, args=(self._stop,), name="day2-agent", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self._thread.is_alive():
            raise RuntimeError("the agent did not stop within 10 s")


def start_agent(server: FakeApiServer, namespace: str | None = None, **config: Any) -> RunningAgent:
    """Start "the agent" against ``server``: the one place that says which agent that is.

    The day-2 agent (``grove_gitops.agent``), with fast rechecks and a short grace period.
    """
    from grove_gitops.agent.kube import Kube
    from grove_gitops.agent.loop import Agent, AgentConfig
    from grove_gitops.metrics import Registry

    settings: dict[str, Any] = {"namespace": namespace, "recheck": 0.05, "resync": 0.2, "grace": 1.0,
                                "watch_read_timeout": 0.5}
    settings.update(config)
    lifter = Agent(Kube(server.api_client()), AgentConfig(**settings), Registry())
    return RunningAgent(lifter, lifter.run)


# ------------------------------------------------------------------------------ rendering
def render(source: Path, out: Path) -> None:
    """``grove-gitops render SOURCE --out OUT``, in process."""
    write_tree(build_tree(render_source(source)), out)
    _ensure_pod_prune_annotations(out)


def _ensure_pod_prune_annotations(out: Path) -> None:
    """Stand-in until the render adds them (issue 13, design 1): rendered Pods are never
    pruned by the GitOps tool. Adds Argo CD's and Flux's annotations to every Pod file that
    lacks them; a no-op once the render writes them itself.
    """
    for path in out.rglob("*-pod--*.yaml"):
        pod = yaml.safe_load(path.read_text(encoding="utf-8"))
        annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
        if ARGO_SYNC_OPTIONS in annotations or FLUX_PRUNE in annotations:
            continue
        annotations[ARGO_SYNC_OPTIONS] = "Prune=false"
        annotations[ARGO_COMPARE_OPTIONS] = "IgnoreExtraneous"
        annotations[FLUX_PRUNE] = "disabled"
        path.write_text(yaml.safe_dump(pod, sort_keys=True), encoding="utf-8")


# ------------------------------------------------------------------------------ source edits
def pcs_files(source: Path) -> list[Path]:
    """The source files holding a PodCliqueSet."""
    out = []
    for path in sorted(source.rglob("*.yaml")):
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        if any(isinstance(d, dict) and d.get("kind") == "PodCliqueSet" for d in docs):
            out.append(path)
    return out


def edit_pcs(source: Path, change: Callable[[Raw], None], name: str | None = None) -> None:
    """Apply ``change`` to every PodCliqueSet document of ``source`` (or only the one named)."""
    for path in pcs_files(source):
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        for doc in docs:
            is_pcs = isinstance(doc, dict) and doc.get("kind") == "PodCliqueSet"
            if is_pcs and (name is None or doc["metadata"]["name"] == name):
                change(doc)
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")


def bump_image(source: Path, cliques: tuple[str, ...] | None = None, image: str | None = None,
               name: str | None = None) -> dict[str, str]:
    """Change the image of every container of ``cliques`` (default: all) in every PodCliqueSet
    (or only the one ``name``d).

    Without ``image`` the tag gets a ``-bump<n>`` suffix (the n-th bump). Returns
    ``{clique: new image}``.
    """
    changed: dict[str, str] = {}

    def change(pcs: Raw) -> None:
        for clique in pcs["spec"]["template"]["cliques"]:
            if cliques is not None and clique["name"] not in cliques:
                continue
            for container in clique["spec"]["podSpec"]["containers"]:
                old = str(container["image"])
                if image is not None:
                    new = image
                elif "-bump" in old:
                    base, _, n = old.rpartition("-bump")
                    new = f"{base}-bump{int(n) + 1}"
                else:
                    new = f"{old}-bump1"
                container["image"] = new
                changed[clique["name"]] = new

    edit_pcs(source, change, name)
    return changed


# ------------------------------------------------------------------------------ the world
class WaitTimeout(AssertionError):
    """``wait_until`` ran out of time (an AssertionError, so pytest shows it as a failure)."""


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "", interval: float = 0.01) -> None:
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout} s waiting for {what or predicate}")
        time.sleep(interval)


@dataclass(frozen=True)
class Exemption:
    """A loss of Ready pods the test itself caused (see :meth:`Day2Env.exempt`)."""

    why: str
    uids: frozenset[str]
    since: int = 0
    until: int | None = None

    def covers(self, moment: Moment, pod: PodView) -> bool:
        in_window = moment.index >= self.since and (self.until is None or moment.index < self.until)
        return in_window and pod.uid in self.uids


class Day2World:
    """One scenario's world whatever the API server is: the applier, the kubelet, the observer,
    the rendered target over time and the invariants. :class:`Day2Env` runs it on the fake
    server with the agent in a thread; ``tests/controlplane/day2world.py`` on the real control plane
    with the agent as its own process (the same scenarios' checks, one implementation)."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        source: Path,
        out: Path,
        namespace: str,
        mode: Mode,
        kubelet_config: KubeletConfig,
        sync_interval: float,
        wave_delay: float = 0.0,
        pods_first: bool = False,
    ) -> None:
        self.source = source
        self.out = out
        self.namespace = namespace
        self.rest = Rest(api_client)
        self.observer = Observer(api_client, namespace)
        self.kubelet = Kubelet(api_client, kubelet_config)
        self.applier = Applier(api_client, out, mode=mode, interval=sync_interval, wave_delay=wave_delay,
                               pods_first=pods_first)
        self.agent_config: dict[str, Any] = {}
        self.primary = PRIMARY
        self.bystanders: list[str] = []  # PodCliqueSets no scenario step may touch
        # (observer mark at the render, the slots that render wants): the target over time
        self.targets: list[tuple[int, frozenset[Slot]]] = []
        self.exemptions: list[Exemption] = []
        self.checked_through: int | None = None  # observer mark after the last clean full check
        self._files: FileCache = {}  # parsed output files, re-read when a render rewrites one
        # Autoscaling: the live counts the scenario wrote through /scale ({(PCS replica,
        # template name): count} of the primary), and the pods the agent materialises at them
        # beyond Git's (see :meth:`set_counts`).
        self.counts: dict[tuple[int, str], int] | None = None
        # Other PodCliqueSets' live counts ({pcs: counts}, :meth:`set_counts_of`): a scenario
        # that scales several workloads at once (the autoscaling bench's shapes).
        self.counts_of: dict[str, dict[tuple[int, str], int]] = {}
        self._agent_pods: dict[Slot, tuple[str, str]] = {}

    # -- lifecycle ---------------------------------------------------------------------------
    def stop_agent(self) -> None:
        """Overridden by the world that starts an agent."""

    def close(self) -> None:
        self.applier.stop()
        self.stop_agent()
        self.kubelet.stop()
        self.observer.stop()

    # -- Git ---------------------------------------------------------------------------------
    def render(self) -> None:
        """Re-render the source into the output tree (between two applier syncs); from now
        on the invariants judge slots by what this render wants (with the agent's pods at
        the live counts, once a scenario set them)."""
        with self.applier.lock:
            render(self.source, self.out)
            self._agent_pods = self._all_agent_pods()
            self.targets.append((self.observer.mark(), frozenset(self.all_desired_pods())))

    def set_counts(self, counts: dict[tuple[int, str], int]) -> None:
        """The primary's autoscaled units now count ``counts`` (call it right before the
        ``/scale`` write): from now on the desired pods, :meth:`converged` and the invariants'
        wanted slots are Git's plus what the agent materialises at these counts (the render at
        them, :meth:`~grove_gitops.render.RenderPlan.expand`)."""
        self.counts = dict(counts)
        self._agent_pods = self._all_agent_pods()
        self.targets.append((self.observer.mark(), frozenset(self.all_desired_pods())))

    def set_counts_of(self, counts_of: dict[str, dict[tuple[int, str], int]]) -> None:
        """As :meth:`set_counts`, for several PodCliqueSets at once (``{pcs: counts}``; the
        primary's entry, if any, becomes :attr:`counts`)."""
        counts_of = {pcs: dict(c) for pcs, c in counts_of.items()}
        if self.primary in counts_of:
            self.counts = counts_of.pop(self.primary)
        self.counts_of = counts_of
        self._agent_pods = self._all_agent_pods()
        self.targets.append((self.observer.mark(), frozenset(self.all_desired_pods())))

    def objects_at(self, counts: dict[tuple[int, str], int] | None, pcs: str | None = None) -> list[Raw]:
        """Every object of ``pcs`` (default: the primary) at ``counts`` (Git's plus the
        agent's), rendered from the current source; ``None``: Git's objects of it."""
        wanted = pcs or self.primary
        plan = plan_source(self.source)
        out: list[Raw] = []
        for item in plan.items:
            if item.key[1] == wanted:
                out += [o.obj for o in plan.expand(item, counts)[0]]
        return out

    def _pods_at(self, counts: dict[tuple[int, str], int], pcs: str | None = None) -> dict[Slot, tuple[str, str]]:
        wanted = pcs or self.primary
        return {
            (str(p["metadata"]["namespace"]), str(p["spec"]["hostname"])): (str(p["metadata"]["name"]), wanted)
            for p in self.objects_at(counts, wanted)
            if p["kind"] == "Pod"
        }

    def _all_agent_pods(self) -> dict[Slot, tuple[str, str]]:
        """The pods the agent materialises at every live count set so far."""
        out = self._pods_at(self.counts) if self.counts is not None else {}
        for pcs, counts in self.counts_of.items():
            out.update(self._pods_at(counts, pcs))
        return out

    def bump_image(self, cliques: tuple[str, ...] | None = None, image: str | None = None,
                   name: str | None = None) -> dict[str, str]:
        """Change images of the ``name``d PodCliqueSet (default: the primary) and re-render
        (the next sync applies it)."""
        changed = bump_image(self.source, cliques, image, name or self.primary)
        self.render()
        return changed

    def edit_pcs(self, change: Callable[[Raw], None], name: str | None = None) -> None:
        """Apply ``change`` to the ``name``d PodCliqueSet (default: the primary), re-render."""
        edit_pcs(self.source, change, name or self.primary)
        self.render()

    def sync(self) -> None:
        self.applier.sync()

    def bump_mid_rollout(self) -> tuple[dict[Slot, str], int, dict[Slot, str]]:
        """After the first deploy, bump every image and wait until the rollout is under way
        (some but not all new pods available): ``(old pods, observer mark, new pods)``."""
        self.wait_until(self.converged, timeout=10, what="the first deploy")
        old = self.desired_pods()
        mark = self.observer.mark()
        self.bump_image()
        new = self.desired_pods()
        self.wait_until(
            lambda: 0 < sum(v.name in new.values() and v.available for v in self.views()) < len(new),
            timeout=15,
            what="the rollout under way",
        )
        return old, mark, new

    def desired(self) -> list[Raw]:
        return read_tree(self.out, self._files)

    def desired_pods(self, pcs: str | None = None) -> dict[Slot, str]:
        """``{slot: pod name}`` of the rendered tree's pods of ``pcs`` (default: the primary)."""
        wanted = pcs or self.primary
        return {slot: name for slot, (name, owner) in self._desired_pods().items() if owner == wanted}

    def all_desired_pods(self) -> dict[Slot, str]:
        """``{slot: pod name}`` of every pod of the rendered tree (every PodCliqueSet)."""
        return {slot: name for slot, (name, _) in self._desired_pods().items()}

    def _desired_pods(self) -> dict[Slot, tuple[str, str]]:
        git = {
            (str(p["metadata"]["namespace"]), str(p["spec"]["hostname"])): (
                str(p["metadata"]["name"]),
                str((p["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of", "")),
            )
            for p in self.desired()
            if p["kind"] == "Pod"
        }
        return {**git, **self._agent_pods}

    # -- the cluster -------------------------------------------------------------------------
    def pods(self) -> list[Raw]:
        """The namespace's pods, read over HTTP."""
        listing = self.rest.request("GET", f"/api/v1/namespaces/{self.namespace}/pods")
        return list(listing.get("items") or [])

    def views(self, pcs: str | None = None) -> list[PodView]:
        """The namespace's pods (or only those of PodCliqueSet ``pcs``)."""
        views = [PodView.of(p) for p in self.pods()]
        return views if pcs is None else [v for v in views if v.unit.pcs == pcs]

    def converged(self) -> bool:
        """Every slot (of every PodCliqueSet) holds exactly its rendered pod, Running, Ready
        and not terminating, and no other pod is left."""
        desired = self.all_desired_pods()
        views = self.views()
        if sorted(v.name for v in views) != sorted(desired.values()):
            return False
        return all(v.available and not v.gated and desired.get(v.slot) == v.name for v in views)

    def settle(self, timeout: float = 5.0) -> Moment:
        """Wait until the observer's view equals the pods as listed now; the latest moment.

        Compared against a fresh list at every poll: pods may still be changing (a kubelet
        starting one), and the first poll at which both agree is a moment the observer saw.
        """

        gangs = f"/apis/scheduler.grove.io/v1alpha1/namespaces/{self.namespace}/podgangs"

        def caught_up() -> bool:
            current = {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in self.pods()}
            listed = self.rest.request("GET", gangs).get("items") or []
            current_gangs = {g["metadata"]["name"]: g["metadata"]["resourceVersion"] for g in listed}
            return self.observer.versions() == current and self.observer.gang_versions() == current_gangs

        wait_until(caught_up, timeout, "the observer to catch up", interval=0.02)
        return self.observer.now()

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 5.0, what: str = "",
                   interval: float = 0.01) -> None:
        wait_until(predicate, timeout, what, interval)

    def pod_annotations(self, pod: Raw) -> dict[str, str]:
        return dict((pod.get("metadata") or {}).get("annotations") or {})

    def podgang(self, name: str) -> Raw | None:
        return self.rest.get("scheduler.grove.io/v1alpha1", "PodGang", self.namespace, name)

    def delete_pod(self, name: str) -> None:
        """The test deletes a pod (as a person would): exempt from the slot invariant."""
        live = self.rest.request("GET", f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        self.exempt("deleted by the test", [str(live["metadata"]["uid"])])
        self.rest.request("DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{name}")

    # -- invariants --------------------------------------------------------------------------
    def exempt(self, why: str, uids: Iterable[str], since: int | None = None, until: int | None = None) -> Exemption:
        """Declare that the pods ``uids`` may lose their Ready pod without a replacement in
        their slot, from observer mark ``since`` (default: now) to ``until`` (default: the
        end): a gang termination the test provoked, a pod the test deleted itself."""
        exemption = Exemption(why, frozenset(uids), self.observer.mark() if since is None else since, until)
        self.exemptions.append(exemption)
        return exemption

    def wants(self, moment: Moment, slot: Slot) -> bool:
        """Whether the render current at ``moment`` wants ``slot``."""
        current: frozenset[Slot] = frozenset()
        for mark, slots in self.targets:
            if mark > moment.index:
                break
            current = slots
        return slot in current

    def _exempt(self, moment: Moment, pod: PodView) -> bool:
        return pod.uid in self.kubelet.injected or any(e.covers(moment, pod) for e in self.exemptions)

    def invariant_problems(self, since: int = 0, settle: bool = True) -> list[str]:
        """Every invariant broken at a moment after ``since`` (see :meth:`assert_invariants`)."""
        if settle:
            self.settle(timeout=10)
        moments = self.observer.since(since)
        gangs = self.observer.gang_history()
        found: list[tuple[str, O.Problem]] = []
        found += [("partial gang release", p) for p in O.partial_releases(moments, gangs, self._exempt)]
        found += [("partial gang left waiting", p)
                  for p in O.lingering_partial_releases(moments, gangs, LINGER_SECONDS, time.monotonic())]
        found += [("slot emptied before its replacement existed", p)
                  for p in O.emptied_slots(moments, self.wants, self._exempt)]
        found += [("bystander disturbed", p) for p in O.disturbed(moments, self.bystanders)]
        found += [("bound outside a released gang", p) for p in O.bound_outside_a_gang(moments, gangs)]
        return [f"{kind}: {message}\n{moment.describe()}" for kind, (moment, message) in found]

    def assert_invariants(self, since: int = 0) -> None:
        """Every scenario ends with this: over every moment since ``since`` (default: the
        first), (a) no pod was released from a podgroup below its ``minReplicas`` (in an
        Initialized gang a pod the test failed or deleted counts as present: Grove releases
        replacements there one by one) and no podgroup stayed partially released, (b) no wanted slot lost its Ready pod (other than
        by a declared or injected failure) while it held no replacement, (c) no pod of a
        bystander PodCliqueSet was deleted or re-created, (d) no pod was bound while gated or
        before its PodGang existed."""
        problems = self.invariant_problems(since)
        assert not problems, f"{len(problems)} invariant violation(s); the first:\n{problems[0]}"
        if since == 0:
            self.checked_through = self.observer.mark()

    def invariants_unchecked(self) -> bool:
        """Whether moments arrived after the last clean check from the first moment (or none ran)."""
        return self.checked_through is None or self.observer.mark() > self.checked_through


class Day2Env(Day2World):
    """One scenario's world on the fake API server, the agent in a thread; build it with
    :func:`day2_env` (or the ``day2`` fixture)."""

    def __init__(
        self,
        server: FakeApiServer,
        source: Path,
        out: Path,
        namespace: str,
        mode: Mode,
        kubelet_config: KubeletConfig,
        sync_interval: float,
        wave_delay: float = 0.0,
        pods_first: bool = False,
    ) -> None:
        super().__init__(server.api_client(), source, out, namespace, mode, kubelet_config, sync_interval,
                         wave_delay, pods_first)
        self.server = server
        self.agent: RunningAgent | None = None

    def start_agent(self, **config: Any) -> RunningAgent:
        if self.agent is not None:
            raise RuntimeError("an agent is already running")
        self.agent = start_agent(self.server, self.namespace, **{**self.agent_config, **config})
        return self.agent

    def stop_agent(self) -> None:
        if self.agent is not None:
            agent, self.agent = self.agent, None
            agent.stop()

    def agent_requests(self, verb: str, resource: str = "pods") -> int:
        """Requests ``verb`` on ``resource`` the server served to anyone but the simulators and
        the test's own client: the agent's (e.g. ``delete`` pods, ``patch`` pods)."""
        ours = sum(r.requests[verb, resource] for r in (self.rest, self.applier.rest, self.kubelet.rest, self.observer.rest))
        return self.server.requests_count(verb=verb, resource=resource) - ours


def prepare_source(tmp: Path, source: Path, edit: Callable[[Raw], None] | None = None, bystander: bool = True,
                   bystander_edit: Callable[[Raw], None] | None = None) -> Path:
    """A copy of ``source`` at ``tmp/src`` the scenario may edit: ``edit`` applied to its
    PodCliqueSets, the :data:`BYSTANDER` added (with ``bystander_edit``) when asked."""
    work = tmp / "src"
    shutil.copytree(source, work)
    if edit is not None:
        edit_pcs(work, edit)
    if bystander:
        (work / BYSTANDER_PATH).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BYSTANDER_SOURCE, work / BYSTANDER_PATH)
        if bystander_edit is not None:
            edit_pcs(work, bystander_edit, BYSTANDER)
    return work


@contextlib.contextmanager
def day2_env(
    tmp: Path,
    *,
    source: Path = EXAMPLES,
    namespace: str = EXAMPLE_NAMESPACE,
    mode: Mode = "argocd",
    ready_delay: float = 0.05,
    termination_delay: float | None = 0.1,
    sync_interval: float = 0.1,
    edit: Callable[[Raw], None] | None = None,
    agent: bool = True,
    background_sync: bool = True,
    agent_config: dict[str, Any] | None = None,
    bystander: bool = True,
    wave_delay: float = 0.0,
    pods_first: bool = False,
    holds: Iterable[Hold] = (),
    bystander_edit: Callable[[Raw], None] | None = None,
) -> Iterator[Day2Env]:
    """Build a scenario's world and tear it down (every thread joined, the server stopped).

    Order: server, namespace, observer (so it sees every pod from the first), kubelet, first
    render and sync, then the agent and the periodic applier (when asked).

    ``bystander``: also deploy the second PodCliqueSet (:data:`BYSTANDER`; ``edit`` does not
    apply to it; ``bystander_edit`` does). ``wave_delay``, ``pods_first`` and ``holds`` configure the applier from its
    first sync on (see :class:`~tests.day2.applier.Applier`).
    """
    work = prepare_source(tmp, source, edit, bystander, bystander_edit)
    server = start_server()
    env: Day2Env | None = None
    try:
        rest = Rest(server.api_client())
        rest.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": namespace}})
        env = Day2Env(
            server,
            work,
            tmp / "out",
            namespace,
            mode,
            KubeletConfig(namespace=namespace, ready_delay=ready_delay, termination_delay=termination_delay),
            sync_interval,
            wave_delay,
            pods_first,
        )
        env.agent_config = dict(agent_config or {})
        env.applier.holds.extend(holds)
        if bystander:
            env.bystanders.append(BYSTANDER)
        env.observer.start()
        env.kubelet.start()
        env.render()
        env.sync()
        if agent:
            env.start_agent()
        if background_sync:
            env.applier.start()
        yield env
        assert server.internal_errors == [], server.internal_errors
        assert env.observer.relists == 0, "the observer missed events (it had to re-list)"
    finally:
        if env is not None:
            env.close()
        server.stop()


def metric_samples(exposition: str) -> dict[str, float]:
    """``name{labels}`` -> value of a Prometheus text exposition (what /metrics serves)."""
    out: dict[str, float] = {}
    for line in exposition.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def describe(moment: Moment | None) -> str:
    return moment.describe() if moment is not None else "(no moment)"


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, default=str)
