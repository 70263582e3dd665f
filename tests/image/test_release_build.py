"""Issue 33.4: the release workflow's image step, run here as written.

The step (``id: image`` of .github/workflows/release.yml) is read from the workflow, so the
release and this test cannot drift: its ``run`` script runs in bash with the options of its
``shell`` (the workflow runs it as root through sudo; the suite runs as root), with ``IMAGE_REF``
set as the workflow sets it but to a local name. It must build with scripts/build-image.sh, and
the image it makes must be the one tests/image tested (the same image ID: the release pushes
only that), print that ID last, and carry the version the tag names.
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib

import pytest

from tests.image.engine import inspect, require_tools, run
from tests.release.workflows import release_step
from tests.support import PROJECT

pytestmark = pytest.mark.timeout(1800)
LOCAL_REF = "localhost/grove-gitops:release-step"


def test_the_release_image_step_builds_the_image_the_suite_tested(image: str) -> None:
    step = release_step("image")
    shell = step["shell"].split()
    assert shell[0] == "sudo" and shell[-1] == "{0}", step["shell"]
    assert step["env"] == {"IMAGE_REF": "${{ steps.names.outputs.repository }}:${{ github.ref_name }}"}
    bash = shell[shell.index("bash") : -1]  # bash --noprofile --norc -euo pipefail
    require_tools()
    tested = inspect(image, "{{.Id}}")
    proc = subprocess.run(
        [*bash, "-c", step["run"]],
        cwd=PROJECT,
        env={
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "IMAGE_REF": LOCAL_REF,
            "HOME": os.environ.get("HOME", "/root"),
        },
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    try:
        assert proc.returncode == 0, proc.stderr[-6000:]
        built = inspect(LOCAL_REF, "{{.Id}}")
        assert proc.stdout.strip().splitlines()[-1] == built  # the ID the step prints
        assert built == tested, "the release step built another image than the one tests/image tested"
        version = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["version"]
        printed = run(LOCAL_REF, "--version")
        assert printed.returncode == 0, printed.stderr
        assert re.fullmatch(rf"grove-gitops, version {re.escape(version)}\n", printed.stdout), printed.stdout
    finally:
        subprocess.run(["podman", "untag", LOCAL_REF], capture_output=True, timeout=60, check=False)
