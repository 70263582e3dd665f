"""Read models of the live cluster, shared by the agent, ``grove-gitops plan`` and ``migrate``.

One place for what the cluster holds as the agent reads it: the PodGangs and their release
rule (gangs), pods grouped into workloads and slots (snapshot), the order of a rolling update
(order) and the adoption marker on migrated pods (adoption). Pure and below every client: the
plan a reviewer reads before merging and the migration's checks use the same functions the agent
acts on, without importing the agent.
"""
