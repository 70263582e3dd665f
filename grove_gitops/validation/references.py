"""References from a PodCliqueSet to objects the cluster must already have, checked against
the source's ClusterFacts (issue 34.9, docs/authoring.md "Cluster facts").

A pod naming a PriorityClass or ServiceAccount that does not exist is refused by admission;
one naming a missing Secret hangs in ContainerCreating; gangs in a missing queue stay pending.
None of that shows in a render, which cannot ask the cluster; the facts file tells it what the
cluster had when the file was made. The findings are warnings, not errors: the facts are a
snapshot that ages, and the object may be created by another repository or the same sync.
An object the source itself creates counts as existing, and a kind the facts do not list at
all is not checked (the command that made them did not ask for it).

Runs on the source documents after they validated (their sizes are bounded by then), once per
render rather than per PodCliqueSet, so the render cache never keeps a stale finding.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from typing import Any

from grove_gitops.backendapi import SchedulerBackend
from grove_gitops.fields.fielderrors import go_value
from grove_gitops.fields.suggest import MAX_LISTED, MAX_SUGGESTIONS, did_you_mean, likely_candidates
from grove_gitops.load.source import SourceSet
from grove_gitops.problems import MAX_PROBLEMS_PER_DOCUMENT
from grove_gitops.validation.clusterfacts import Facts

PRIORITY = ("scheduling.k8s.io", "PriorityClass")
ACCOUNT = ("", "ServiceAccount")
SECRET = ("", "Secret")
NOT_IN = "is not in the cluster facts (ClusterFacts) nor created by the source"

#: (field path, kind key, namespace or "" for cluster-scoped, name)
Reference = tuple[str, tuple[str, str], str, str]


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _secret_refs(pod: Mapping[str, Any], path: str) -> Iterator[tuple[str, str]]:
    """(field, secret name) of every Secret a pod spec needs (optional ones aside)."""
    for j, ref in enumerate(_l(pod.get("imagePullSecrets"))):
        yield f"{path}.imagePullSecrets[{j}].name", _s(_d(ref).get("name"))
    for j, volume in enumerate(_l(pod.get("volumes"))):
        secret = _d(_d(volume).get("secret"))
        if secret and not secret.get("optional"):
            yield f"{path}.volumes[{j}].secret.secretName", _s(secret.get("secretName"))
        for k, source in enumerate(_l(_d(_d(volume).get("projected")).get("sources"))):
            projected = _d(_d(source).get("secret"))
            if projected and not projected.get("optional"):
                yield f"{path}.volumes[{j}].projected.sources[{k}].secret.name", _s(projected.get("name"))
    for group in ("initContainers", "containers"):
        for j, container in enumerate(_l(pod.get(group))):
            where = f"{path}.{group}[{j}]"
            for k, env in enumerate(_l(_d(container).get("env"))):
                ref = _d(_d(_d(env).get("valueFrom")).get("secretKeyRef"))
                if ref and not ref.get("optional"):
                    yield f"{where}.env[{k}].valueFrom.secretKeyRef.name", _s(ref.get("name"))
            for k, env_from in enumerate(_l(_d(container).get("envFrom"))):
                ref = _d(_d(env_from).get("secretRef"))
                if ref and not ref.get("optional"):
                    yield f"{where}.envFrom[{k}].secretRef.name", _s(ref.get("name"))


def references(pcs: Mapping[str, Any], namespace: str) -> Iterator[Reference]:
    """Every PriorityClass, ServiceAccount and Secret a PodCliqueSet document names."""
    template = _d(_d(pcs.get("spec")).get("template"))
    if _s(template.get("priorityClassName")):
        yield "spec.template.priorityClassName", PRIORITY, "", template["priorityClassName"]
    for i, clique in enumerate(_l(template.get("cliques"))):
        path = f"spec.template.cliques[{i}].spec.podSpec"
        pod = _d(_d(_d(clique).get("spec")).get("podSpec"))
        if _s(pod.get("priorityClassName")):
            yield f"{path}.priorityClassName", PRIORITY, "", pod["priorityClassName"]
        if _s(pod.get("serviceAccountName")):
            yield f"{path}.serviceAccountName", ACCOUNT, namespace, pod["serviceAccountName"]
        for field, name in _secret_refs(pod, path):
            if name:
                yield field, SECRET, namespace, name


def _queue_references(
    pcs: Mapping[str, Any], backends: Mapping[str, type[SchedulerBackend]], default: str
) -> Iterator[Reference]:
    """The queue a PodCliqueSet's gangs go to, where its scheduler backend declares both
    where a workload names it (``queue_key``) and which cluster object that is
    (``queue_object``): on the PodCliqueSet and on each clique template."""
    cliques = _l(_d(_d(pcs.get("spec")).get("template")).get("cliques"))
    names = [_s(_d(_d(_d(c).get("spec")).get("podSpec")).get("schedulerName")) for c in cliques]
    backend = backends.get(next((n for n in names if n), default))
    if backend is None or backend.queue_key is None or backend.queue_object is None:
        return
    where, key = backend.queue_key
    sites = [("metadata", _d(pcs.get("metadata")))]
    sites += [(f"spec.template.cliques[{i}]", _d(c)) for i, c in enumerate(cliques)]
    for path, holder in sites:
        name = _s(_d(holder.get(where)).get(key))
        if name:
            yield f"{path}.{where}[{key}]", backend.queue_object, "", name


def _with_source_objects(facts: Facts, source: SourceSet, default_namespace: str) -> Facts:
    """``facts`` plus what the source's pass-through objects create."""
    out = Facts({k: {ns: set(names) for ns, names in by_ns.items()} for k, by_ns in facts.objects.items()})
    for item in source.passthrough:
        obj = item.obj
        api, kind, meta = _s(obj.get("apiVersion")), _s(obj.get("kind")), _d(obj.get("metadata"))
        key = (api.rpartition("/")[0], kind)
        if key in out.objects and _s(meta.get("name")):
            namespace = "" if key in (PRIORITY,) or kind == "Queue" else _s(meta.get("namespace")) or default_namespace
            out.objects[key].setdefault(namespace, set()).add(meta["name"])
    return out


def _message(kind: tuple[str, str], namespace: str, name: str, known: set[str], guess: bool) -> str:
    """What to say of a missing reference; ``guess``: whether a did-you-mean may be tried (a
    render tries :data:`MAX_SUGGESTIONS` at most)."""
    group, what = kind
    if what == "Queue":
        head = f"queue {go_value(name)} ({group} Queue) {NOT_IN}; its gangs stay pending until it exists"
    elif namespace:
        head = f"{what} {go_value(name)} in namespace {go_value(namespace)} {NOT_IN}"
    else:
        head = f"{what} {go_value(name)} {NOT_IN}"
    hint = did_you_mean(name, likely_candidates(name, known)) if guess else ""
    if kind == SECRET:  # other Secrets' names are not listed in a PR comment; a guess is enough
        return head + hint
    what = what + ("es" if what.endswith("s") else "s") + (f" in {namespace}" if namespace else "")
    if not known:
        return f"{head}; there are no {what}"
    names = heapq.nsmallest(MAX_LISTED, known)
    more = f" and {len(known) - MAX_LISTED} more" if len(known) > MAX_LISTED else ""
    return f"{head}; known {what}: {', '.join(names)}{more}{hint}"


def reference_warnings(
    source: SourceSet,
    facts: Facts,
    default_namespace: str,
    backends: Mapping[str, type[SchedulerBackend]],
    default_scheduler: str,
) -> list[str]:
    """``file: field: message`` for each reference of each PodCliqueSet that ``facts`` (and
    the source's own objects) do not have, at most a document's cap per PodCliqueSet."""
    known = _with_source_objects(facts, source, default_namespace)
    warnings: list[str] = []
    guesses = 0
    for item in source.podcliquesets:
        namespace = _s(_d(item.obj.get("metadata")).get("namespace")) or default_namespace
        found = 0
        refs = [*references(item.obj, namespace), *_queue_references(item.obj, backends, default_scheduler)]
        for field, kind, ns, name in refs:
            if not known.lists(*kind) or name in known.names(*kind, ns):
                continue
            found += 1
            if found > MAX_PROBLEMS_PER_DOCUMENT:
                break
            guesses += 1
            message = _message(kind, ns, name, known.names(*kind, ns), guesses <= MAX_SUGGESTIONS)
            warnings.append(f"{item.file}: {field}: {message}")
    return warnings
