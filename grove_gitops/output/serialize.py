"""Deterministic YAML bytes for Kubernetes objects.

Every mapping is emitted with sorted keys — what ``kubectl get -o yaml`` prints — so the
bytes never depend on dict insertion order or on how a user ordered their source file
(``apiVersion, kind, metadata, spec`` happen to sort first). Our own emitter
(:mod:`grove_gitops.output.emit`) does the writing: PyYAML's C dumper cost most of a large
render's time (issue 10). It never emits anchors or aliases, even when the same Python
object is referenced twice, because Kubernetes tooling and reviewers expect plain documents,
and it quotes every string that a YAML 1.1 or 1.2 reader could take for another type.

:func:`dump_object_pyyaml` keeps PyYAML's spelling of the same objects for the benchmark's
floor and for comparisons; PyYAML remains the reader everywhere.
"""

from __future__ import annotations

from typing import Any

import yaml

from grove_gitops.frozen import SharedDict, SharedList
from grove_gitops.output.emit import emit


class _Dumper(yaml.CSafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


_Dumper.add_representer(SharedList, yaml.SafeDumper.represent_list)
_Dumper.add_representer(SharedDict, yaml.SafeDumper.represent_dict)


def dump_object(obj: dict[str, Any]) -> str:
    return emit(obj)


def dump_plain(data: Any) -> str:
    """YAML for our own small files (kustomization.yaml), keys in the given order."""
    return emit(data, sort_keys=False)


def dump_object_pyyaml(obj: dict[str, Any]) -> str:
    """What :func:`dump_object` produced before issue 10: PyYAML's C dumper."""
    return yaml.dump(
        obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True, width=1_000_000
    )
