"""ResourceQuota enforcement at pod CREATE and quantity arithmetic, pinned to Kubernetes' rules.

Rules (kubernetes.io "Resource Quotas"; kube's ResourceQuota admission plugin and pod quota
evaluator; apimachinery ``resource.Quantity``):

- a pod create that would make any quota's usage exceed ``spec.hard`` is refused with 403
  Forbidden: ``pods "<name>" is forbidden: exceeded quota: <quota>, requested: <r>=<q>, used:
  <r>=<q>, limited: <r>=<q>`` (the exceeded resources only, sorted, canonical quantities);
- quota resources for pods: ``pods``/``count/pods``, ``requests.cpu``=``cpu``,
  ``requests.memory``=``memory``, ``limits.*``, ``requests.<extended resource>``;
- usage counts pods that are not terminal (Succeeded/Failed) and not being deleted;
- a quota on cpu or memory requires every container to state it ("must specify");
- quota is charged at creation: scheduling-gated pods count.
"""

from __future__ import annotations

import json
import threading
from fractions import Fraction
from typing import Any

import kubernetes.client
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client import ApiException

from tests.fakeapi.fakeapi_helpers import pod_manifest
from tests.fakeserver import FakeApiServer
from tests.fakeserver.quantity import BINARY, Quantity, QuantityError


def pod(name: str, cpu: str | None = "1", memory: str | None = "1Gi", gpu: str | None = None, **kw: Any) -> dict[str, Any]:
    manifest = pod_manifest(name, **kw)
    requests: dict[str, str] = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    resources: dict[str, Any] = {"requests": requests} if requests else {}
    if gpu:
        resources["limits"] = {"nvidia.com/gpu": gpu}
    manifest["spec"]["containers"][0]["resources"] = resources
    return manifest


def quota(name: str, **hard: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name},
        "spec": {"hard": {k.replace("__", "/").replace("_", "."): v for k, v in hard.items()}},
    }


def _forbidden(info: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    assert info.value.status == 403
    body: dict[str, Any] = json.loads(info.value.body)
    assert body["reason"] == "Forbidden"
    return body


# ------------------------------------------------------------------------------ admission
def test_exceeding_a_quota_is_403_with_kubes_message(core: kubernetes.client.CoreV1Api) -> None:
    """Two 1-CPU pods fit ``requests.cpu: 2``; the third is refused, naming only the exceeded resource."""
    core.create_namespaced_resource_quota("default", quota("compute", requests_cpu="2", pods="10"))
    core.create_namespaced_pod("default", pod("a", gates=()))
    core.create_namespaced_pod("default", pod("b"))  # gated pods are charged too
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("c", cpu="500m"))
    body = _forbidden(info)
    assert body["message"] == (
        'pods "c" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, '
        "used: requests.cpu=2, limited: requests.cpu=2"
    )
    assert body["details"] == {"name": "c", "kind": "pods"}
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["a", "b"]


def test_several_exceeded_resources_are_listed_sorted(core: kubernetes.client.CoreV1Api) -> None:
    """``cpu``/``memory`` are the same usage as ``requests.*``; each exceeded key appears, sorted."""
    core.create_namespaced_resource_quota("default", quota("q", cpu="1", memory="1536Mi", pods="1"))
    core.create_namespaced_pod("default", pod("a", cpu="800m", memory="1Gi"))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("b", cpu="300m", memory="1Gi"))
    assert _forbidden(info)["message"] == (
        'pods "b" is forbidden: exceeded quota: q, requested: cpu=300m,memory=1Gi,pods=1, '
        "used: cpu=800m,memory=1Gi,pods=1, limited: cpu=1,memory=1536Mi,pods=1"
    )


def test_extended_resources_are_quoted_as_requests_prefix(core: kubernetes.client.CoreV1Api) -> None:
    """``requests.nvidia.com/gpu``: a GPU limit without a request is the request (API defaulting)."""
    core.create_namespaced_resource_quota("default", quota("gpus", **{"requests.nvidia.com/gpu": "4"}))
    core.create_namespaced_pod("default", pod("a", gpu="3"))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("b", gpu="2"))
    assert _forbidden(info)["message"] == (
        'pods "b" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=2, '
        "used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=4"
    )
    core.create_namespaced_pod("default", pod("c", gpu="1"))


def test_terminal_and_deleted_pods_free_their_quota(server: FakeApiServer, core: kubernetes.client.CoreV1Api) -> None:
    """Succeeded/Failed pods and deleted pods no longer count (``count/pods`` counts every pod object)."""
    core.create_namespaced_resource_quota("default", quota("q", pods="1"))
    core.create_namespaced_pod("default", pod("a"))
    with pytest.raises(ApiException):
        core.create_namespaced_pod("default", pod("b"))
    core.patch_namespaced_pod_status("a", "default", {"status": {"phase": "Succeeded"}})
    core.create_namespaced_pod("default", pod("b"))
    core.delete_namespaced_pod("b", "default")
    core.create_namespaced_pod("default", pod("c"))


def test_count_pods_counts_terminal_pods_too(core: kubernetes.client.CoreV1Api) -> None:
    """``count/pods`` is an object count: a Succeeded pod still uses it."""
    core.create_namespaced_resource_quota("default", quota("q", count__pods="1"))
    core.create_namespaced_pod("default", pod("a"))
    core.patch_namespaced_pod_status("a", "default", {"status": {"phase": "Succeeded"}})
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("b"))
    assert "exceeded quota: q, requested: count/pods=1, used: count/pods=1, limited: count/pods=1" in _forbidden(
        info
    )["message"]


def test_a_cpu_quota_requires_every_container_to_state_cpu(core: kubernetes.client.CoreV1Api) -> None:
    """With ``requests.cpu`` tracked, a container without a cpu request is refused ("must specify")."""
    core.create_namespaced_resource_quota("default", quota("q", requests_cpu="10"))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod("a", cpu=None))
    assert _forbidden(info)["message"] == 'pods "a" is forbidden: failed quota: q: must specify requests.cpu for: main'


def test_other_namespaces_and_scoped_quotas_do_not_apply(core: kubernetes.client.CoreV1Api) -> None:
    """Quota is per namespace; a quota with ``scopes`` is not emulated and never refuses."""
    core.create_namespace({"metadata": {"name": "other"}})
    core.create_namespaced_resource_quota("other", quota("q", pods="0"))
    scoped = quota("scoped", pods="0")
    scoped["spec"]["scopes"] = ["BestEffort"]
    core.create_namespaced_resource_quota("default", scoped)
    core.create_namespaced_pod("default", pod("a"))


def test_status_hard_and_used_follow_the_pods(core: kubernetes.client.CoreV1Api) -> None:
    """The quota's status mirrors ``spec.hard`` and the live usage after creates, terminations and deletes."""
    core.create_namespaced_resource_quota("default", quota("q", requests_cpu="4", pods="5"))

    def status() -> tuple[dict[str, str], dict[str, str]]:
        got = core.read_namespaced_resource_quota("q", "default").status
        return got.hard, got.used

    assert status() == ({"pods": "5", "requests.cpu": "4"}, {"pods": "0", "requests.cpu": "0"})
    core.create_namespaced_pod("default", pod("a", cpu="1500m"))
    core.create_namespaced_pod("default", pod("b", cpu="500m"))
    assert status()[1] == {"pods": "2", "requests.cpu": "2"}
    core.patch_namespaced_pod_status("a", "default", {"status": {"phase": "Failed"}})
    assert status()[1] == {"pods": "1", "requests.cpu": "500m"}
    core.delete_namespaced_pod("b", "default")
    assert status()[1] == {"pods": "0", "requests.cpu": "0"}


def test_concurrent_creates_cannot_overshoot(server: FakeApiServer) -> None:
    """Admission and storage happen atomically per pod: 8 racing creates against ``pods: 3`` leave 3."""
    core = kubernetes.client.CoreV1Api(server.api_client())
    core.create_namespaced_resource_quota("default", quota("q", pods="3"))
    codes: list[int] = []
    lock = threading.Lock()

    def create(index: int) -> None:
        client = kubernetes.client.CoreV1Api(server.api_client())
        try:
            client.create_namespaced_pod("default", pod(f"p{index}"))
            code = 201
        except ApiException as error:
            code = error.status
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(codes) == [201] * 3 + [403] * 5
    assert len(core.list_namespaced_pod("default").items) == 3


# ------------------------------------------------------------------------------ quantities
@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("500m", "500m"),
        ("1.5", "1500m"),
        ("1000m", "1"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("2Gi", "2Gi"),
        ("1536Mi", "1536Mi"),
        ("1024", "1024"),
        ("1e3", "1e3"),
        ("0.5Gi", "512Mi"),
        ("100Ki", "100Ki"),
        ("1.5Ki", "1536"),
        ("0", "0"),
        ("12345n", "12345n"),
        ("1M", "1M"),
    ],
)
def test_quantities_print_canonically(text: str, canonical: str) -> None:
    """``Quantity.String()``: binary suffix for whole multiples of 1024 (≥ 1024), otherwise the largest
    power-of-1000 suffix that keeps an integer mantissa."""
    assert str(Quantity.parse(text)) == canonical


def test_sums_keep_the_first_terms_format() -> None:
    """``Quantity.Add`` keeps the receiver's format unless it is zero: 1Gi + 512Mi = 1536Mi; 0 + 1Gi = 1Gi."""
    assert str(Quantity.parse("1Gi") + Quantity.parse("512Mi")) == "1536Mi"
    assert str(Quantity.zero() + Quantity.parse("1Gi")) == "1Gi"
    assert str(Quantity.parse("1") + Quantity.parse("500m")) == "1500m"


@pytest.mark.parametrize("bad", ["", "1.2.3", "abc", "1Xi", "--1", "1 Gi", "x" * 100])
def test_malformed_quantities_are_rejected(bad: str) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(bad)


@given(st.integers(min_value=0, max_value=2**50), st.sampled_from(["", "m", "k", "Ki", "Mi", "Gi"]))
def test_printing_round_trips(number: int, suffix: str) -> None:
    """Whatever the input, the canonical text parses back to the same amount (fuzzed)."""
    parsed = Quantity.parse(f"{number}{suffix}")
    again = Quantity.parse(str(parsed))
    assert again.value == parsed.value
    if suffix.endswith("i") and parsed.value >= 1024:
        assert again.format == BINARY
    assert isinstance(parsed.value, Fraction)
