"""Grove's own rollout order, for a source whose PodCliqueSets Grove's operator reconciles
(RenderConfiguration ``mode: review``, docs/adoption.md).

The units are the agent's (:func:`grove_gitops.readmodel.order.steps_for_replica`: one standalone
pod, or one scaling-group replica with all its pods), but Grove does not serialise them
(spec/grove-day2.md):

* §2.2: one PodCliqueSet replica at a time, pending replicas in Grove's order (at plan time
  every replica is assumed scheduled and healthy, so by index: :func:`order_replicas`); the
  next replica starts once every clique of this one is updated and Ready.
* §2.2: inside the replica, every standalone PodClique and every scaling group progresses
  **concurrently and independently**, with no budget across them.
* §2.3: a standalone PodClique deletes one Ready old pod at a time, oldest first (by
  ``creationTimestamp``, which the render cannot know: pods created in index order are
  assumed, so the index order is shown), the next once the previous one's replacement is Ready.
* §2.4: a scaling group recreates one replica at a time, lowest index first, all its cliques.

So the k-th unit of every role of a replica goes down together: a *round*. Rounds are a
prediction for replacements that take equally long; roles that are faster run ahead, never
two units of one role at once. Steps are listed round by round; ``rounds[i]`` is step i's.
"""

from __future__ import annotations

from collections.abc import Iterable

from grove_gitops.plan.pods import RenderedPod
from grove_gitops.readmodel.order import ReplicaRank, Step, order_replicas, steps_for_replica

#: Grove's availability bound during a RollingRecreate (spec/grove-day2.md §2.6, §8.1-§8.2).
GROVE_BOUND = (
    "Grove's bound: one unit per role of the PodCliqueSet replica being rolled (a standalone PodClique's Ready "
    "pod, a scaling group's whole replica), all roles at once; it deletes the next only while the role's "
    "readyReplicas (a group's availableReplicas) >= minAvailable, so a role may dip to minAvailable - 1, and old "
    "pods that are not Ready are deleted all at once, without a budget"
)


def _role(pod: RenderedPod) -> str:
    """What Grove rolls one unit at a time: the standalone PodClique or the scaling group."""
    return pod.slot.scaling_group or pod.slot.podclique


def grove_steps(changed: Iterable[RenderedPod]) -> tuple[list[Step], list[int]]:
    """Grove's steps for the changed slots (HEAD pods) and the round (1-based, counted over
    the whole PodCliqueSet) of each step; steps of one round are down at the same time."""
    by_replica: dict[int, list[RenderedPod]] = {}
    for pod in changed:
        by_replica.setdefault(pod.replica, []).append(pod)
    steps: list[Step] = []
    rounds: list[int] = []
    done = 0
    for replica in order_replicas(ReplicaRank(i) for i in sorted(by_replica)):
        pods = by_replica[replica]
        role_of = {p.slot.hostname: _role(p) for p in pods}
        per_role: dict[str, list[Step]] = {}
        for step in steps_for_replica(replica, (p.slot for p in pods)):
            per_role.setdefault(role_of[step.hostnames[0]], []).append(step)
        depth = max(len(units) for units in per_role.values())
        for k in range(depth):
            for role in sorted(per_role):
                if k < len(per_role[role]):
                    steps.append(per_role[role][k])
                    rounds.append(done + k + 1)
        done += depth
    return steps, rounds
