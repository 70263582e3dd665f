"""The release step (:class:`ReleaseStep`): gangs evaluated (:mod:`.release`) and their pods'
gates removed.

Owns: which gangs wait and which of them are asked again whatever the watches say (a backend
object, a failed release, a malformed gang after its backoff); the release itself (a whole
gang's pods in parallel on the pool, then ``Initialized``; an initialized gang's pods one by
one in the background); the re-check at the moment of release (every pod still there, not
being deleted, still wanted: :class:`~.release.ReleaseGuard`); and the report of a gang that
waits too long (through the day-2 dispatch's writes).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from concurrent.futures import Future

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from grove_gitops.agent import blocked, release
from grove_gitops.agent.actions import Action, SetCondition
from grove_gitops.agent.cache import Key, WorkloadKey, workload_of
from grove_gitops.agent.dispatch import Day2Dispatch
from grove_gitops.agent.workbench import INITIALIZED
from grove_gitops.readmodel import gangs as G
from grove_gitops.readmodel.snapshot import Snapshot, unit_of

log = logging.getLogger("grove_gitops.agent")


class ReleaseStep(Day2Dispatch):
    """Gang releases (see the module's comment)."""

    def _object_exists(self, ref: G.ObjectRef) -> bool:
        """Ask the API server every time: a backend object deleted since the last check must
        not be remembered as present (asked only once everything else is in place)."""
        began = time.monotonic()
        try:
            return self.kube.object_exists(ref)
        except ApiException as exc:
            self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code=str(exc.status or 0))
            return False
        except (HTTPError, OSError):
            self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code="connection")
            return False
        finally:
            self._asked_s += time.monotonic() - began

    def _gang_waits(self, decisions: dict[Key, object], now: float) -> list[Action]:
        """Report gangs that wait for release past the threshold (whole gangs only: a slot of
        an initialized gang waits for its rollout, which reports itself)."""
        out: list[Action] = []
        for key, decision in decisions.items():
            if not isinstance(decision, release.GangRelease):
                continue
            wait = None
            if decision.whole_gang and not decision.complete:
                named = decision.waiting_for[:3]
                more = len(decision.waiting_for) - len(named)
                wait = blocked.Wait(blocked.GANG_INCOMPLETE, "the gang is released whole, and waits for "
                                    + ", ".join(named) + (f" and {more} more" if more > 0 else ""))
            with self.cache.lock:
                raw = self.cache.podgangs.get(key)
            wl = workload_of(raw) if raw is not None else (key[0], "")
            out += self.waits.observe(("gang", key[0], key[1]), wl, key if raw is not None else None, wait, now)
            if wait is None:
                out += self.waits.stale(("gang", key[0], key[1]), key, raw, True, now)
        return out

    def _ungate_counted(self, namespace: str, name: str, uid: str) -> bool:
        pods = self._releasable([(namespace, name)], {name: uid})
        if pods is None:
            return False
        try:
            lifted = self.executor.ungate(namespace, name, uid)
        finally:
            self.guard.end(pods)
        if lifted:
            self.registry.inc("grove_gitops_lifter_gates_lifted_total", "Scheduling gates removed")
            log.info("released pod %s/%s of an initialized gang", namespace, name)
        return lifted

    def _releasable(self, keys: list[Key], uids: dict[str, str]) -> list[dict[str, object]] | None:
        """The pods ``keys`` as the cache holds them now, marked as being released, when every
        one exists (with the uid decided about, for those in ``uids``), is not terminating or
        being deleted, and is still wanted (:class:`~.release.ReleaseGuard`); else None.
        Whoever gets pods here calls ``self.guard.end`` with them."""
        with self.cache.lock:
            pods = [self.cache.pods.get(k) for k in keys]
        found: list[dict[str, object]] = []
        with self._inflight_lock:
            for key, pod in zip(keys, pods, strict=True):
                meta: dict[str, object] = (pod or {}).get("metadata") or {}
                uid = str(meta.get("uid") or "")
                if pod is None or meta.get("deletionTimestamp") or key in self._deleting or uid in self._deleted_uids:
                    return None
                if key[1] in uids and uids[key[1]] != uid:
                    return None
                found.append(pod)
            deleting = list(self._deleting)
        if deleting and self._unit_still_being_vacated(found, deleting):
            return None
        return found if self.guard.begin(found) else None

    def _unit_still_being_vacated(self, pods: list[dict[str, object]], deleting: list[Key]) -> bool:
        """Whether a DELETE of another pod of the same scaling-group replica is still on its way.

        A step retires a scaling-group replica whole: its DELETEs are sent in parallel, and the
        first pod can be gone (its slot free) before the last DELETE has reached the server. A
        replacement released then would run beside an old pod of its replica that is not even
        terminating yet: a partial gang (seen on the real control plane, whose nodes finish a
        deletion at once). So a replica's replacements wait until every DELETE of the step is
        answered; a standalone pod has only its own slot, which the caller already checks."""
        units = {u for p in pods if (u := unit_of(p)) is not None}
        if not units:
            return False
        with self.cache.lock:
            others = [self.cache.pods.get(k) for k in deleting]
        return any(o is not None and unit_of(o) in units for o in others)

    def _report_bad(self, key: Key, problem: str) -> None:
        """One warning and one Event per distinct problem of a gang; then retry with backoff."""
        failures = self._bad.get(key, (0, 0.0))[0] + 1
        self._bad[key] = (failures, time.monotonic() + self._backoff(failures, slow=True))
        with self.cache.lock:
            self._bad_rv[key] = str(((self.cache.podgangs.get(key) or {}).get("metadata") or {}).get("resourceVersion", ""))
        self.registry.inc("grove_gitops_lifter_malformed_podgangs_total", "PodGangs that could not be read")
        if self._reported.get(key) == problem:
            return
        self._reported[key] = problem
        log.warning("PodGang %s/%s cannot be evaluated: %s", key[0], key[1], problem)
        with self.cache.lock:
            gang = self.cache.podgangs.get(key)
        if gang is not None:
            self.kube.emit_event(key[0], gang, "MalformedPodGang", f"grove-gitops agent cannot evaluate this PodGang: {problem}")

    def _wait(self, key: Key, since: float, *, poll: bool) -> None:
        """The gang waits; ``poll``: it is asked again at the next pass, or when its backoff
        ends if it is malformed (else only when an event marks its workload dirty)."""
        self._waiting.setdefault(key, since)
        if poll:
            bad = self._bad.get(key)
            self._poll[key] = bad[1] if bad is not None else time.monotonic() + self.config.recheck
        else:
            self._poll.pop(key, None)

    def _not_waiting(self, key: Key) -> None:
        self._waiting.pop(key, None)
        self._poll.pop(key, None)

    def _poll_due(self) -> list[Key]:
        now = time.monotonic()
        return [k for k, due in self._poll.items() if due <= now]

    def evaluate(self, key: Key) -> release.GangRelease:
        """The release decision for one gang (raises MalformedPodGang)."""
        wl = self._workload_of_gang(key)
        snap = self._snapshot(wl)
        pods, gangs = self.cache.workload(wl)
        result = release.decide_all([key], snap, pods, gangs, self._object_exists)[key]
        if isinstance(result, G.MalformedPodGang):
            raise result
        return result

    def _workload_of_gang(self, key: Key) -> WorkloadKey:
        with self.cache.lock:
            gang = self.cache.podgangs.get(key)
        return workload_of(gang) if gang is not None else (key[0], "")

    def sync_gang(self, key: Key) -> bool:
        """Evaluate one gang and release what it allows; True when nothing is left to wait for."""
        return self.sync_gangs([key])[key]

    def sync_gangs(
        self, keys: list[Key], snapshots: dict[WorkloadKey, Snapshot] | None = None, wait: bool = True
    ) -> dict[Key, bool]:
        """Evaluate gangs and release what each allows (``snapshots``: workloads already
        derived in this pass and left untouched since, so they need not be derived again).

        The pods of all releasable gangs go to the worker pool together, so many small gangs
        completing at once (a sync of a large app) are released in parallel; a gang that is not
        Initialized is still released only as a whole.
        """
        done: dict[Key, bool] = {}
        now = time.monotonic()
        by_wl: dict[WorkloadKey, list[Key]] = {}
        for key in keys:
            bad = self._bad.get(key)
            with self.cache.lock:
                rv = str(((self.cache.podgangs.get(key) or {}).get("metadata") or {}).get("resourceVersion", ""))
            if bad is not None and now < bad[1] and self._bad_rv.get(key) == rv:
                self._wait(key, now, poll=True)
                done[key] = False
                continue
            by_wl.setdefault(self._workload_of_gang(key), []).append(key)
        releasing: dict[Key, tuple[float, bool, list[Future[bool]], list[dict[str, object]]]] = {}
        for wl, wl_keys in sorted(by_wl.items()):
            try:
                began = time.monotonic()
                snap = (snapshots or {}).get(wl) or self._snapshot(wl)
                pods, gangs = self.cache.workload(wl)
                asked = self._asked_s
                decisions = release.decide_all(wl_keys, snap, pods, gangs, self._object_exists)
                self._decide_s += time.monotonic() - began - (self._asked_s - asked)
            except Exception as exc:  # one workload's surprise must never block the others
                log.exception("evaluating workload %s/%s failed", wl[0], wl[1])
                for key in wl_keys:
                    self._report_bad(key, f"{type(exc).__name__}: {exc}")
                    self._wait(key, now, poll=True)
                    done[key] = False
                continue
            waits = self._gang_waits(dict(decisions), self.clock())
            if waits and self.active():
                self._run_actions(waits, wait=False)
            for key in wl_keys:
                decision = decisions[key]
                if isinstance(decision, G.MalformedPodGang):
                    self._report_bad(key, str(decision))
                    self._wait(key, now, poll=True)
                    done[key] = False
                    continue
                self._bad.pop(key, None)
                self._reported.pop(key, None)
                if not decision.complete and decision.whole_gang:
                    if key in self.cache.podgangs:
                        self._wait(key, time.monotonic(), poll=decision.poll)
                    else:
                        self._not_waiting(key)
                    done[key] = False
                    continue
                if decision.complete:
                    self._not_waiting(key)
                else:
                    self._wait(key, time.monotonic(), poll=False)  # a slot or base gang: its pods' events
                complete_at = self._complete_since.setdefault(key, time.monotonic())
                if not self.active():
                    self._wait(key, time.monotonic(), poll=True)
                    done[key] = False
                    continue
                done[key] = decision.complete
                if not wait and not decision.whole_gang:
                    # Pods of an initialized gang, one by one (a rollout step's release):
                    # nothing follows from them in this pass, so the pass does not wait.
                    for name, uid in decision.to_ungate:
                        self._in_background((key[0], name), functools.partial(self._ungate_counted, key[0], name, uid))
                    self._complete_since.pop(key, None)
                    continue
                # Re-checked at the moment of release: a whole gang's every member, else the pods.
                members = ([(ns, n) for _, ns, n in G.referenced_pods(gangs.get(key) or {})] if decision.whole_gang
                           else [(key[0], n) for n, _ in decision.to_ungate])
                held = self._releasable(members, dict(decision.to_ungate)) if members else None
                if held is None:
                    self._wait(key, time.monotonic(), poll=True)
                    done[key] = False
                    continue
                futures = [self._pool.submit(self.executor.ungate, key[0], name, uid) for name, uid in decision.to_ungate]
                releasing[key] = (complete_at, decision.whole_gang and decision.complete, futures, held)
        # Each whole gang's Initialized is written on the pool as soon as its own pods are
        # released, gangs side by side (issue 35.3: written one after the other by this thread,
        # 500 gangs' ends queued behind each other and behind the next pass's releases).
        ends = {key: self._initialize_after(key, futures) for key, (_, whole, futures, _) in releasing.items() if whole}
        for key, (complete_at, whole, futures, held) in releasing.items():
            try:  # the gang's Initialized too is written before the autoscaling loop may delete it
                self._released(key, complete_at, whole, futures, done, ends.get(key))
            finally:
                self.guard.end(held)
        return done

    def _initialize_after(self, key: Key, futures: list[Future[bool]]) -> Future[None]:
        """``Initialized=True`` written on the pool once every one of ``futures`` (the gang's
        gate patches) has ended, all of them lifted; else nothing is written. The future ends
        when that is done (with the write's exception, if it raised)."""
        end: Future[None] = Future()
        left = [len(futures)]
        lock = threading.Lock()

        def written(write: Future[bool]) -> None:
            error = write.exception()
            if error is not None:
                end.set_exception(error)
            else:
                end.set_result(None)

        def ended(_: Future[bool] | None = None) -> None:
            with lock:
                left[0] -= 1
                if left[0] > 0:
                    return
            if not all(not f.cancelled() and f.exception() is None and f.result() for f in futures):
                end.set_result(None)  # a failed patch: the gang is tried again, not marked
                return
            try:
                write = self._pool.submit(self.executor.set_condition, SetCondition(
                    key, INITIALIZED, "True", "PodGangPodsCreated", "PodGang is fully initialized"))
            except RuntimeError as exc:  # the pool is shut down: the agent is stopping
                end.set_exception(exc)
                return
            write.add_done_callback(written)

        if not futures:
            left[0] = 1
            ended()
        for f in futures:
            f.add_done_callback(ended)
        return end

    def _released(self, key: Key, complete_at: float, whole: bool, futures: list[Future[bool]],
                  done: dict[Key, bool], initialized: Future[None] | None = None) -> None:
        """The end of one gang's release: count it, and wait for a whole gang's ``Initialized``
        (``initialized``, :meth:`_initialize_after`)."""
        results = [f.result() for f in futures]
        lifted = sum(1 for r in results if r)
        if lifted:
            self.registry.inc("grove_gitops_lifter_gates_lifted_total", "Scheduling gates removed", float(lifted))
            self.registry.observe(
                "grove_gitops_lifter_release", "Time from gang complete to release", time.monotonic() - complete_at
            )
            if whole:
                log.info("released gang %s/%s (%d pods)", key[0], key[1], lifted)
            else:
                log.info("released %d pods of initialized gang %s/%s", lifted, key[0], key[1])
        if not all(results):
            done[key] = False
            self._wait(key, time.monotonic(), poll=True)  # a failed patch: try again
            return
        self._complete_since.pop(key, None)
        if whole and initialized is not None:
            initialized.result()
        elif whole:
            self.executor.set_condition(
                SetCondition(key, INITIALIZED, "True", "PodGangPodsCreated", "PodGang is fully initialized")
            )
