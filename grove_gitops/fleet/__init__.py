"""Fleet mode: one source tree, many clusters (``gitops.grove.io/v1alpha1`` Cluster, issue 12).

A layer above the single-cluster pipeline: :mod:`.plan` builds one virtual source per Cluster
and plans it with :func:`grove_gitops.render.plan_loaded`; :mod:`.output` builds each cluster's
tree into ``OUT/<cluster>/`` with its generated wiring (:mod:`.wiring`), whose repository URL,
revision and paths :mod:`.refs` checks first. A source without Cluster objects takes today's
path unchanged.
"""
