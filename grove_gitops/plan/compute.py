"""The plan: per PodCliqueSet, which slots change and in which steps the agent replaces them.

Ordering is not decided here. :func:`grove_gitops.readmodel.order.order_replicas` picks the
replica order and :func:`~grove_gitops.readmodel.order.steps_for_replica` the steps inside a
replica, the same calls the agent makes, so the plan is what the agent will do. At plan time
every replica is assumed scheduled and healthy (a reviewer cannot know the cluster's state),
so replicas go in index order and no pod is retired early for being unready.

A slot (namespace, ``spec.hostname``) is *changed* when its rendered pod has another name on
HEAD than on BASE (pod names hash the spec), *added* when only HEAD renders it (scale-out:
the agent releases it as its gang allows), *removed* when only BASE does (scale-in: the
agent deletes it after its grace period; the render drops the highest indices).
"""

from __future__ import annotations

from collections.abc import Mapping

from grove_gitops.diff.report import Side
from grove_gitops.output.gitopsmeta import recreated_on_sync
from grove_gitops.plan.groveorder import grove_steps
from grove_gitops.plan.model import ON_DELETE, Plan, PodCliqueSetPlan
from grove_gitops.plan.pods import RenderedPod, Workload, WorkloadKey, natural, strategy, workloads
from grove_gitops.plan.restart import restart_fields
from grove_gitops.plan.risk import role_totals, step_risks
from grove_gitops.plan.stranded import stranded_gangs
from grove_gitops.plan.timing import step_times
from grove_gitops.readmodel.order import ReplicaRank, Step, order_replicas, steps_for_replica


def ordered_steps(changed: list[RenderedPod]) -> list[Step]:
    """The agent's steps for the changed slots (HEAD pods), replica by replica."""
    by_replica: dict[int, list[RenderedPod]] = {}
    for pod in changed:
        by_replica.setdefault(pod.replica, []).append(pod)
    steps: list[Step] = []
    for replica in order_replicas(ReplicaRank(i) for i in sorted(by_replica)):
        steps += steps_for_replica(replica, (p.slot for p in by_replica[replica]))
    return steps


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _both(
    key: WorkloadKey,
    base: Workload,
    head: Workload,
    strat: str,
    unfit: Mapping[tuple[str, str], str],
    review: bool = False,
) -> PodCliqueSetPlan | None:
    pairs = [(base.pods[h], head.pods[h]) for h in sorted(base.pods.keys() & head.pods.keys(), key=natural)]
    pairs = [(old, new) for old, new in pairs if old.name != new.name]
    added = tuple(sorted(head.pods.keys() - base.pods.keys(), key=natural))
    removed = tuple(sorted(base.pods.keys() - head.pods.keys(), key=natural))
    if not pairs and not added and not removed and base.texts == head.texts:
        return None
    changed = [new for _, new in pairs]
    steps: tuple[Step, ...] = ()
    rounds: tuple[int, ...] = ()
    agent: list[Step] = []
    if not changed:
        message = (
            "no pod is replaced"
            if added or removed
            else "no pod changes (only PodGang-level or other objects): nothing is restarted"
        )
    elif strat == ON_DELETE and review:
        message = (
            f"OnDelete: the {_plural(len(changed), 'changed pod')} are replaced only when deleted; "
            "Grove's operator retires none itself and recreates each deleted pod from the new template "
            "(the agent does the same)"
        )
    elif strat == ON_DELETE:
        message = (
            f"OnDelete: the {_plural(len(changed), 'changed pod')} are replaced only when deleted; "
            "the agent retires none itself and releases each new pod once its old pod is gone"
        )
    elif review:
        agent = ordered_steps(changed)
        grove, numbers = grove_steps(changed)
        steps, rounds = tuple(grove), tuple(numbers)
        message = ""
    else:
        steps = tuple(ordered_steps(changed))
        message = ""
    staying = [head.pods[h] for h in base.pods.keys() & head.pods.keys()]
    risks, outages = step_risks(key[1], staying, steps, head.units)
    return PodCliqueSetPlan(
        key[0],
        key[1],
        "modified",
        strat,
        steps,
        tuple(p.slot.hostname for p in changed),
        added,
        removed,
        restart_fields(pairs),
        message,
        autoscaled=tuple(head.units.items()),
        # the floor moved: these slots change hands between Git and the agent
        to_cluster=tuple(h for h in removed if head.in_cluster_range(base.pods[h])),
        from_cluster=tuple(h for h in added if base.in_cluster_range(head.pods[h])),
        risks=risks,
        outages=outages,
        roles=tuple(role_totals(key[1], staying).items()),
        stranded=stranded_gangs(base, head, (p.slot.hostname for p in changed), unfit),
        times=step_times(
            steps,
            {h: base.pods[h].obj.obj for s in steps for h in s.hostnames if h in base.pods},
            {h: head.pods[h].obj.obj for s in steps for h in s.hostnames if h in head.pods},
        ),
        order="grove" if review else "agent",
        rounds=rounds,
        agent_steps=len(agent),
        agent_max_unavailable=max((len(s.hostnames) for s in agent), default=0),
    )


def build_plan(base: Side, head: Side) -> Plan:
    """The plan from BASE to HEAD for every PodCliqueSet whose rendered objects differ."""
    before, after = workloads(base), workloads(head)
    review = head.review
    out: list[PodCliqueSetPlan] = []
    for key in sorted(before.keys() | after.keys()):
        b, h = before.get(key), after.get(key)
        if b is not None and h is not None:
            item = _both(key, b, h, strategy(head, h, key), head.unfit_gangs, review)
            if item is not None:
                out.append(item)
        elif h is not None:
            n = _plural(len(h.pods), "pod")
            message = (
                f"new PodCliqueSet: Grove's operator creates its {n}, gated until each gang is complete"
                if review
                else f"new PodCliqueSet: its {n} are released as their gangs complete"
            )
            out.append(
                PodCliqueSetPlan(
                    *key,
                    "added",
                    strategy(head, h, key),
                    added=tuple(sorted(h.pods, key=natural)),
                    message=message,
                    autoscaled=tuple(h.units.items()),
                    order="grove" if review else "agent",
                )
            )
        elif b is not None:
            n = _plural(len(b.pods), "pod")
            message = (
                f"removed from Git: once Argo CD / Flux prune the PodCliqueSet, Grove's operator and the garbage "
                f"collector delete its {n}"
                if review
                else f"removed from Git: the agent deletes its {n} after its grace period"
            )
            out.append(
                PodCliqueSetPlan(
                    *key,
                    "removed",
                    strategy(base, b, key),
                    removed=tuple(sorted(b.pods, key=natural)),
                    message=message,
                    autoscaled=tuple(b.units.items()),
                    order="grove" if review else "agent",
                )
            )
    return Plan(tuple(out), review, recreated_on_sync_between(base, head))


def recreated_on_sync_between(base: Side, head: Side) -> tuple[tuple[str, str, str], ...]:
    """Objects on both sides that changed and that Argo CD / Flux replace rather than update
    (``Force=true,Replace=true`` / ``force: enabled``): the reviewer sees a delete and a create,
    not a modification (issue 32.3)."""
    found: set[tuple[str, str, str]] = set()
    for key, after in head.objects.items():
        before = base.objects.get(key)
        if before is not None and before.obj != after.obj and recreated_on_sync(after.obj):
            found.add((key.kind, key.namespace, key.name))
    return tuple(sorted(found))
