"""The controller on a fleet source (all clusters in one commit), the Argo CD trailers, and the
Source Hydrator files (format checked against argoproj/argo-cd commitserver/commit/hydratorhelper.go,
util/hydrator/hydrator.go and util/settings/settings.go at 37ee0097)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import git

from grove_gitops.gitops import hydrator, trailers
from grove_gitops.gitops.controller import Controller
from grove_gitops.sourcetree import render_source_tree
from tests.gitops.test_controller import Remote, config
from tests.support import PROJECT

FLEET = PROJECT / "examples-fleet"


def _fleet_files() -> dict[str, str]:
    return {str(p.relative_to(FLEET)): p.read_text() for p in sorted(FLEET.rglob("*.yaml"))}


def _export(remote: Remote, sha: str, dest: Path) -> Path:
    for item in (git.Repo(remote.bare).commit(sha).tree / "src").traverse():
        if isinstance(item, git.Blob):
            target = dest / str(item.path)[len("src/") :]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(item.data_stream.read())
    return dest


def test_all_clusters_render_in_one_commit_with_argocd_trailers(tmp_path: Path) -> None:
    remote = Remote(tmp_path)
    sha = remote.push_source(_fleet_files(), "fleet: two clusters")
    with Controller(config(remote)) as ctl:
        result = ctl.run_once()
    assert result.rendered == [sha]
    log = remote.branch_log("rendered")
    assert len(log) == 1
    files = remote.files_at("rendered")
    assert files == render_source_tree(_export(remote, sha, tmp_path / "export")).tree.files
    assert {p.split("/")[0] for p in files} >= {"prod-kai", "staging-volcano"}
    found = trailers.parse(str(log[0].message))
    assert found[trailers.ARGO_REFERENCE] == sha
    assert found["Argocd-reference-commit-author"] == "dev <dev@example.com>"
    assert found["Argocd-reference-commit-subject"] == "fleet: two clusters"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", found["Argocd-reference-commit-date"])
    assert found["Argocd-reference-commit-repourl"] == str(remote.bare)
    assert "hydrator.metadata" not in files  # only with --hydrator-files


def test_hydrator_files_follow_argocd(tmp_path: Path) -> None:
    remote = Remote(tmp_path)
    first = remote.push_source(_fleet_files(), "fleet: two clusters\n\nWhy: staging needs the embedder.")
    with Controller(config(remote, hydrator=True)) as ctl:
        ctl.run_once()
        files = remote.files_at("rendered")
        assert files[".gitattributes"] == b"**/README.md linguist-generated=true\n**/hydrator.metadata linguist-generated=true"
        root = files["hydrator.metadata"].decode()
        data = json.loads(root)
        assert list(data) == ["repoURL", "drySha", "author", "date", "subject", "body"]
        assert data["drySha"] == first and data["repoURL"] == str(remote.bare)
        assert data["author"] == "dev <dev@example.com>" and data["subject"] == "fleet: two clusters"
        assert data["body"] == "Why: staging needs the embedder.\n"
        assert root.startswith('{\n  "repoURL": ') and root.endswith("\n}\n")
        shard = "staging-volcano/inference/embedder"
        command = "grove-gitops render src --out rendered"
        assert json.loads(files[f"{shard}/hydrator.metadata"]) == {
            "repoURL": str(remote.bare),
            "drySha": first,
            "commands": [command],
        }
        readme = files[f"{shard}/README.md"].decode()
        assert readme.startswith(
            "# Manifest Hydration\n\nTo hydrate the manifests in this repository, run the following commands:\n\n"
            f"```shell\ngit clone {remote.bare}\n# cd into the cloned directory\ngit checkout {first}\n{command}\n```\n"
        )
        assert "| Pod | 2 |" in readme  # grove-gitops' own shard summary follows
        for folder in ("prod-kai/_cluster", "prod-kai/_flux", "staging-volcano/_argocd", "prod-kai/inference/llama-disagg"):
            assert f"{folder}/hydrator.metadata" in files
        # Only staging's embedder changes: prod-kai's shards keep the metadata of the first commit.
        src = _fleet_files()
        src["clusters/staging-volcano.yaml"] = src["clusters/staging-volcano.yaml"].replace(
            "inference/embedder: 1", "inference/embedder: 2"
        )
        second = remote.push_source(src, "staging: two embedders")
        assert ctl.run_once().rendered == [second]
        files = remote.files_at("rendered")
        assert json.loads(files[f"{shard}/hydrator.metadata"])["drySha"] == second
        assert json.loads(files["prod-kai/inference/embedder/hydrator.metadata"])["drySha"] == first
        assert json.loads(files["hydrator.metadata"])["drySha"] == second
        # A source commit that changes no manifest makes no commit (as Argo CD's hydrator).
        src["README.md"] = "notes\n"
        third = remote.push_source(src, "docs only")
        last = ctl.run_once()
        assert last.unchanged == [third], (last, remote.branch_log("rendered")[0].stats.files)
    assert len(remote.branch_log("rendered")) == 2


def test_go_json_encoding() -> None:
    """Go's json.Encoder with SetEscapeHTML(false): <>& kept, U+2028/2029 escaped, UTF-8 kept."""
    text = hydrator.go_json({"subject": "a <b> & c \u2028 é \n\t\x01", "commands": []}).decode()
    assert text == '{\n  "subject": "a <b> & c \\u2028 é \\n\\t\\u0001",\n  "commands": []\n}\n'


def test_references_from_the_dry_commit_trailers() -> None:
    dry = hydrator.DryCommit(
        "a" * 40,
        "https://example.com/r.git",
        "dev <dev@example.com>",
        "2026-11-24T23:00:00+00:00",
        "subject\n\nbody line\nArgocd-reference-commit-sha: abcdef1\nArgocd-reference-commit-author: Jane Doe <j@example.com>\n"
        'Argocd-reference-commit-body: "multi\\nline"\nArgocd-reference-commit-sha-bad: x\nArgocd-reference-commit-date: nope\n',
    )
    data = hydrator.root_metadata(dry)
    assert data["date"] == "2026-11-24T23:00:00Z"
    assert data["body"] == "body line\nArgocd-reference-commit-sha-bad: x\nArgocd-reference-commit-date: nope\n"
    assert data["references"] == [{"commit": {"author": '"Jane Doe" <j@example.com>', "body": "multi\nline", "sha": "abcdef1"}}]
