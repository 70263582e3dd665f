"""The image, built from the Dockerfile by scripts/build-image.sh and run as the overlays run it.

Built once per session (about 4 minutes from nothing on a fresh machine, well under a minute when
the Debian base and the dependency layer are in local storage), then run as uid 65532 with a
read-only root filesystem: ``--version``; ``render`` of ``examples/`` from a read-only mount into a
writable one, byte for byte what the host renders; the agent releasing the example's gangs
against the fake API server on the host network; and what must not be in the image.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import typing
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.agent.kube import Kube
from grove_gitops.api.renderconfig import RenderConfig
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import apply, gated, rendered_objects
from tests.image.engine import MAX_IMAGE_BYTES, RUN_AS_DEPLOYED, inspect, run
from tests.support import PROJECT

# The build from nothing (debootstrap, PyPI) is far above the suite's 300 s per-test default.
pytestmark = pytest.mark.timeout(1800)

EXAMPLES = PROJECT / "examples"
HOST_CLI = Path(sys.executable).with_name("grove-gitops")
#: Issue 24 §3: the Kubernetes versions the project supports; the image keeps their schemas.
SUPPORTED_KUBERNETES = tuple(f"1.{minor}" for minor in range(31, 38))


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _writable(path: Path) -> Path:
    """A host directory the container's uid 65532 may write (the test runs as root)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)
    return path


def test_version(image: str) -> None:
    host = subprocess.run([str(HOST_CLI), "--version"], capture_output=True, text=True, check=True, timeout=60)
    proc = run(image, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == host.stdout
    assert proc.stdout.startswith("grove-gitops, version ")


def test_runs_as_65532_on_a_read_only_root(image: str) -> None:
    assert inspect(image, "{{.Config.User}}") == "65532:65532"
    proc = run(
        image,
        "-c",
        "id -u; id -g; touch /opt/grove-gitops/x 2>/dev/null && echo writable-root; "
        "touch /tmp/x && echo writable-tmp; git --version >/dev/null && echo git; ssh -V 2>/dev/null && echo ssh",
        entrypoint="sh",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["65532", "65532", "writable-tmp", "git", "ssh"]


def test_render_examples_from_a_read_only_mount(image: str, tmp_path: Path) -> None:
    host_out = tmp_path / "host" / "out"
    subprocess.run(
        [str(HOST_CLI), "render", str(EXAMPLES), "--out", str(host_out), "-q"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    work = _writable(tmp_path / "container")
    proc = run(
        image,
        "render",
        "/src",
        "--out",
        "/work/out",
        mounts=((EXAMPLES, "/src", "ro"), (work, "/work", "rw")),
    )
    assert proc.returncode == 0, proc.stderr
    ours, theirs = _tree(host_out), _tree(work / "out")
    assert ours, "the host rendered nothing"
    assert sorted(theirs) == sorted(ours)
    assert theirs == ours


def test_argocd_plugin_generate_as_uid_999(image: str) -> None:
    """overlays/argocd's sidecar runs the plugin's ``generate`` as uid 999 (no passwd entry) in the
    source directory: it needs ``grove-gitops`` and a ``python3`` with PyYAML from this image."""
    config = yaml.safe_load((PROJECT / "overlays" / "argocd" / "cmp-plugin.yaml").read_text())
    generate = yaml.safe_load(config["data"]["plugin.yaml"])["spec"]["generate"]
    assert generate["command"] == ["sh", "-c"]
    proc = run(
        image,
        "-c",
        *generate["args"],
        entrypoint="sh",
        user="999:999",
        workdir="/src",
        mounts=((EXAMPLES, "/src", "ro"),),
    )
    assert proc.returncode == 0, proc.stderr
    printed = [doc for doc in yaml.safe_load_all(proc.stdout) if doc is not None]
    expected = rendered_objects(EXAMPLES)
    assert sorted(map(_identity, printed)) == sorted(map(_identity, expected))


def _identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def _kubeconfig(server: FakeApiServer, path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server.url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
                "current-context": "fake",
            }
        )
    )
    path.chmod(0o644)
    return path


@contextlib.contextmanager
def _agent(image: str, config: Path, log: Path) -> Iterator[subprocess.Popen[str]]:
    """``grove-gitops agent`` in the container, in the foreground of a podman process; its
    output goes to ``log``."""
    name = f"grove-gitops-test-{uuid.uuid4().hex[:12]}"
    cmd = [
        "podman", "run", *RUN_AS_DEPLOYED, "--user", "65532:65532", "--name", name,
        "-v", f"{config}:/config/kubeconfig:ro", "-e", "POD_NAME=image-test",
        image, "agent", "--kubeconfig", "/config/kubeconfig", "--lease-namespace", "default",
        "--metrics-address", "",
    ]  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        yield proc
    finally:
        subprocess.run(["podman", "stop", "--time", "10", name], capture_output=True, timeout=60, check=False)
        subprocess.run(["podman", "rm", "--force", name], capture_output=True, timeout=60, check=False)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def _messages(stderr: str) -> list[str]:
    out = []
    for line in stderr.splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            out.append(json.loads(line)["msg"])
    return out


def test_agent_releases_the_example_against_the_fake_api_server(image: str, tmp_path: Path) -> None:
    objs = rendered_objects(EXAMPLES)
    pods = [o for o in objs if o["kind"] == "Pod"]
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, objs)
        assert len(gated(server)) == len(pods) == 12
        config = _kubeconfig(server, _writable(tmp_path / "config") / "kubeconfig")
        log = tmp_path / "agent.log"
        with _agent(image, config, log) as agent:
            # The base gang first; the scaled gang waits for the base gang's scheduled pods.
            released = server.wait_for(lambda: len(gated(server)) == 4, timeout=120)
            assert released, (gated(server), agent.poll())
            assert all("prefill-1" in name for name in gated(server))
            for pod in server.store.list_objects("pods", "inference"):
                if not pod["spec"].get("schedulingGates"):
                    server.schedule_pod("inference", pod["metadata"]["name"])
            assert server.wait_for(lambda: gated(server) == [], timeout=60), gated(server)
        stderr = log.read_text()
        patched = {r.name for r in server.requests if r.verb == "patch" and r.resource == "pods" and r.status < 300}
    assert patched == {p["metadata"]["name"] for p in pods}
    assert any(m.startswith("released gang inference/") for m in _messages(stderr)), stderr[-3000:]


_PROBE = """
import json, pathlib, sysconfig
from grove_gitops.validation.podspec import builtin_validator
site = pathlib.Path(sysconfig.get_path("purelib"))
schemas = site / "kubernetes_validate" / "kubernetes-json-schema"
print(json.dumps({
    "schemas": sorted(p.name for p in schemas.iterdir()),
    "pod": {v: builtin_validator(v, "v1", "Pod") is not None for v in VERSIONS},
    "pip": (site / "pip").exists(),
    "aio": (site / "kubernetes" / "aio").exists(),
    "tests": sorted(str(p) for p in site.glob("*/tests")),
}))
"""


def _code_versions() -> tuple[str, ...]:
    """The ``kubernetesVersion`` values RenderConfiguration accepts (a Literal today)."""
    return typing.get_args(RenderConfig.model_fields["kubernetesVersion"].annotation)


def test_schemas_of_the_supported_versions_only(image: str) -> None:
    versions = sorted(set(SUPPORTED_KUBERNETES) | set(_code_versions()), key=lambda v: tuple(map(int, v.split("."))))
    proc = run(image, "-c", _PROBE.replace("VERSIONS", repr(versions)), entrypoint="python3")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["pod"] == {v: True for v in versions}
    assert found["schemas"] == [f"v{v}.0-local-strict" for v in versions]
    assert not found["pip"] and not found["aio"] and found["tests"] == []


def test_nothing_of_the_build_in_the_image(image: str) -> None:
    proc = run(
        image,
        "-c",
        "ls -A /mnt; ls /etc/pip.conf /src /wheels /root/.cache 2>/dev/null; "
        "command -v gcc cc pip pip3; python3 -m pip --version 2>/dev/null; "
        "env | grep -i -e pip -e ca_bundle -e ssl_cert; true",
        entrypoint="sh",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    history = subprocess.run(
        ["podman", "history", "--no-trunc", "--format", "{{.CreatedBy}}", image],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "ca.crt" not in history and "pip.conf" not in history


def test_image_size(image: str) -> None:
    size = int(inspect(image, "{{.Size}}"))
    assert size <= MAX_IMAGE_BYTES, f"{size / 1e6:.0f} MB > {MAX_IMAGE_BYTES / 1e6:.0f} MB"
