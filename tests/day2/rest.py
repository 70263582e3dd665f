"""Raw JSON requests and list+watch loops over the official ``kubernetes`` client.

The simulators read and write objects as plain JSON, not typed models: the typed models
drop fields the client does not know and refuse extra ones, and a GitOps tool or a kubelet
must round-trip whatever the render wrote. Every request goes over real HTTP to the API
server the ``ApiClient`` points at; :class:`Rest` counts them per verb so a test can assert
how much a simulator (or the agent, by subtraction) costs.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, cast

import kubernetes.client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError, ReadTimeoutError

Raw = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "GET": "get"}


def resource_of(path: str) -> str:
    """``pods``, ``pods/status``, ``podgangs``... of a REST path (what the fake server logs)."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    return "/".join([rest[0], *rest[2:3]]) if rest else ""


def key_of(obj: Raw) -> tuple[str, str]:
    """``(namespace, name)`` of an object ("" for a cluster-scoped one)."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Rest:
    """JSON over one ``ApiClient``; resolves kinds to paths through API discovery (cached)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, timeout: float = 10.0) -> None:
        self.api_client = api_client
        self.timeout = (min(5.0, timeout), timeout)
        self.calls: Counter[str] = Counter()
        self.requests: Counter[tuple[str, str]] = Counter()  # (verb, resource), as the fake logs them
        self._lock = threading.Lock()
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Raw:
        """One request; the decoded JSON answer, or :class:`ApiException` for a status >= 400."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        m, url, hdrs, data, _ = self.api_client.param_serialize(
            method, path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        with self._lock:
            self.calls[method] += 1
            self.requests[_VERBS.get(method, method.lower()), resource_of(path)] += 1
        response = self.api_client.call_api(m, url, header_params=hdrs, body=data, _request_timeout=self.timeout)
        response.read()  # type: ignore[no-untyped-call]
        payload = response.data or b"{}"
        if response.status >= 400:
            raise ApiException(status=response.status, reason=str(response.reason), body=payload.decode(errors="replace"))
        return cast(Raw, json.loads(payload))

    @property
    def writes(self) -> int:
        """POST, PUT, PATCH and DELETE requests made so far."""
        return sum(n for verb, n in self.calls.items() if verb in ("POST", "PUT", "PATCH", "DELETE"))

    # -- discovery -----------------------------------------------------------------------
    def _group_version(self, api_version: str) -> dict[str, tuple[str, bool]]:
        with self._lock:
            cached = self._resources.get(api_version)
        if cached is not None:
            return cached
        base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        listing = self.request("GET", base)
        kinds = {
            str(r["kind"]): (str(r["name"]), bool(r.get("namespaced")))
            for r in listing.get("resources", [])
            if "/" not in str(r.get("name", ""))
        }
        with self._lock:
            self._resources[api_version] = kinds
        return kinds

    def path(self, api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of a kind's collection (or of one object when ``name`` is given)."""
        plural, namespaced = self._group_version(api_version).get(kind, ("", False))
        if not plural:
            raise LookupError(f"{api_version} {kind} is not served")
        base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        path = f"{base}/namespaces/{namespace}/{plural}" if namespaced and namespace else f"{base}/{plural}"
        return f"{path}/{name}" if name else path

    def object_path(self, obj: Raw) -> str:
        namespace, name = key_of(obj)
        return self.path(str(obj["apiVersion"]), str(obj["kind"]), namespace or None, name)

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Raw | None:
        """The live object, or ``None`` when it does not exist."""
        try:
            return self.request("GET", self.path(api_version, kind, namespace, name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise


def list_watch(
    rest: Rest,
    path: str,
    on_list: Callable[[list[Raw], str], None],
    on_event: Callable[[str, Raw], None],
    stop: threading.Event,
    *,
    label_selector: str | None = None,
    watch_seconds: int = 30,
    read_timeout: float = 0.5,
) -> None:
    """List ``path`` then watch it from the list's resourceVersion until ``stop`` is set.

    A watch that ends resumes from the last event; a 410 or a broken connection re-lists
    (``on_list`` again, so the caller can count relists as gaps). A read timeout only checks
    ``stop``: short reads keep shutdown quick.
    """
    query = f"?labelSelector={label_selector}" if label_selector else ""
    rv = ""
    while not stop.is_set():
        if not rv:
            try:
                listing = rest.request("GET", path + query)
            except (ApiException, HTTPError, OSError):
                stop.wait(0.05)
                continue
            rv = str(listing["metadata"]["resourceVersion"])
            on_list(list(listing.get("items") or []), rv)
        sep = "&" if query else "?"
        watch_query = f"{query}{sep}watch=true&resourceVersion={rv}&timeoutSeconds={watch_seconds}"
        try:
            for event in _stream(rest, path + watch_query, read_timeout, stop):
                kind = str(event.get("type"))
                obj = cast(Raw, event.get("object") or {})
                if kind == "ERROR":
                    rv = ""  # 410 Gone (or any error): list again
                    break
                if kind == "BOOKMARK":
                    rv = str(obj["metadata"]["resourceVersion"])
                    continue
                rv = str(obj["metadata"]["resourceVersion"])
                on_event(kind, obj)
        except (ApiException, HTTPError, OSError):
            if not stop.is_set():
                rv = ""
                stop.wait(0.05)


def _stream(rest: Rest, path: str, read_timeout: float, stop: threading.Event) -> Iterator[Raw]:
    """The events of one watch request, until it ends or ``stop`` is set."""
    m, url, hdrs, data, _ = rest.api_client.param_serialize(
        "GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
    )
    with rest._lock:
        rest.calls["WATCH"] += 1
    response = rest.api_client.call_api(m, url, header_params=hdrs, body=data, _request_timeout=(5.0, read_timeout))
    raw_response = response.response
    try:
        if response.status >= 400:
            raw_response.read()
            raise ApiException(status=response.status, reason=str(response.reason))
        lines = iter_resp_lines(raw_response)  # type: ignore[no-untyped-call]
        while not stop.is_set():
            try:
                line = next(lines)
            except StopIteration:
                return
            except ReadTimeoutError:
                # A quiet stream, not a broken one; urllib3 cannot resume a chunked read after a
                # timeout, so the caller reconnects from the last resourceVersion.
                return
            if line:
                yield cast(Raw, json.loads(line))
    finally:
        raw_response.close()
        raw_response.release_conn()
