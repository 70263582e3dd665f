"""Migration of a PodCliqueSet that Grove's operator runs to grove-gitops, as a rolling update.

One job per module:

- :mod:`grove_gitops.readmodel.adoption` (below both this package and the agent, which reads
  it): the marker ``migrate apply`` writes on each running Grove pod and the rules by which the
  agent proves a pod is the slot's Grove pod before it ever deletes it;
- :mod:`.live`: reads the live ``grove.io`` PodCliqueSet and its children from the API server;
- :mod:`.compare`: the live workload against the render of the same PodCliqueSet: a plan, or
  the reasons to refuse (pure);
- :mod:`.steps`: the order the agent replaces the pods in and the capacity left per role (pure);
- :mod:`.report`: the plan as text, Markdown or JSON;
- :mod:`.handover`: the writes of ``migrate apply`` (with the user's credentials), idempotent.

docs/migration.md says how the parts fit from the user's side.
"""
