"""Thin raw-JSON access to the API server through the official client.

The official client's typed models drop fields they do not know (``spec.workloadRef`` on a
1.37 client) and refuse extra fields on input, so everything here reads and writes raw JSON
(``_preload_content=False``) and patches pods with JSON patches, never read-modify-PUT
(``spec/test-apiserver.md``, client gotchas).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast
from urllib.parse import quote

import urllib3
from kubernetes import client
from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError

from grove_gitops.agent.ratelog import agent_log, describe
from grove_gitops.readmodel.gangs import ObjectRef

PODGANG_GROUP, PODGANG_VERSION, PODGANG_PLURAL = "scheduler.grove.io", "v1alpha1", "podgangs"
Raw = dict[str, Any]
#: Seconds the server URL and credential headers of :meth:`Kube.raw`'s requests are reused (see
#: :meth:`Kube._auth`): a token rotated on disk is picked up at most this late.
AUTH_REFRESH = 1.0


def path_segment(value: str) -> str:
    """One path segment or query value, escaped as the generated client escapes it: a name
    read from an object (or a hostile annotation) holding ``/``, ``..``, ``?`` or ``#`` stays
    one segment of the path it was meant for."""
    return quote(value, safe="")



#: ``group/version`` or a core ``version``: a DNS subdomain, then ``v<N>`` with an optional
#: ``alpha<N>``/``beta<N>`` (what the API server serves). Object data names the API versions the
#: agent looks up (a PodGang's gang-objects annotation, a render's objects); anything else would
#: put its slashes, dots or query into the request path.
_API_VERSION = re.compile(r"(?:[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)*/)?"
                          r"v[0-9]{1,9}(?:(?:alpha|beta)[0-9]{1,9})?")


def api_root(api_version: str) -> str:
    """``/apis/<group>/<version>`` or ``/api/<version>``; raises ApiException (400, nothing
    sent) for an ``api_version`` that is not one, so it cannot reach another path."""
    if len(api_version) > 320 or not _API_VERSION.fullmatch(api_version):
        raise ApiException(status=400, reason=f"not an API version: {api_version[:100]!r}")
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"


def _json(response: Any) -> Raw:
    return cast(Raw, json.loads(response.data))


class Kube:
    def __init__(
        self,
        api_client: client.ApiClient,
        field_manager: str = "grove-gitops-gate-lifter",
        pool_size: int = 32,
        request_timeout: float = 10.0,
    ) -> None:
        config = api_client.configuration
        if (config.connection_pool_maxsize or 0) < pool_size:
            # Parallel pod patches need as many pooled connections as workers, or urllib3
            # discards connections and every request pays a new TCP handshake.
            config.connection_pool_maxsize = pool_size
            api_client.rest_client = rest.RESTClientObject(config)
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.events = client.EventsV1Api(api_client)
        self.field_manager = field_manager
        self._plurals: dict[tuple[str, str], str] = {}
        self._plural_lock = threading.Lock()
        # Every request has a connect and read timeout: a hanging API server must end in an
        # error the loops retry with backoff, never in a thread blocked forever.
        self.timeout = (min(5.0, request_timeout), request_timeout)
        self._pool_timeout = urllib3.Timeout(connect=self.timeout[0], read=self.timeout[1])
        self._auth_lock = threading.Lock()
        self._auth_cache: tuple[float, str, dict[str, str]] | None = None

    def _auth(self) -> tuple[str, dict[str, str]]:
        """The server's URL and the headers every request carries (User-Agent, credentials),
        read from the client's configuration at most every :data:`AUTH_REFRESH` seconds.

        The generated client asks the configuration on every request; its kubeconfig and
        in-cluster hooks then reload the credentials and set the host URL again (which scans the
        environment for proxies), and the call is checked by pydantic: together a third of the
        agent's CPU per gate patch in the release benchmark (issue 35.3). The hooks still run,
        once a second, so a rotated token is picked up as before."""
        now = time.monotonic()
        with self._auth_lock:
            cached = self._auth_cache
            if cached is not None and now - cached[0] < AUTH_REFRESH:
                return cached[1], cached[2]
        headers: dict[str, str] = dict(self.api_client.default_headers)
        if self.api_client.cookie:
            headers["Cookie"] = self.api_client.cookie
        queries: list[tuple[str, str]] = []
        self.api_client.update_params_for_auth(headers, queries, ["BearerToken"], "", "", None)
        if queries:  # credentials in the query string: no kubeconfig gives these; never cached
            raise ApiException(status=0, reason="credentials in the query string are not supported")
        host = str(self.api_client.configuration.host)
        with self._auth_lock:
            self._auth_cache = (now, host, headers)
        return host, headers

    def _direct(self, method: str, path: str, body: Any, content_type: str) -> tuple[int, str, bytes]:
        """One request straight through the client's connection pool (its TLS, proxy and retry
        settings): status, reason and body of the answer."""
        host, auth = self._auth()
        headers = {**auth, "Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            # A string or bytes is the body already (server-side apply's YAML or JSON), as the
            # generated client sends it; anything else is JSON-encoded.
            data = body.encode() if isinstance(body, str) else body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            response = self.api_client.rest_client.pool_manager.request(
                method, host + path, body=data, headers=headers, timeout=self._pool_timeout, preload_content=True)
        except urllib3.exceptions.SSLError as exc:  # as the generated client reports it
            raise ApiException(status=0, reason=f"{type(exc).__name__}\n{exc}") from exc
        return int(response.status), str(response.reason), bytes(response.data or b"")

    def raw(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Raw:
        """One request as raw JSON, past the generated API classes (see :meth:`_auth`: the gate
        patches, creates and the backend objects' reads are the agent's hot path, and the
        generated client cost a third of its CPU per request); errors raise ApiException."""
        status, reason, payload = self._direct(method, path, body, content_type)
        payload = payload or b"{}"
        if status >= 400:
            raise ApiException(status=status, reason=reason, body=payload.decode(errors="replace"))
        return cast(Raw, json.loads(payload))

    # -- lists and watches -------------------------------------------------------------
    def list_pods(self, namespace: str | None, selector: str) -> Raw:
        if namespace:
            return _json(self.core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False, _request_timeout=self.timeout))
        return _json(self.core.list_pod_for_all_namespaces(label_selector=selector, _preload_content=False, _request_timeout=self.timeout))

    def list_podgangs(self, namespace: str | None, selector: str) -> Raw:
        if namespace:
            return _json(
                self.custom.list_namespaced_custom_object(
                    PODGANG_GROUP,
                    PODGANG_VERSION,
                    namespace,
                    PODGANG_PLURAL,
                    label_selector=selector,
                    _preload_content=False,
                    _request_timeout=self.timeout,
                )
            )
        return _json(
            self.custom.list_cluster_custom_object(
                PODGANG_GROUP, PODGANG_VERSION, PODGANG_PLURAL, label_selector=selector, _preload_content=False,
                _request_timeout=self.timeout,
            )
        )

    def watch_pods(
        self,
        namespace: str | None,
        selector: str,
        resource_version: str,
        timeout: int,
        read_timeout: float,
        on_connect: Callable[[], None] | None = None,
    ) -> Iterator[Raw]:
        func = self.core.list_namespaced_pod if namespace else self.core.list_pod_for_all_namespaces
        args = (namespace,) if namespace else ()
        return self._stream(func, args, selector, resource_version, timeout, read_timeout, on_connect)

    def watch_podgangs(
        self,
        namespace: str | None,
        selector: str,
        resource_version: str,
        timeout: int,
        read_timeout: float,
        on_connect: Callable[[], None] | None = None,
    ) -> Iterator[Raw]:
        func: Any
        if namespace:
            func = self.custom.list_namespaced_custom_object
            args: tuple[str, ...] = (PODGANG_GROUP, PODGANG_VERSION, namespace, PODGANG_PLURAL)
        else:
            func = self.custom.list_cluster_custom_object
            args = (PODGANG_GROUP, PODGANG_VERSION, PODGANG_PLURAL)
        return self._stream(func, args, selector, resource_version, timeout, read_timeout, on_connect)

    def _stream(
        self,
        func: Any,
        args: tuple[str, ...],
        selector: str,
        resource_version: str,
        timeout: int,
        read_timeout: float,
        on_connect: Callable[[], None] | None = None,
    ) -> Iterator[Raw]:
        """Raw watch events; a 410 (or any ERROR event) is raised as :class:`ApiException`.

        ``read_timeout`` bounds how long one read may block, so a quiet stream ends with a
        urllib3 ``ReadTimeoutError`` and the caller can check for shutdown and resume from the
        last resourceVersion. ``on_connect`` is called once the server has answered the watch
        request (headers received): the liveness signal of a quiet but healthy stream.
        """
        if on_connect is not None:
            inner = func

            @functools.wraps(inner)
            def func(*a: Any, **kw: Any) -> Any:
                response = inner(*a, **kw)
                on_connect()
                return response

        # The client's Watch would also build a typed model of every object (a V1Pod per
        # event), which the agent never reads: a tenth of its CPU in the rollout benchmark.
        # Each line is one JSON event; parse it and nothing more.
        response = func(
            *args,
            label_selector=selector,
            resource_version=resource_version,
            timeout_seconds=timeout,
            allow_watch_bookmarks=False,
            watch=True,
            _preload_content=False,
            _request_timeout=(5.0, read_timeout),
        )
        try:
            status = getattr(response, "status", 200)
            if isinstance(status, int) and not 200 <= status <= 299:
                raise ApiException(status=status, reason=response.data.decode("utf-8", "replace")[:1000])
            for line in iter_resp_lines(response):
                if not line:
                    continue
                event = json.loads(line)
                raw = event.get("object") if isinstance(event, dict) else None
                if not isinstance(event, dict) or event.get("type") == "ERROR" or not isinstance(raw, dict):
                    code = int(raw.get("code", 500)) if isinstance(raw, dict) else 500
                    raise ApiException(status=code, reason=str(raw)[:1000])
                yield {"type": event.get("type"), "object": raw}
        finally:
            response.close()
            response.release_conn()

    # -- objects -----------------------------------------------------------------------
    def read_pod(self, namespace: str, name: str) -> Raw:
        return _json(self.core.read_namespaced_pod(name, namespace, _preload_content=False, _request_timeout=self.timeout))

    def patch_pod_json(self, namespace: str, name: str, ops: list[Raw]) -> Raw:
        return self.raw("PATCH", f"/api/v1/namespaces/{path_segment(namespace)}/pods/{path_segment(name)}?fieldManager="
                        f"{path_segment(self.field_manager)}", ops, "application/json-patch+json")

    def delete_pod(self, namespace: str, name: str, uid: str) -> Raw | None:
        """Delete one pod, only if it still has ``uid``; returns the pod when it is now
        terminating (graceful deletion), None when it is gone. A pod re-created under the same
        name since the decision fails the precondition (409) instead of being deleted."""
        body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
        response = self.core.delete_namespaced_pod(
            name, namespace, body=body, _preload_content=False, _request_timeout=self.timeout
        )
        data = _json(response)
        if data.get("kind") == "Pod" and (data.get("metadata") or {}).get("deletionTimestamp"):
            return data
        return None

    def patch_podgang_status(self, namespace: str, name: str, status: Raw) -> None:
        # (the group and version spelled out: the RBAC test reads the path's constant start)
        self.raw("PATCH", f"/apis/scheduler.grove.io/v1alpha1/namespaces/{path_segment(namespace)}/podgangs/{path_segment(name)}/status",
                 {"status": status}, "application/merge-patch+json")

    def plural(self, api_version: str, kind: str) -> str | None:
        """Resource name of ``kind`` from discovery (cached); None if the API is not served."""
        key = (api_version, kind)
        with self._plural_lock:
            if key in self._plurals:
                return self._plurals[key]
        path = api_root(api_version)
        try:
            data = self.raw("GET", path)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        plural = None
        for res in data.get("resources", []):
            if res.get("kind") == kind and "/" not in res.get("name", ""):
                plural = str(res["name"])
                break
        with self._plural_lock:
            if plural is not None:
                self._plurals[key] = plural
        return plural

    def object_exists(self, ref: ObjectRef) -> bool:
        plural = self.plural(ref.api_version, ref.kind)
        if plural is None:
            return False
        try:
            self.raw("GET", f"{api_root(ref.api_version)}/namespaces/{path_segment(ref.namespace)}/{path_segment(plural)}/{path_segment(ref.name)}")
            return True
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise

    def get_cluster_object(self, api_version: str, kind: str, name: str) -> Raw | None:
        plural = self.plural(api_version, kind)
        if plural is None or "/" not in api_version:
            return None
        group, version = api_version.split("/", 1)
        try:
            return _json(self.custom.get_cluster_custom_object(group, version, plural, name, _preload_content=False, _request_timeout=self.timeout))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    # -- any object (the autoscaling half creates what a render at live counts holds) ------
    def path(self, api_version: str, kind: str, namespace: str, name: str | None = None) -> str | None:
        """The REST path of a namespaced object (or its collection); None if not served."""
        plural = self.plural(api_version, kind)
        if plural is None:
            return None
        base = f"{api_root(api_version)}/namespaces/{path_segment(namespace)}/{path_segment(plural)}"
        return f"{base}/{path_segment(name)}" if name is not None else base

    def _need(self, api_version: str, kind: str, namespace: str, name: str | None = None) -> str:
        found = self.path(api_version, kind, namespace, name)
        if found is None:
            raise ApiException(status=404, reason=f"{kind}.{api_version} is not served by the API server")
        return found

    def create(self, obj: Raw) -> Raw:
        meta = obj["metadata"]
        return self.raw("POST", self._need(obj["apiVersion"], obj["kind"], meta["namespace"]) +
                        f"?fieldManager={path_segment(self.field_manager)}", obj)

    def list_objects(self, api_version: str, kind: str, namespace: str | None, selector: str) -> Raw:
        if namespace:
            path = self._need(api_version, kind, namespace)
        else:
            plural = self.plural(api_version, kind)
            if plural is None:
                raise ApiException(status=404, reason=f"{kind}.{api_version} is not served by the API server")
            path = f"{api_root(api_version)}/{path_segment(plural)}"
        return self.raw("GET", f"{path}?labelSelector={path_segment(selector)}")

    def patch_object(self, api_version: str, kind: str, namespace: str, name: str, body: Any, *,
                     subresource: str = "", patch_type: str = "application/merge-patch+json") -> Raw:
        path = self._need(api_version, kind, namespace, name) + (f"/{path_segment(subresource)}" if subresource else "")
        return self.raw("PATCH", f"{path}?fieldManager={path_segment(self.field_manager)}", body, patch_type)

    def delete_object(self, api_version: str, kind: str, namespace: str, name: str, uid: str) -> None:
        """Delete one object only if it still has ``uid``; gone already is success."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid},
                "propagationPolicy": "Background"}
        try:
            self.raw("DELETE", self._need(api_version, kind, namespace, name), body)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def watch_objects(self, api_version: str, kind: str, namespace: str | None, selector: str,
                      resource_version: str, timeout: int, read_timeout: float,
                      on_connect: Callable[[], None] | None = None) -> Iterator[Raw]:
        plural = self.plural(api_version, kind)
        if plural is None or "/" not in api_version:
            raise ApiException(status=404, reason=f"{kind}.{api_version} is not served by the API server")
        group, version = api_version.split("/", 1)
        func: Any
        if namespace:
            func = self.custom.list_namespaced_custom_object
            args: tuple[str, ...] = (group, version, namespace, plural)
        else:
            func = self.custom.list_cluster_custom_object
            args = (group, version, plural)
        return self._stream(func, args, selector, resource_version, timeout, read_timeout, on_connect)

    def emit_event(self, namespace: str, involved: Raw, reason: str, note: str, event_type: str = "Warning") -> bool:
        """Post one ``events.k8s.io/v1`` Event about ``involved``, named and namespaced as
        client-go's recorder does (:func:`event_body`); True when the server took it.

        Events are advice: a refused one never stops the caller. It is logged with the
        server's message, once per distinct message per interval (:mod:`.ratelog`), so a
        broken Event path shows in the log instead of vanishing (issue 32: every Event was
        refused by a real apiserver, and the refusal was swallowed). The Event goes to the
        involved object's own namespace whatever ``namespace`` says (the server refuses any
        other), ``default`` for a cluster-scoped object.
        """
        del namespace  # kept in the signature for the callers; the object's own namespace rules
        body = event_body(involved, reason, note, event_type, self.field_manager)
        where = body["metadata"]["namespace"]
        try:
            self.raw("POST", f"/apis/events.k8s.io/v1/namespaces/{path_segment(str(where))}/events", body)
            return True
        except (ApiException, HTTPError, OSError, ValueError) as exc:
            agent_log.warning("Event %s about %s %s not recorded: %s", reason, involved.get("kind"),
                              (involved.get("metadata") or {}).get("name"), describe(exc),
                              key=f"event:{reason}:{describe(exc)}")
            return False


#: Where client-go puts Events about cluster-scoped objects.
CLUSTER_EVENT_NAMESPACE = "default"
_MAX_NAME = 253  # a DNS subdomain
_last_stamp = 0
_stamp_lock = threading.Lock()


def _stamp() -> int:
    """A nanosecond timestamp, strictly increasing within the process (two Events in the same
    nanosecond still get distinct names)."""
    global _last_stamp
    with _stamp_lock:
        _last_stamp = max(time.time_ns(), _last_stamp + 1)
        return _last_stamp


def event_name(involved_name: str) -> str:
    """``<involved name>.<hex timestamp>`` as client-go's ``events.k8s.io`` recorder names
    an Event (``fmt.Sprintf("%v.%x", name, t.UnixNano())``), within 253 characters. The name
    is set explicitly: a ``generateName`` ending in ``.`` is refused (``metadata.generateName:
    Invalid value``)."""
    suffix = f".{_stamp():x}"
    base = (involved_name or "grove-gitops")[: _MAX_NAME - len(suffix)].rstrip(".-") or "grove-gitops"
    return f"{base}{suffix}"


def event_body(involved: Raw, reason: str, note: str, event_type: str, instance: str) -> Raw:
    """The Event: in the involved object's namespace with ``regarding.namespace`` set to it
    (the server refuses a mismatch), or in ``default`` for a cluster-scoped object."""
    meta = involved.get("metadata") or {}
    own = str(meta.get("namespace") or "")
    regarding: Raw = {
        "apiVersion": involved.get("apiVersion"),
        "kind": involved.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
    }
    if own:
        regarding["namespace"] = own
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": event_name(str(meta.get("name") or "")),
                     "namespace": own or CLUSTER_EVENT_NAMESPACE},
        "reportingController": "grove-gitops.io/gate-lifter",
        "reportingInstance": instance[:128],
        "action": "Check",
        "reason": reason[:128],
        "note": note[:1024],
        "type": event_type,
        "eventTime": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "regarding": {k: v for k, v in regarding.items() if v is not None},
    }
