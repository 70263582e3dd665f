"""Flux for real on the test control plane (issue 36): source-controller and kustomize-controller
built from their Go modules (tests/controlplane/flux/go.mod, ``control-plane.sh flux``), started as
local processes against the plane, and the loopback Git forge (tests/controlplane/gitserver.py)
they clone from. Everything a test starts here is stopped by :func:`stop_process`.

The controllers run as Flux's Deployments run them, minus the cluster around them: leader
election off (one replica), every port on a free loopback port, the artifact server advertised on
loopback (kustomize-controller downloads the artifacts from it), and only :data:`FLUX_NS`
watched (``RUNTIME_NAMESPACE``, ``--watch-all-namespaces=false``) so the plane's other modules are
untouched. They use the admin kubeconfig, as kustomize-controller's cluster-admin binding does.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from grove_gitops.agent.kube import Kube
from tests.controlplane.plane import SCRIPT, Obj, Plane, stop_process, wait_until
from tests.support import PROJECT

#: Flux's own namespace in this tier: not ``flux-system``, where test_examples.py leaves the shipped
#: overlay's Kustomizations (their sources are unreachable), which these controllers would reconcile.
FLUX_NS = "cp-flux-system"
SOURCE = "/apis/source.toolkit.fluxcd.io/v1"
KUSTOMIZE = "/apis/kustomize.toolkit.fluxcd.io/v1"
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"


def script(*args: str) -> str:
    """``control-plane.sh ARGS``; a failure (no Go, no module proxy) fails the test loudly."""
    proc = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=3600, cwd=PROJECT)
    if proc.returncode != 0:
        raise AssertionError(f"control-plane.sh {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-6000:]}")
    return proc.stdout


def flux_crds() -> list[Obj]:
    """Flux's CRDs at the pinned release, from the modules' own files in GOMODCACHE."""
    docs: list[Obj] = []
    for directory in script("flux-crds").split():
        for path in sorted(Path(directory).glob("*.yaml")):
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "CustomResourceDefinition"]
    return docs


def free_port() -> int:
    """A loopback port free now (the controllers bind it a moment later, as control-plane.sh does)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serving_cert(plane: Plane, directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by the plane's CA (``plane.dir/pki``): one CA for the
    API server and the Git forge, handed to Flux in the GitRepository's ``secretRef``."""
    pki = plane.dir / "pki"
    key, csr, crt, ext = (directory / f"git.{s}" for s in ("key", "csr", "crt", "ext"))
    ext.write_text("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                   "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n")
    for cmd in (["openssl", "genrsa", "-out", str(key), "2048"],
                ["openssl", "req", "-new", "-key", str(key), "-subj", "/CN=127.0.0.1", "-out", str(csr)],
                ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(pki / "ca.crt"), "-CAkey", str(pki / "ca.key"),
                 "-CAcreateserial", "-CAserial", str(directory / "ca.srl"), "-days", "2", "-sha256",
                 "-extfile", str(ext), "-out", str(crt)]):
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    return crt, key


def _spawn(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:  # the child keeps its own descriptor
        return subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=log.parent)


def _wait_port_file(path: Path, proc: subprocess.Popen[bytes], log: Path) -> int:
    def written() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"{log.name}: exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        return path.exists()

    wait_until(f"{log.name} to listen", written, timeout=30, interval=0.05)
    return int(path.read_text())


@dataclass
class GitForge:
    """The loopback HTTPS Git server and the CA that signed it."""

    proc: subprocess.Popen[bytes]
    root: Path
    port: int
    ca: Path

    def url(self, repo: str) -> str:
        return f"https://127.0.0.1:{self.port}/{repo}"

    def git_env(self) -> dict[str, str]:
        """The environment a git client needs to trust the forge (no user config, no prompts)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GROVE_GITOPS_"))}
        env.update({"GIT_SSL_CAINFO": str(self.ca), "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
                    "GIT_COMMITTER_NAME": "dev", "GIT_COMMITTER_EMAIL": "dev@example.com"})
        return env


@contextlib.contextmanager
def git_forge(plane: Plane, directory: Path) -> Iterator[GitForge]:
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = serving_cert(plane, directory)
    root = directory / "repos"
    root.mkdir()
    port_file = directory / "git.port"
    log = directory / "gitserver.log"
    proc = _spawn([str(Path(os.environ.get("VIRTUAL_ENV", PROJECT / ".venv")) / "bin" / "python"), "-m",
                   "tests.controlplane.gitserver", "--root", str(root), "--cert", str(cert), "--key", str(key),
                   "--port-file", str(port_file)], log, env={**os.environ, "PYTHONPATH": str(PROJECT)})
    try:
        yield GitForge(proc, root, _wait_port_file(port_file, proc, log), plane.dir / "pki" / "ca.crt")
    finally:
        stop_process(proc)


@dataclass
class Flux:
    """The two controllers' processes and their logs."""

    source: subprocess.Popen[bytes]
    kustomize: subprocess.Popen[bytes]
    logs: Path

    def running(self) -> bool:
        return self.source.poll() is None and self.kustomize.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-chars:]}" for p in sorted(self.logs.glob("*.log")))


@contextlib.contextmanager
def flux_controllers(plane: Plane, directory: Path) -> Iterator[Flux]:
    """source-controller and kustomize-controller against the plane, watching :data:`FLUX_NS`
    (the caller has applied Flux's CRDs and created the namespace)."""
    binaries = Path(script("flux").strip())
    directory.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GROVE_GITOPS_", "KUBECONFIG"))}
    env.update({"KUBECONFIG": str(plane.kubeconfig), "RUNTIME_NAMESPACE": FLUX_NS})
    common = ["--enable-leader-election=false", "--watch-all-namespaces=false", "--log-level=info",
              "--log-encoding=json"]
    (directory / "storage").mkdir(exist_ok=True)  # source-controller refuses a missing one
    storage = free_port()
    source = _spawn([str(binaries / "source-controller"), *common,
                     f"--metrics-addr=127.0.0.1:{free_port()}", f"--health-addr=127.0.0.1:{free_port()}",
                     f"--storage-path={directory / 'storage'}", f"--storage-addr=127.0.0.1:{storage}",
                     f"--storage-adv-addr=127.0.0.1:{storage}"], directory / "source-controller.log", env)
    # Dependencies (a shard's dependsOn) are re-checked every 2 s instead of 30 s: the test waits
    # for conditions, and the default would make every first deploy wait half a minute.
    kustomize = _spawn([str(binaries / "kustomize-controller"), *common,
                        f"--metrics-addr=127.0.0.1:{free_port()}", f"--health-addr=127.0.0.1:{free_port()}",
                        "--requeue-dependency=2s", "--no-remote-bases=true"],
                       directory / "kustomize-controller.log", env)
    flux = Flux(source, kustomize, directory)
    try:
        yield flux
    finally:
        stop_process(kustomize)
        stop_process(source)


# -- Flux's objects -----------------------------------------------------------------------------
def condition(obj: Obj, kind: str = "Ready") -> dict[str, str]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def is_ready(obj: Obj) -> bool:
    """Ready=True for the object's current generation (Flux's kstatus contract)."""
    status = obj.get("status") or {}
    return (condition(obj).get("status") == "True"
            and status.get("observedGeneration") == obj["metadata"].get("generation"))


def kustomizations(kube: Kube) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in kube.raw("GET", f"{KUSTOMIZE}/namespaces/{FLUX_NS}/kustomizations")["items"]}


def request_reconcile(kube: Kube, path: str, timeout: float = 60.0) -> Obj:
    """``flux reconcile``: set ``reconcile.fluxcd.io/requestedAt`` and wait until the controller
    reports it handled (``status.lastHandledReconcileAt``) with the object Ready again."""
    token = datetime.now(UTC).isoformat()
    kube.raw("PATCH", path, {"metadata": {"annotations": {REQUESTED_AT: token}}}, "application/merge-patch+json")
    found: list[Obj] = []

    def handled() -> bool:
        found[:] = [kube.raw("GET", path)]
        return (found[0].get("status") or {}).get("lastHandledReconcileAt") == token and is_ready(found[0])

    wait_until(f"{path} to handle the reconcile request {token}", handled, timeout=timeout)
    return found[0]

