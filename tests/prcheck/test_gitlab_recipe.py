"""Issue 31.4: the documented GitLab job never runs the merge request's code.

The job is read out of docs/diff.md (its YAML block under "GitLab merge requests"), so this
test breaks when the documented job changes. Its script runs line by line in bash, as a GitLab
runner would, in a merge request's checkout that adds every file Python could be tricked into
running: ``grove_gitops/``, ``sitecustomize.py``, ``usercustomize.py``, a ``.pth``, a
``.venv`` (first on PATH) and an ``encodings/`` package, each writing a marker when it runs,
with ``PYTHONPATH=.`` (or the checkout's absolute path) set as Python CI templates do. No marker
may appear, and the job must do its work: the report is posted to a fake GitLab. The two
install lines need the network; they are checked for what they must be (isolated, pinned to a
commit) and replaced by the project's own virtualenv.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.prcheck.fakegitlab import FakeGitLab
from tests.prcheck.fakejson import running
from tests.prcheck.prhelpers import bump_image, git, make_repo

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "diff.md"
VENV = Path(os.environ.get("VIRTUAL_ENV") or ROOT / ".venv")
MR = 12


def documented_job() -> dict[str, Any]:
    """The ``grove-gitops`` job of the YAML block in docs/diff.md's GitLab section."""
    text = DOC.read_text()
    section = text[text.index("### GitLab merge requests") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None, "docs/diff.md: the GitLab section has no yaml block"
    job = yaml.safe_load(block.group(1))["grove-gitops"]
    assert isinstance(job, dict)
    return job


def install_lines(script: list[str]) -> list[str]:
    return [line for line in script if " -m venv " in line or " -m pip " in line]


def test_the_documented_job_installs_a_pinned_grove_gitops_isolated() -> None:
    job = documented_job()
    script = job["script"]
    venv, pip = install_lines(script)
    assert script.index(venv) > 0 and script[0].startswith("cd /")  # leaves the checkout first
    assert re.fullmatch(r'/usr/local/bin/python3 -I -m venv "\$GROVE_GITOPS_VENV"', venv)
    assert pip.startswith('"$GROVE_GITOPS_VENV/bin/python" -I -m pip install ')
    # one requirement, pinned to a commit by a variable the job declares, never a bare name
    (requirement,) = re.findall(r'"(grove-gitops[^"]*)"', pip)
    # from the one repository every doc names (docs/install.md, "The release artefacts")
    assert re.fullmatch(r"grove-gitops @ git\+https://github\.com/OWNER/grove-gitops@\$GROVE_GITOPS_COMMIT", requirement)
    assert "GROVE_GITOPS_COMMIT" in job["variables"]
    runs = [line for line in script if line not in (venv, pip)]
    grove = [line for line in runs if "grove_gitops" in line or "grove-gitops" in line]
    assert len(grove) == 3 and all(line.startswith('"$GROVE_GITOPS_VENV/bin/python" -I -m grove_gitops ') for line in grove)


EVIL_PY = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"
EVIL_SH = "#!/bin/sh\necho ran > {marker!s}\nexit 0\n"


def hostile_checkout(repo: Path, markers: Path) -> list[str]:
    """Commit every file that could run into the merge request; the names of their markers."""
    names: list[str] = []

    def plant(relative: str, template: str, executable: bool = False) -> None:
        name = relative.replace("/", "_")
        names.append(name)
        path = repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(marker=str(markers / name)))
        if executable:
            path.chmod(path.stat().st_mode | stat.S_IXUSR)

    plant("grove_gitops/__init__.py", EVIL_PY)
    plant("grove_gitops/__main__.py", EVIL_PY)
    plant("sitecustomize.py", EVIL_PY)
    plant("usercustomize.py", EVIL_PY)
    plant("encodings/__init__.py", EVIL_PY)
    plant("grove-gitops.pth", "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n")
    for tool in ("python", "python3", "grove-gitops", "pip"):
        plant(f".venv/bin/{tool}", EVIL_SH, executable=True)
    plant(".venv/lib/python3.11/site-packages/grove-gitops.pth", "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n")
    plant(".venv/lib/python3.11/site-packages/grove_gitops/__init__.py", EVIL_PY)
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\n")
    git(repo, "checkout", "-q", "pr")
    git(repo, "add", "-A", "-f")
    git(repo, "commit", "-qm", "a merge request that brings its own python")
    return names


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with running(FakeGitLab().start()) as fake:
        yield fake


@pytest.mark.parametrize("pythonpath", [".", "checkout"])
def test_the_documented_gitlab_job_never_runs_the_merge_requests_code(
    tmp_path: Path, gitlab: FakeGitLab, pythonpath: str
) -> None:
    repo, base, _ = make_repo(tmp_path, bump_image)
    markers = tmp_path / "markers"
    markers.mkdir()
    planted = hostile_checkout(repo, markers)
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", head)  # GitLab checks out the merge request's commit, detached
    env = {
        "PATH": f"{repo}/.venv/bin:.venv/bin:/usr/bin:/bin",  # the MR's .venv first, as an activated one would be
        "HOME": str(tmp_path),
        "PYTHONPATH": "." if pythonpath == "." else str(repo),
        "GITLAB_CI": "true",
        "CI_PROJECT_DIR": str(repo),
        "CI_PROJECT_ID": str(gitlab.project_id),
        "CI_MERGE_REQUEST_IID": str(MR),
        "CI_API_V4_URL": gitlab.api,
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
        "CI_COMMIT_SHA": head,
        "GITLAB_TOKEN": gitlab.token,
    }
    job = documented_job()
    env.update({k: str(v) for k, v in job["variables"].items()})
    env["GROVE_GITOPS_VENV"] = str(VENV)  # what the install lines would have made
    env["GROVE_GITOPS_SOURCE_PATH"] = "deploy"
    script = [line for line in job["script"] if line not in install_lines(job["script"])]
    # as the runner runs it: one shell session started in the checkout, stopping at a failure
    result = subprocess.run(
        ["bash", "-c", "set -e\n" + "\n".join(script)],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert sorted(p.name for p in markers.iterdir()) == [], result.stderr
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert len(gitlab.bodies(MR)) == 1  # the job did its work: the report is on the merge request
    assert (repo / "report" / "status.json").is_file()

    # the checkout is as hostile as claimed: a python that is not isolated runs its files
    subprocess.run(
        [str(VENV / "bin" / "python"), "-c", "import grove_gitops"],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    ran = {p.name for p in markers.iterdir()}
    assert ran and ran <= set(planted), ran
