"""Build the image with ``scripts/build-image.sh`` and run it with podman the way the overlays do.

The manifests in ``overlays/`` run the container as 65532:65532 with a read-only root filesystem,
all capabilities dropped, no privilege escalation and one writable emptyDir on ``/tmp``;
:data:`RUN_AS_DEPLOYED` is the same with podman. runc, the ulimits and the host network are
explicit, as in ``scripts/build-image.sh`` (crun and the default ulimits fail on some hosts, and
the fake API server listens on the host's 127.0.0.1).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import PROJECT

IMAGE = "localhost/grove-gitops:test"
BUILD_SCRIPT = PROJECT / "scripts" / "build-image.sh"
SETUP_SCRIPT = PROJECT / "scripts" / "setup-image.sh"
#: The issue's target for the image, in podman's units (10^6 bytes).
MAX_IMAGE_BYTES = 300_000_000

ENGINE = ["--runtime", "runc", "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768", "--network", "host"]
RUN_AS_DEPLOYED = [
    *ENGINE,
    "--rm",
    "--read-only",
    "--read-only-tmpfs=false",
    "--tmpfs",
    "/tmp:rw,size=64m,mode=1777",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
]


def require_tools() -> None:
    """Fail (never skip) with what to do when the container tools are missing."""
    missing = [tool for tool in ("buildah", "podman", "runc") if shutil.which(tool) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} not installed: run `bash scripts/setup-image.sh` as root "
            "(scripts/test.sh does; it installs buildah, podman, runc and debootstrap with apt-get)",
            pytrace=False,
        )


def build_image() -> str:
    """Build :data:`IMAGE` (layers cached in local storage, the Debian base built once)."""
    require_tools()
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT), IMAGE],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1500,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"scripts/build-image.sh failed ({proc.returncode}):\n{proc.stdout[-6000:]}", pytrace=False)
    return IMAGE


def run(
    image: str,
    *args: str,
    mounts: tuple[tuple[Path, str, str], ...] = (),
    entrypoint: str | None = None,
    user: str = "65532:65532",
    workdir: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``podman run`` as deployed; ``mounts`` are (host path, container path, "ro" or "rw")."""
    cmd = ["podman", "run", *RUN_AS_DEPLOYED, "--user", user]
    if workdir is not None:
        cmd += ["--workdir", workdir]
    for host, target, mode in mounts:
        cmd += ["-v", f"{host}:{target}:{mode}"]
    if entrypoint is not None:
        cmd += ["--entrypoint", entrypoint]
    return subprocess.run([*cmd, image, *args], capture_output=True, text=True, timeout=300, check=False)


def inspect(image: str, template: str) -> str:
    return subprocess.run(
        ["podman", "image", "inspect", "--format", template, image],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
