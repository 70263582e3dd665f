"""The in-cluster agent: gate release and Grove's day-2 behaviour (docs/day2.md).

One room per concern: the pass (:mod:`.loop`), the rolling update (:mod:`.rollout`), healing
(:mod:`.healing`), scale-in (:mod:`.scalein`), gate release (:mod:`.release`) and the scale
targets (:mod:`.scaling`). Their pure decisions return :mod:`.actions`; the loop executes them.
The read models they decide on (pods grouped into workloads and slots, PodGangs, the update
order) live below, in :mod:`grove_gitops.readmodel`, shared with ``plan`` and ``migrate``.
"""
