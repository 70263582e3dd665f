"""The objects a ClusterFacts lists (``api.clusterfacts``), checked and indexed.

Each entry is ``"apiVersion kind namespace name"``; a malformed one is an error of the facts
file at that entry (``objects[3]``, placed at its line by ``yamlfiles.positions``): the file is
untrusted, and a fact that cannot be read would silently stop a check. Names are checked with
Kubernetes' rules, so a crafted entry cannot carry control characters or Markdown into a
message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from grove_gitops.api.clusterfacts import MAX_ENTRY, ClusterFacts
from grove_gitops.errors import InputProblem
from grove_gitops.fields.fielderrors import go_value
from grove_gitops.fields.k8snames import dns1123_label_problems, dns1123_subdomain_problems
from grove_gitops.load.source import Sourced
from grove_gitops.problems import MAX_PROBLEMS_PER_DOCUMENT, more_problems

#: ``kubectl -o custom-columns`` prints this for a field an object does not have.
NONE = "<none>"
_API_RE = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$")
_KIND_RE = re.compile(r"^[A-Z][A-Za-z0-9]{0,62}$")
FORMAT = '"apiVersion kind namespace name", with <none> as the namespace of a cluster-scoped object'


@dataclass
class Facts:
    """(group, kind) -> namespace ("" when cluster-scoped) -> names."""

    objects: dict[tuple[str, str], dict[str, set[str]]] = field(default_factory=dict)

    def add(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        group = api_version.rpartition("/")[0]
        self.objects.setdefault((group, kind), {}).setdefault(namespace, set()).add(name)

    def lists(self, group: str, kind: str) -> bool:
        """Whether the facts list this kind at all: a kind they do not list is not checked
        (the command that made them did not ask for it)."""
        return (group, kind) in self.objects

    def names(self, group: str, kind: str, namespace: str = "") -> set[str]:
        return self.objects.get((group, kind), {}).get(namespace, set())


def _entry_problem(entry: str) -> tuple[tuple[str, str, str, str] | None, str]:
    if len(entry) > MAX_ENTRY:
        return None, f"longer than {MAX_ENTRY} characters"
    parts = entry.split()
    if len(parts) != 4:
        return None, f"must be {FORMAT}"
    api, kind, namespace, name = parts
    if not _API_RE.match(api):
        return None, f"apiVersion {go_value(api)} is not group/version nor v1"
    if not _KIND_RE.match(kind):
        return None, f"kind {go_value(kind)} is not a Kubernetes kind"
    ns = "" if namespace == NONE else namespace
    bad = dns1123_label_problems(ns) if ns else []
    if bad:
        return None, f"namespace {go_value(ns)}: {'; '.join(bad)}"
    bad = dns1123_subdomain_problems(name)
    if bad:
        return None, f"name {go_value(name)}: {'; '.join(bad)}"
    return (api, kind, ns, name), ""


def read_facts(sources: Iterable[Sourced[ClusterFacts]]) -> tuple[Facts | None, list[InputProblem]]:
    """Every ClusterFacts of the source in one index (None when there is none), and the
    problems of their entries, at most a document's cap per file."""
    facts: Facts | None = None
    problems: list[InputProblem] = []
    for src in sources:
        facts = facts or Facts()
        found: list[InputProblem] = []
        more = 0  # past the cap a bad entry is only counted
        for i, entry in enumerate(src.obj.objects):
            parsed, problem = _entry_problem(entry)
            if parsed is not None:
                facts.add(*parsed)
            elif len(found) < MAX_PROBLEMS_PER_DOCUMENT:
                found.append(InputProblem(src.file, f"objects[{i}]", f"Invalid value: {go_value(entry[:100])}: {problem}"))
            else:
                more += 1
        problems += found
        if more:
            problems.append(more_problems(src.file, more, f"ClusterFacts {src.obj.metadata.name}".strip()))
    return facts, problems
