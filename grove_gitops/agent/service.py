"""Process wiring for ``grove-gitops agent`` (alias ``gate-lifter``): config, leader election, health, logs.

Every replica serves ``/healthz`` (the election loop hears from the API server and, on the
leader, every lifter loop is alive and making progress; otherwise 503, so the kubelet restarts
it) and ``/readyz`` (caches synced, or standing by as
a follower) and ``/metrics``; only the Lease holder lifts gates. When leadership is lost the
lifter stops before its next patch and the process exits non-zero, so Kubernetes restarts it
as a fresh candidate — the simplest way to be sure no stale work continues.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import warnings
from dataclasses import dataclass

import kubernetes
import urllib3

from grove_gitops.agent import intent
from grove_gitops.agent.drift import DriftChecker
from grove_gitops.agent.gcpause import GcPauses
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.leader import LeaderElector
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.agent.scaling.limits import DEFAULT_WRITES_PER_PASS, ScalingLimits
from grove_gitops.api.renderconfig import DEFAULT_MAX_PODS_PER_PCS, DEFAULT_MAX_PODS_PER_RENDER
from grove_gitops.errors import GroveGitopsError
from grove_gitops.metrics import HealthServer, Registry


class JsonFormatter(logging.Formatter):
    """One JSON object per line: what log pipelines in a cluster expect."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, sort_keys=True)


@dataclass(frozen=True)
class ServiceOptions:
    namespace: str | None
    lease_namespace: str
    lease_name: str
    identity: str
    metrics_address: str
    kubeconfig: str | None
    concurrency: int
    drift_interval: float
    grace: float = 60.0
    unordered_grace: float = intent.UNORDERED_GRACE
    day2: bool = True
    autoscaling: bool = True
    resync: float = 2.0
    blocked_after: float = 60.0
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    max_pods_per_podcliqueset: int = DEFAULT_MAX_PODS_PER_PCS
    max_pods_per_render: int = DEFAULT_MAX_PODS_PER_RENDER
    max_writes_per_pass: int = DEFAULT_WRITES_PER_PASS


def _api_client(kubeconfig: str | None) -> kubernetes.client.ApiClient:
    """The API client, or a :class:`GroveGitopsError` naming what is missing (never a traceback)."""
    if kubeconfig:
        try:
            client: kubernetes.client.ApiClient = kubernetes.config.new_client_from_config(config_file=kubeconfig)
        except (kubernetes.config.ConfigException, OSError) as exc:
            raise GroveGitopsError(f"{kubeconfig}: cannot load kubeconfig: {exc}") from None
        return client
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        default = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
        try:
            kubernetes.config.load_kube_config(config_file=default)
        except (kubernetes.config.ConfigException, OSError) as exc:
            if not os.path.exists(default.split(os.pathsep)[0]):
                raise GroveGitopsError(
                    "no Kubernetes configuration: not running in a cluster (KUBERNETES_SERVICE_HOST is unset) "
                    f"and no kubeconfig at {default} (pass --kubeconfig or set KUBECONFIG)"
                ) from None
            raise GroveGitopsError(f"{default}: cannot load kubeconfig: {exc}") from None
    return kubernetes.client.ApiClient()


def insecure_once(api: kubernetes.client.ApiClient, log: logging.Logger) -> bool:
    """With ``insecure-skip-tls-verify`` urllib3 warns on every request, on stderr and not as
    JSON (154 lines in 35 s, issue 32): say it once, through the JSON log, then silence it.
    True when the connection is unverified."""
    if api.configuration.verify_ssl:
        return False
    warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
    log.warning("TLS verification of the API server is off (insecure-skip-tls-verify): its certificate is "
                "not checked; this is said once, not per request")
    return True


def default_identity() -> str:
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"


def run_agent(opts: ServiceOptions) -> int:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("grove_gitops")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    root.propagate = False
    log = logging.getLogger("grove_gitops.agent")

    try:
        api = _api_client(opts.kubeconfig)
    except GroveGitopsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    insecure_once(api, log)
    kube = Kube(api)
    registry = Registry()
    elector = LeaderElector(
        kubernetes.client.CoordinationV1Api(api),
        opts.lease_namespace,
        opts.lease_name,
        opts.identity,
        lease_duration=opts.lease_duration,
        renew_deadline=opts.renew_deadline,
        retry_period=opts.retry_period,
    )
    lifter = Agent(
        kube,
        AgentConfig(namespace=opts.namespace, concurrency=opts.concurrency, grace=opts.grace, day2=opts.day2,
                    resync=opts.resync, unordered_grace=opts.unordered_grace, autoscaling=opts.autoscaling,
                    scaling_limits=ScalingLimits(opts.max_pods_per_podcliqueset, opts.max_pods_per_render,
                                                 opts.max_writes_per_pass),
                    blocked_after=opts.blocked_after),
        registry,
        lambda: elector.is_leader,
    )
    drift = DriftChecker(kube, registry)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    election = threading.Thread(target=elector.run, args=(stop,), name="leader-election", daemon=True)
    # This process is the agent's alone: its collector pauses are measured and kept short (gcpause.py).
    pauses = threading.Thread(target=GcPauses(registry).run, args=(stop,), name="gc-pauses", daemon=True)
    worker: threading.Thread | None = None
    stale_after = max(lifter.config.stale_after, 2 * opts.lease_duration)

    def healthy() -> bool:
        """Alive and making progress: the election loop hears from the API server, and the
        lifter's loops (once leading) are alive and moving."""
        if stop.is_set() or not election.is_alive() or not elector.healthy(stale_after):
            return False
        return worker is None or (worker.is_alive() and lifter.healthy())

    server = None
    lost = False
    try:
        # A loop that cannot start (the metrics port taken, no thread to be had) ends the
        # agent with exit 1 and one line saying why, not a traceback beside live threads.
        try:
            election.start()
            pauses.start()
            if opts.metrics_address:
                host, _, port = opts.metrics_address.rpartition(":")
                server = HealthServer(
                    registry,
                    host or "0.0.0.0",
                    int(port),
                    healthy=healthy,
                    ready=lambda: lifter.ready() or not elector.is_leader,
                ).start()
        except (OSError, RuntimeError) as exc:
            log.error("cannot start: %s", exc)
            print(f"error: cannot start the agent: {exc}", file=sys.stderr)
            return 1
        while not stop.is_set() and not elector.acquired.wait(0.5):
            if not stop.is_set() and not election.is_alive():
                log.error("leader election stopped unexpectedly; exiting")
                return 1
        if stop.is_set():
            return 0
        thread = threading.Thread(target=lifter.run, args=(stop,), name="lifter", daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:  # no thread to be had
            log.error("cannot start the lifter loop: %s", exc)
            return 1
        worker = thread  # seen by healthy() only once running
        while not stop.is_set():
            if elector.lost.wait(min(opts.drift_interval, 1.0)):
                lost = True
                log.error("leadership lost; stopping")
                stop.set()
                break
            if not stop.is_set() and (not worker.is_alive() or not election.is_alive()):
                log.error("a lifter thread stopped unexpectedly; exiting so Kubernetes restarts the pod")
                lost = True
                stop.set()
                break
            try:
                drift.maybe_check(opts.drift_interval)
            except Exception:  # drift checks are advisory; log, and try again next interval
                log.exception("drift check failed")
        worker.join(timeout=10)
    finally:
        stop.set()
        if election.is_alive():
            election.join(timeout=5)
        if server is not None:
            server.stop()
    return 1 if lost else 0
