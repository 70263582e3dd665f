"""``/healthz`` and Prometheus ``/metrics`` for the long-running processes.

A handful of gauges and counters in the text exposition format needs no client library; the
HTTP server is the standard library's, in a daemon thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass
class Metric:
    name: str
    kind: str  # counter | gauge
    help: str
    values: dict[tuple[tuple[str, str], ...], float] = field(default_factory=dict)


class Registry:
    """Thread-safe metrics, rendered on demand."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._metrics: dict[str, Metric] = {}

    def _metric(self, name: str, kind: str, help_text: str) -> Metric:
        metric = self._metrics.get(name)
        if metric is None:
            metric = self._metrics[name] = Metric(name, kind, help_text)
        return metric

    def inc(self, name: str, help_text: str, amount: float = 1.0, **labels: str) -> None:
        with self._lock:
            metric = self._metric(name, "counter", help_text)
            key = tuple(sorted(labels.items()))
            metric.values[key] = metric.values.get(key, 0.0) + amount

    def set(self, name: str, help_text: str, value: float, replace: bool = False, **labels: str) -> None:
        with self._lock:
            metric = self._metric(name, "gauge", help_text)
            if replace:
                metric.values.clear()
            metric.values[tuple(sorted(labels.items()))] = value

    def remove(self, name: str, **labels: str) -> None:
        """Drop one series of a gauge (a wait that ended: its reason is no longer under way)."""
        with self._lock:
            metric = self._metrics.get(name)
            if metric is not None:
                metric.values.pop(tuple(sorted(labels.items())), None)

    def observe(self, name: str, help_text: str, seconds: float, buckets: tuple[float, ...] = ()) -> None:
        """A duration: ``<name>_seconds_sum`` / ``_count`` plus the last value; with
        ``buckets``, also cumulative ``<name>_seconds_bucket{le=...}`` counters (as a
        Prometheus histogram), so the share of slow ones can be read for any time window."""
        self.inc(f"{name}_seconds_sum", f"{help_text} (sum)", seconds)
        self.inc(f"{name}_seconds_count", f"{help_text} (count)")
        self.set(f"{name}_last_seconds", f"{help_text} (last)", seconds)
        for bound in (*buckets, float("inf")) if buckets else ():
            self.inc(f"{name}_seconds_bucket", f"{help_text} (histogram)", 1.0 if seconds <= bound else 0.0,
                     le="+Inf" if bound == float("inf") else f"{bound:g}")

    def get(self, name: str, **labels: str) -> float | None:
        with self._lock:
            metric = self._metrics.get(name)
            return None if metric is None else metric.values.get(tuple(sorted(labels.items())))

    def render(self) -> str:
        lines: list[str] = []
        with self._lock:
            for metric in sorted(self._metrics.values(), key=lambda m: m.name):
                lines.append(f"# HELP {metric.name} {metric.help}")
                lines.append(f"# TYPE {metric.name} {metric.kind}")
                for key, value in sorted(metric.values.items()):
                    label_text = ",".join(f'{k}="{_escape(v)}"' for k, v in key)
                    lines.append(f"{metric.name}{{{label_text}}} {value:g}" if key else f"{metric.name} {value:g}")
        return "\n".join(lines) + "\n"


class HealthServer:
    """Serves ``/healthz`` (and ``/readyz``) from ``healthy()`` and ``/metrics`` from a registry."""

    def __init__(
        self,
        registry: Registry,
        host: str,
        port: int,
        healthy: Callable[[], bool],
        ready: Callable[[], bool] | None = None,
    ) -> None:
        self.registry = registry
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/metrics":
                    body, code, ctype = owner.registry.render().encode(), 200, "text/plain; version=0.0.4"
                elif self.path in ("/healthz", "/livez"):
                    ok = healthy()
                    body, code, ctype = (b"ok\n" if ok else b"unhealthy\n"), (200 if ok else 503), "text/plain"
                elif self.path == "/readyz":
                    ok = (ready or healthy)()
                    body, code, ctype = (b"ok\n" if ok else b"not ready\n"), (200 if ok else 503), "text/plain"
                else:
                    body, code, ctype = b"not found\n", 404, "text/plain"
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="health-server", daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
