"""docs/install.md, the ordered install checklist (issue 34 §13), and the placeholders it shares with
the overlays: the controller pushes to the repository, branch and path that overlays/argocd and
overlays/flux read, every overlay the checklist names exists and builds, and its own snippets
(written to a scratch directory next to a "checkout" exactly as the page says) build too."""

from __future__ import annotations

import posixpath
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.wiring.helpers import kubectl

PROJECT = Path(__file__).resolve().parents[2]
INSTALL = PROJECT / "docs" / "install.md"
OVERLAYS = PROJECT / "overlays"


def _load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _controller_env() -> dict[str, str]:
    (deployment,) = _load(OVERLAYS / "controller" / "deployment.yaml")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def _controller_target() -> tuple[str, str, str]:
    env = _controller_env()
    return (
        env["GROVE_GITOPS_CONTROLLER_REPO"],
        env["GROVE_GITOPS_CONTROLLER_OUTPUT_BRANCH"],
        env.get("GROVE_GITOPS_CONTROLLER_OUTPUT_PATH", "").strip("/"),
    )


def _under(output_path: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(output_path, path)) if output_path else path


def test_argocd_and_flux_read_what_the_controller_pushes() -> None:
    repo, branch, out = _controller_target()
    assert branch != _controller_env()["GROVE_GITOPS_CONTROLLER_SOURCE_BRANCH"], "branch mode in the overlay"

    (appset,) = _load(OVERLAYS / "argocd" / "applicationset.yaml")
    git = appset["spec"]["generators"][0]["git"]
    source = appset["spec"]["template"]["spec"]["source"]
    assert (git["repoURL"], git["revision"]) == (repo, branch)
    assert (source["repoURL"], source["targetRevision"]) == (repo, branch)
    assert [d["path"] for d in git["directories"]] == [_under(out, "_cluster"), _under(out, "*/*")]

    (app,) = _load(OVERLAYS / "argocd" / "application.yaml")
    assert (app["spec"]["source"]["repoURL"], app["spec"]["source"]["targetRevision"]) == (repo, branch)
    assert app["spec"]["source"]["path"].startswith(out)

    (gitrepo,) = _load(OVERLAYS / "flux" / "gitrepository.yaml")
    assert (gitrepo["spec"]["url"], gitrepo["spec"]["ref"]["branch"]) == (repo, branch)
    for name, path in (("kustomization-wiring.yaml", "_flux"), ("kustomization-prereqs.yaml", "_cluster")):
        (kustomization,) = _load(OVERLAYS / "flux" / name)
        assert kustomization["spec"]["path"] == "./" + _under(out, path), name
        assert kustomization["spec"]["sourceRef"]["name"] == gitrepo["metadata"]["name"], name


def test_install_md_uses_the_same_placeholders() -> None:
    repo, branch, out = _controller_target()
    text = INSTALL.read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:yaml|bash)\n(.*?)```", text, re.DOTALL)
    (wiring_block,) = [b for b in blocks if "\nwiring:" in b]
    wiring = yaml.safe_load(wiring_block)["wiring"]
    assert (wiring["repoURL"], wiring["targetRevision"], wiring["path"]) == (repo, branch, out)
    # The controller patch of step 4 sets the overlay's own values (a reader replaces them all at once).
    env = _controller_env()
    for name, value in re.findall(r"- name: (GROVE_GITOPS_CONTROLLER_\w+)\n\s+value: (\S+)", text):
        assert env[name] == value, name
    table = text[text.index("| placeholder |") : text.index("\n\n", text.index("| placeholder |"))]
    assert f"`{repo}`" in table and f"`{branch}`" in table


def test_every_overlay_the_checklist_names_exists_and_the_steps_are_in_order() -> None:
    text = INSTALL.read_text(encoding="utf-8")
    named = sorted({m.rstrip(".,:)`") for m in re.findall(r"overlays/[A-Za-z0-9_./-]+", text)})
    assert "overlays/gate-lifter" in named and "overlays/flux" in named and "overlays/argocd" in named
    for rel in named:
        assert (PROJECT / rel).exists(), f"docs/install.md names {rel}, which does not exist"
    steps = re.findall(r"^## (\d'?)\. (.+)$", text, re.MULTILINE)
    titles = [title for _, title in steps]
    at = -1
    for word in ["CRDs", "agent and its RBAC", "Secret", "controller", "Argo CD", "Flux", "First sync"]:
        at = next((i for i, title in enumerate(titles) if i > at and word in title), -1)
        assert at != -1, f"no step about {word} after the previous one: {titles}"
    # Every step from the CRDs to the first sync says how to check it, with a command.
    for number, title in steps:
        if number == "7":
            continue
        start = text.index(f"## {number}. {title}")
        end = text.find("\n## ", start + 1)
        section = text[start : end if end != -1 else len(text)]
        assert "Check" in section and re.search(r"^(kubectl|git|\.venv/bin/grove-gitops) ", section, re.MULTILINE), title


def test_the_overlays_and_the_checklists_own_overlays_build(tmp_path: Path) -> None:
    tool = kubectl()
    text = INSTALL.read_text(encoding="utf-8")
    for rel in sorted({m.rstrip(".,:)`") for m in re.findall(r"overlays/[A-Za-z0-9_./-]+", text)}):
        if (PROJECT / rel / "kustomization.yaml").is_file():
            proc = subprocess.run([tool, "kustomize", str(PROJECT / rel)], capture_output=True, text=True, timeout=120, check=False)
            assert proc.returncode == 0, (rel, proc.stderr)
    # Follow the page: `mkdir -p ../my-install/X; cat > ../my-install/X/kustomization.yaml <<'EOF' ... EOF`,
    # run from the root of a checkout called grove-gitops.
    (tmp_path / "grove-gitops").symlink_to(PROJECT)
    written = re.findall(r"cat > \.\./(my-install/\w+/kustomization\.yaml) <<'EOF'\n(.*?)\nEOF\n", text, re.DOTALL)
    assert [rel for rel, _ in written] == ["my-install/agent/kustomization.yaml", "my-install/controller/kustomization.yaml"]
    for rel, body in written:
        target = tmp_path / rel
        target.parent.mkdir(parents=True)
        target.write_text(body + "\n", encoding="utf-8")
        proc = subprocess.run([tool, "kustomize", str(target.parent)], capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, (rel, proc.stderr)
        docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
        assert any(d["kind"] == "Deployment" for d in docs), rel
