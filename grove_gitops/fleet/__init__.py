"""Fleet mode: one source tree, many clusters (``gitops.grove.io/v1alpha1`` Cluster, issue 12).

A layer above the single-cluster pipeline: :mod:`.plan` builds one virtual source per Cluster
and plans it with :func:`grove_gitops.pipeline.validate`; :mod:`.output` builds each cluster's
tree into ``OUT/<cluster>/`` with its generated wiring (:mod:`.wiring`), whose repository URL,
revision and paths :mod:`grove_gitops.fields.externalrefs` checks first. A source without Cluster objects takes today's
path unchanged.
"""
