"""``migrate apply`` returns only once the garbage collector has finished its Orphan deletes.

On a freshly started controller manager the collector learns a new CRD's resources at its next
discovery (about 30 s), and until then the deleted PodCliques stay, carrying the ``orphan``
finalizer; the real control plane showed it (tests/controlplane/test_migrate.py). ``apply`` waits
for them, bounded, and says what is left when the bound passes.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from grove_gitops.migrate.handover import _wait_gone
from grove_gitops.migrate.live import MigrateError


class _Lingering:
    """Answers GET with the object ``times`` times per path, then 404, like an object whose
    orphan finalizer the collector removes late."""

    def __init__(self, times: int) -> None:
        self.left: dict[str, int] = {}
        self.times = times

    def raw(self, method: str, path: str, body: Any = None, content_type: str | None = None) -> dict[str, Any]:
        assert method == "GET"
        n = self.left.setdefault(path, self.times)
        if n <= 0:
            raise ApiException(status=404, reason="Not Found")
        self.left[path] = n - 1
        return {"metadata": {"name": path.rsplit("/", 1)[-1], "finalizers": ["orphan"]}}


def test_apply_waits_until_the_orphaned_objects_are_gone() -> None:
    said: list[str] = []
    kube = _Lingering(times=3)
    paths = ["/apis/grove.io/v1alpha1/namespaces/ns/podcliques/a", "/apis/grove.io/v1alpha1/namespaces/ns/podcliques/b"]
    _wait_gone(kube, paths, said.append, timeout=30)  # type: ignore[arg-type]
    assert all(n == 0 for n in kube.left.values())
    assert said == ["waiting for the garbage collector to finish orphaning 2 grove.io object(s)"]


def test_a_collector_that_never_finishes_is_a_clear_error() -> None:
    with pytest.raises(MigrateError, match=r"1 grove.io object\(s\) still being deleted .* Run `migrate apply` again"):
        _wait_gone(_Lingering(times=10**9), ["/apis/grove.io/v1alpha1/namespaces/ns/podcliques/a"],  # type: ignore[arg-type]
                   lambda _: None, timeout=1)
