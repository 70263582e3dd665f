"""Issue 33.4: every workflow passes actionlint (the Go module github.com/rhysd/actionlint at the
version pinned in scripts/actionlint.sh), and the release workflow does what docs/releasing.md
says: on a version tag, build with the project's own build, run the README's test command, push
the tested image by digest, publish the package, and put the digest in the release notes."""

from __future__ import annotations

import re
import subprocess
import textwrap
import tomllib
from pathlib import Path

from tests.release.workflows import RELEASE, WORKFLOWS, load, release_step, run_actionlint
from tests.support import PROJECT

#: ``uses: owner/repo@<40-hex>  # vX.Y.Z``: a third-party action pinned by commit, its tag named.
PINNED = re.compile(r"^\s*-?\s*uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40})  # v\d+(\.\d+)*$")


def test_every_workflow_passes_actionlint() -> None:
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert RELEASE in files and len(files) >= 3
    proc = run_actionlint()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == ""


def test_actionlint_catches_a_seeded_bad_workflow(tmp_path: Path) -> None:
    """The check can fail: an unknown job key, an untrusted input expanded inside ``run`` (script
    injection) and an undefined step in an expression are each reported, on their lines."""
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    bad = workflows / "bad.yml"
    bad.write_text(
        textwrap.dedent(
            """\
            name: bad
            on:
              pull_request:
            jobs:
              check:
                runs-on: ubuntu-latest
                timeout: 10
                steps:
                  - run: echo "${{ github.event.pull_request.title }}"
                  - run: echo "${{ steps.nothing.outputs.value }}"
            """
        )
    )
    proc = run_actionlint("-oneline", str(bad), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    rel = ".github/workflows/bad.yml"  # actionlint names files relative to the project it finds
    assert len(lines) == 3, proc.stdout
    assert lines[0].startswith(f'{rel}:7:5: unexpected key "timeout" for "job" section')
    assert lines[1].startswith(f'{rel}:9:24: "github.event.pull_request.title" is potentially untrusted')
    assert lines[2].startswith(f'{rel}:10:24: property "nothing" is not defined')
    # and the good copy of the same file passes
    bad.write_text(
        bad.read_text()
        .replace("    timeout: 10\n", "")
        .replace("${{ github.event.pull_request.title }}", "$TITLE")
        .replace("${{ steps.nothing.outputs.value }}", "ok")
    )
    proc = run_actionlint("-oneline", str(bad), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_release_runs_on_version_tags_only_with_least_privilege() -> None:
    workflow = load(RELEASE)
    on = workflow[True]  # PyYAML reads `on:` as the boolean key
    assert on == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    assert jobs["image"]["permissions"] == {"contents": "read", "packages": "write"}
    assert jobs["pypi"]["permissions"] == {"id-token": "write"} and jobs["pypi"]["environment"] == "pypi"
    assert jobs["github-release"]["permissions"] == {"contents": "write"}
    assert jobs["pypi"]["needs"] == "image" and jobs["github-release"]["needs"] == ["image", "pypi"]


def test_every_third_party_action_of_the_release_is_pinned_by_commit() -> None:
    uses = [line for line in RELEASE.read_text().splitlines() if re.match(r"^\s*-?\s*uses:", line)]
    assert len(uses) >= 6
    for line in uses:
        assert PINNED.match(line), f"release.yml: not pinned by commit SHA with its tag named: {line.strip()}"


def test_the_release_builds_tests_pushes_the_tested_image_and_notes_its_digest() -> None:
    steps = load(RELEASE)["jobs"]["image"]["steps"]
    runs = [str(s.get("run", "")) for s in steps]
    build = release_step("image")
    test = next(i for i, r in enumerate(runs) if "scripts/test.sh" in r)
    push = next(i for i, s in enumerate(steps) if s.get("id") == "push")
    assert steps.index(build) < test < push, "build, then the suite, then the push"
    assert "bash scripts/build-image.sh" in build["run"]
    # The README's test command, whole (no test left out).
    readme = (PROJECT / "README.md").read_text()
    assert "bash ./scripts/test.sh" in readme
    assert re.search(r"bash \./scripts/test\.sh$", runs[test].strip())
    # The push refuses an image other than the one the suite tested, and reads the digest back.
    assert "localhost/grove-gitops:test" in runs[push] and "--digestfile" in runs[push]
    notes = release_step("notes", job="github-release")
    assert "bash scripts/release-notes.sh" in notes["run"]
    assert notes["env"]["IMAGE_DIGEST"] == "${{ needs.image.outputs.digest }}"
    assert load(RELEASE)["jobs"]["image"]["outputs"]["digest"] == "${{ steps.push.outputs.digest }}"


def _names_step(tmp_path: Path, tag: str, owner: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """The release's ``names`` step, run as written with the tag and owner GitHub would set."""
    step = release_step("names")
    assert step["env"] == {"TAG": "${{ github.ref_name }}", "OWNER": "${{ github.repository_owner }}"}
    output = tmp_path / "github_output"
    output.write_text("")
    proc = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=PROJECT,
        env={"PATH": "/usr/bin:/bin", "TAG": tag, "OWNER": owner, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc, output.read_text()


def test_the_release_refuses_a_tag_that_is_not_the_version(tmp_path: Path) -> None:
    version = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["version"]
    proc, output = _names_step(tmp_path, f"v{version}", "Acme-Labs")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert output == "repository=ghcr.io/acme-labs/grove-gitops\n"  # ghcr.io wants lower case
    proc, output = _names_step(tmp_path, "v99.0.0", "acme")
    assert proc.returncode == 1 and output == ""
    assert f"::error::tag v99.0.0 does not name the version in pyproject.toml ({version})" in proc.stdout
