"""``gitops.grove.io/v1alpha1`` ClusterFacts: names of objects the cluster has that the source
refers to but does not create (issue 34.9, docs/authoring.md "Cluster facts").

A render cannot ask the cluster, so it learns what exists from a file the user generates with
``kubectl`` and commits beside the workloads: one ``"apiVersion kind namespace name"`` string
per object, ``<none>`` as the namespace of a cluster-scoped one (``kubectl``'s own spelling
in ``-o custom-columns``). Strings rather than mappings so that the generating command needs
nothing but ``kubectl`` and ``sed``, and no name is ever read by YAML as a number. The file is
untrusted input: the entries are counted and each is checked (``validation.clusterfacts``).
"""

from __future__ import annotations

from pydantic import Field

from grove_gitops.api.base import ObjectMeta, StrictModel

#: Objects one ClusterFacts lists at most (below the loader's 200,000 YAML nodes per file, so this
#: limit, not the loader's, names the problem): far above a large cluster's namespaces, priority
#: classes, service accounts, secrets and queues, yet a bounded parse.
MAX_FACTS = 100_000
#: Characters of one entry at most: four names, none over 253 characters.
MAX_ENTRY = 1_024


class ClusterFacts(StrictModel):
    apiVersion: str = "gitops.grove.io/v1alpha1"
    kind: str = "ClusterFacts"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    objects: list[str] = Field(default_factory=list, max_length=MAX_FACTS)
