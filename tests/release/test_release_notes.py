"""Issue 33.4: the release notes (scripts/release-notes.sh, run by release.yml) carry the image
digest and pin every artefact; a malformed digest, tag or commit stops the release."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.support import PROJECT

SCRIPT = PROJECT / "scripts" / "release-notes.sh"
DIGEST = "sha256:" + "ab" * 32
COMMIT = "c0ffee" + "0" * 34


def _dist(tmp_path: Path) -> tuple[Path, str]:
    dist = tmp_path / "dist"
    dist.mkdir()
    wheel = dist / "grove_gitops-1.2.3-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel")
    (dist / "grove_gitops-1.2.3.tar.gz").write_bytes(b"sdist")
    subprocess.run("sha256sum -- * > SHA256SUMS", shell=True, cwd=dist, check=True)
    return dist, hashlib.sha256(wheel.read_bytes()).hexdigest()


def _notes(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=30, check=False)


def test_the_notes_name_the_image_by_digest_and_pin_everything(tmp_path: Path) -> None:
    dist, wheel_sum = _dist(tmp_path)
    proc = _notes("v1.2.3", "ghcr.io/acme/grove-gitops", DIGEST, COMMIT, "acme/grove-gitops", str(dist))
    assert proc.returncode == 0, proc.stderr
    notes = proc.stdout
    assert f"ghcr.io/acme/grove-gitops@{DIGEST}\n" in notes
    assert f"    newName: ghcr.io/acme/grove-gitops\n    digest: {DIGEST}\n" in notes
    assert "  - name: ghcr.io/OWNER/grove-gitops\n" in notes  # the overlays' one image name
    assert f"- uses: acme/grove-gitops@{COMMIT}  # v1.2.3\n" in notes
    assert f"GROVE_GITOPS_COMMIT: {COMMIT}  # v1.2.3\n" in notes
    assert (
        "grove-gitops @ https://github.com/acme/grove-gitops/releases/download/v1.2.3/"
        f"grove_gitops-1.2.3-py3-none-any.whl --hash=sha256:{wheel_sum}\n"
    ) in notes
    assert "grove-gitops==1.2.3" in notes


@pytest.mark.parametrize(
    ("position", "value", "said"),
    [
        (0, "1.2.3", "TAG '1.2.3' is not vX.Y.Z"),
        (1, "ghcr.io/Acme/grove-gitops", "is not ghcr.io/<owner in lower case>/grove-gitops"),
        (2, "", "DIGEST '' is not sha256:<64 hex digits>"),
        (2, "sha256:abc", "DIGEST 'sha256:abc' is not sha256:<64 hex digits>"),
        (3, "v1.2.3", "COMMIT 'v1.2.3' is not a 40-hex commit"),
    ],
)
def test_a_malformed_argument_stops_the_release(tmp_path: Path, position: int, value: str, said: str) -> None:
    dist, _ = _dist(tmp_path)
    args = ["v1.2.3", "ghcr.io/acme/grove-gitops", DIGEST, COMMIT, "acme/grove-gitops", str(dist)]
    args[position] = value
    proc = _notes(*args)
    assert proc.returncode == 1 and proc.stdout == ""
    assert said in proc.stderr


def test_a_missing_wheel_stops_the_release(tmp_path: Path) -> None:
    dist, _ = _dist(tmp_path)
    proc = _notes("v1.2.4", "ghcr.io/acme/grove-gitops", DIGEST, COMMIT, "acme/grove-gitops", str(dist))
    assert proc.returncode == 1 and "has no line for grove_gitops-1.2.4-py3-none-any.whl" in proc.stderr
