"""Deterministic YAML bytes for Kubernetes objects.

Every mapping is emitted with sorted keys — what ``kubectl get -o yaml`` prints, and
PyYAML's own default — so the bytes never depend on dict insertion order or on how a user
ordered their source file (``apiVersion, kind, metadata, spec`` happen to sort first).
PyYAML's C emitter does the writing; anchors and aliases are never emitted, even when the
same Python object is referenced twice, because Kubernetes tooling and reviewers expect
plain documents.
"""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.CSafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_object(obj: dict[str, Any]) -> str:
    return yaml.dump(
        obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True, width=1_000_000
    )


def dump_plain(data: Any) -> str:
    """YAML for our own small files (kustomization.yaml), keys in the given order."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1_000_000)
