"""Issue 33.4: every doc, overlay, workflow and the Action name the release artefacts one way,
with one variable, ``OWNER`` (the GitHub owner of the grove-gitops repository; docs/install.md,
"The release artefacts"), and the version pyproject.toml names:

* image ``ghcr.io/OWNER/grove-gitops:v<version>`` (or ``@sha256:<digest>``); a ``newName:`` of a
  user's ``images:`` entry may name any registry (their mirror, or OWNER filled in);
* repository ``https://github.com/OWNER/grove-gitops`` (kustomize bases ``?ref=v<version>``, the
  Flux GitRepository's ``tag:``, pip from git at a commit);
* Action ``OWNER/grove-gitops@v<version>`` or at a commit.

No stray placeholder (``registry.example.com/grove-gitops``, ``<org>``, ``github.com/example``,
``@<ref>``) and no unpinned ``pip install grove-gitops``. The checker is shown to catch each.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.support import PROJECT

OWNER = "OWNER"
VERSION = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["version"]
TAG = f"v{VERSION}"
IMAGE = f"ghcr.io/{OWNER}/grove-gitops"
REPOSITORY = f"https://github.com/{OWNER}/grove-gitops"

STRAY = ("registry.example.com/grove-gitops", "<org>", "github.com/example/", "grove-gitops@<ref>", "<owner>")
#: A registry (a host with a dot) path ending in the project's name: an image or a repository.
_REF = re.compile(
    r"(?<![\w./-])((?:https?://)?[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::\d+)?(?:/[\w.-]+)*/grove-gitops)(\.git)?(?=([:@?/]\S*)?)"
)
_USES = re.compile(r"uses: ([\w.-]+)/grove-gitops@([^\s`'\"]+)")
_BARE_PIP = re.compile(r"pip install (?:-\S+ )*[\"']?grove-gitops(?:[\"'\s]|$)")
_PINNED_REV = re.compile(rf"{re.escape(TAG)}|[0-9a-f]{{40}}|<commit>|\$GROVE_GITOPS_COMMIT|\$\{{?\w+\}}?")


def _repository_findings(where: str, ref: str, rest: str) -> list[str]:
    """A ``github.com/.../grove-gitops`` reference: OWNER's, at the release tag or a commit."""
    if ref.removeprefix("https://") != REPOSITORY.removeprefix("https://"):
        return [f"{where}: repository {ref}, not {REPOSITORY}"]
    ref_query = re.match(r"(?:\.git)?(?://[\w./-]*)?\?ref=(\S+?)[`'\"\s)]", rest + " ")
    if ref_query:
        return [] if ref_query.group(1) == TAG else [f"{where}: ?ref={ref_query.group(1)}, not {TAG}"]
    at = re.match(r"@(\S+?)[`'\"\s)]", rest + " ")
    if at and not _PINNED_REV.fullmatch(at.group(1)):
        return [f"{where}: {ref}@{at.group(1)} is not pinned"]
    return []


def findings(text: str, name: str) -> list[str]:
    """What in ``text`` (the file ``name``) names a release artefact in another form."""
    found: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{name}:{number}"
        found += [f"{where}: stray placeholder {s!r}" for s in STRAY if s in line]
        if _BARE_PIP.search(line):
            found.append(f"{where}: unpinned `pip install grove-gitops`")
        for match in _REF.finditer(line):
            ref, rest = match.group(1), line[match.end() :]
            if ref.removeprefix("https://").startswith("github.com/"):
                found += _repository_findings(where, ref, rest)
                continue
            if re.match(r"\s*(?:#\s*)?newName:", line):
                continue  # the user's own registry
            tag = re.match(r":([\w.-]+)", rest)
            if ref != IMAGE:
                found.append(f"{where}: image {ref}, not {IMAGE}")
            elif tag and tag.group(1) != TAG:
                found.append(f"{where}: image tag {tag.group(1)}, not {TAG}")
        for match in _USES.finditer(line):
            owner, rev = match.group(1), match.group(2)
            if owner != OWNER:
                found.append(f"{where}: Action {owner}/grove-gitops, not {OWNER}/grove-gitops")
            elif not _PINNED_REV.fullmatch(rev):
                found.append(f"{where}: Action at {rev}, not {TAG} or a commit")
    return found


def _files() -> list[Path]:
    out = [PROJECT / "README.md", PROJECT / "action.yml"]
    out += sorted((PROJECT / "docs").rglob("*.md"))
    out += sorted(p for p in (PROJECT / "overlays").rglob("*") if p.suffix in (".yaml", ".yml", ".md"))
    out += sorted((PROJECT / ".github" / "workflows").glob("*.yml"))
    for examples in ("examples", "examples-fleet"):
        out += sorted(p for p in (PROJECT / examples).rglob("*") if p.suffix in (".yaml", ".yml", ".md"))
    return out


def test_every_doc_and_overlay_names_the_artefacts_one_way() -> None:
    problems = [
        f for path in _files() for f in findings(path.read_text(encoding="utf-8"), str(path.relative_to(PROJECT)))
    ]
    assert problems == []


def test_the_overlays_run_the_release_image() -> None:
    """The agent, the controller and the Argo CD plugin sidecar run the same image, named once."""
    images = []
    for rel in ("gate-lifter/base/deployment.yaml", "controller/deployment.yaml", "argocd/cmp-sidecar-patch.yaml"):
        (doc,) = [d for d in yaml.safe_load_all((PROJECT / "overlays" / rel).read_text()) if d]
        images += [c["image"] for c in doc["spec"]["template"]["spec"]["containers"]]
    assert images == [f"{IMAGE}:{TAG}"] * 3
    (flux_repo,) = [
        d
        for d in yaml.safe_load_all((PROJECT / "overlays/flux/kustomization-crds.yaml").read_text())
        if d and d["kind"] == "GitRepository"
    ]
    assert (flux_repo["spec"]["url"], flux_repo["spec"]["ref"]["tag"]) == (f"{REPOSITORY}.git", TAG)


def test_install_md_defines_the_one_variable() -> None:
    text = (PROJECT / "docs" / "install.md").read_text()
    section = text[text.index("## The release artefacts") :]
    section = section[: section.index("\n## ", 3)]
    assert "**`OWNER` is the one variable**" in section
    for name in (
        f"`{IMAGE}:{TAG}`",
        f"`{REPOSITORY}//overlays/gate-lifter?ref={TAG}`",
        f"`{OWNER}/grove-gitops@{TAG}`",
        f"`grove-gitops=={VERSION}`",
    ):
        assert name in section, name


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("image: registry.example.com/grove-gitops:0.1.0", "stray placeholder"),
        ("  - uses: <org>/grove-gitops@<ref>", "stray placeholder"),
        ("- pip install grove-gitops", "unpinned"),
        ('python -m pip install --quiet "grove-gitops"', "unpinned"),
        ("image: ghcr.io/acme/grove-gitops:v0.1.0", "not ghcr.io/OWNER/grove-gitops"),
        ("image: quay.io/OWNER/grove-gitops@sha256:abc", "not ghcr.io/OWNER/grove-gitops"),
        ("image: ghcr.io/OWNER/grove-gitops:v9.9.9", "image tag v9.9.9"),
        (
            "- https://github.com/someone/grove-gitops//overlays/crds?ref=v0.1.0",
            "not https://github.com/OWNER/grove-gitops",
        ),
        (f"- {REPOSITORY}//overlays/crds?ref=main", "?ref=main"),
        ("uses: acme/grove-gitops@v0.1.0", "Action acme/grove-gitops"),
        ("uses: OWNER/grove-gitops@main", "Action at main"),
        (f'pip install "grove-gitops @ git+{REPOSITORY}@main"', "is not pinned"),
    ],
)
def test_the_checker_catches_each_other_form(line: str, said: str) -> None:
    problems = findings(line, "x.md")
    assert any(said in problem for problem in problems), problems


@pytest.mark.parametrize(
    "line",
    [
        f"image: {IMAGE}:{TAG}",
        f"image: {{name: {IMAGE}@sha256:<digest>}}",
        "    newName: ghcr.io/acme/grove-gitops   # your mirror",
        f"uses: {OWNER}/grove-gitops@{TAG}",
        f"uses: {OWNER}/grove-gitops@{'a' * 40}",
        f'"grove-gitops @ git+{REPOSITORY}@$GROVE_GITOPS_COMMIT"',
        f"url: {REPOSITORY}.git",
        "podman push localhost/grove-gitops:dev",
        f"grove-gitops=={VERSION}",
    ],
)
def test_the_checker_accepts_the_canonical_forms(line: str) -> None:
    assert findings(line, "x.md") == []
