"""``diff --repo``: source trees read at two commits of a real (temporary) git repository."""

from __future__ import annotations

import os
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest

from grove_gitops.diff.errors import GitRefError
from grove_gitops.diff.gitrefs import extract, normalize_source_path
from tests.diff.diffhelpers import LPX_PROFILES, clique, pcs, run_diff
from tests.support import plain, write_source

BOT = git.Actor("grove-gitops tests", "tests@example.com")


def _commit(repo: git.Repo, files: dict[str, str], message: str, remove: tuple[str, ...] = ()) -> str:
    root = Path(repo.working_dir)
    write_source(root, files)
    if files:
        repo.index.add(list(files))
    if remove:
        repo.index.remove(list(remove), working_tree=True)
    return repo.index.commit(message, author=BOT, committer=BOT).hexsha


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[git.Repo]:
    r = git.Repo.init(tmp_path / "repo", initial_branch="main")
    yield r
    r.close()


def _v(replicas: int, scheduler: str | None = None) -> str:
    pod: dict[str, Any] = {"pod": {"schedulerName": scheduler}} if scheduler else {}
    return pcs("app", [clique("router", 1, **pod), clique("worker", replicas, **pod)])


def test_diff_two_commits(repo: git.Repo) -> None:
    v1 = _commit(repo, {"deploy/config.yaml": LPX_PROFILES, "deploy/app.yaml": _v(2), "README.md": "hi"}, "v1")
    v2 = _commit(repo, {"deploy/app.yaml": _v(3, "lpx-scheduler")}, "v2")
    head_before = repo.head.commit.hexsha
    result = run_diff(["--repo", str(repo.working_dir), v1, v2, "--source-path", "deploy", "--output", "text"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith(f"grove-gitops render diff: base {v1[:7]} -> head {v2[:7]}\n")
    assert "Scheduler switch: default-scheduler → lpx-scheduler" in text
    assert "Pods added (1): app-0-worker-2-" in text
    assert "Pods replaced (3), by hostname: app-0-router-0, app-0-worker-0, app-0-worker-1" in text
    assert "spec.podgroups[app-0-worker].minReplicas: 2 -> 3" in text
    # The work tree, index and HEAD are untouched.
    assert repo.head.commit.hexsha == head_before
    assert not repo.is_dirty(untracked_files=True)


def test_refs_by_name_and_markdown_rerun_hint(repo: git.Repo) -> None:
    _commit(repo, {"config.yaml": LPX_PROFILES, "app.yaml": _v(2)}, "v1")
    repo.create_tag("v1")
    v2 = _commit(repo, {"app.yaml": _v(2, "lpx-scheduler")}, "v2")
    result = run_diff(["--repo", str(repo.working_dir), "v1", "main"])
    assert result.exit_code == 0, result.output
    first_lines = result.stdout.splitlines()[:3]
    v1 = repo.commit("v1").hexsha
    assert first_lines[2] == f"## grove-gitops render diff (base `v1 ({v1[:7]})` → head `main ({v2[:7]})`)"


def test_source_path_absent_at_base_shows_everything_added(repo: git.Repo) -> None:
    v1 = _commit(repo, {"README.md": "nothing yet\n"}, "v1")
    v2 = _commit(repo, {"deploy/app.yaml": _v(1)}, "v2")
    result = run_diff(["--repo", str(repo.working_dir), v1, v2, "--source-path", "deploy"])
    assert result.exit_code == 0, result.output
    assert f"base `{v1[:7]}, source path absent`" in result.stdout
    assert "**PodGangs added (1):** `app-0`" in result.stdout
    assert "**Pods added (2):**" in result.stdout


def test_removed_file_and_identical_refs(repo: git.Repo) -> None:
    v1 = _commit(repo, {"a.yaml": _v(1), "b.yaml": _v(1).replace("name: app", "name: other")}, "v1")
    v2 = _commit(repo, {}, "v2", remove=("b.yaml",))
    result = run_diff(["--repo", str(repo.working_dir), v1, v2, "--output", "text"])
    assert result.exit_code == 0, result.output
    assert "PodGangs removed (1): other-0" in result.stdout
    same = run_diff(["--repo", str(repo.working_dir), v1, v1])
    assert same.exit_code == 0 and "**No changes:**" in same.stdout


def test_invalid_head_commit_names_the_file(repo: git.Repo) -> None:
    v1 = _commit(repo, {"app.yaml": _v(1)}, "v1")
    v2 = _commit(repo, {"app.yaml": _v(1).replace("replicas: 1\n  template", "replicas: -1\n  template")}, "v2")
    result = run_diff(["--repo", str(repo.working_dir), v1, v2])
    assert result.exit_code == 1
    assert "error: head: app.yaml: spec.replicas" in plain(result.stderr)
    assert f"in head ({v2[:7]})" in result.stderr


def test_bad_ref_and_bad_repo(repo: git.Repo, tmp_path: Path) -> None:
    v1 = _commit(repo, {"app.yaml": _v(1)}, "v1")
    result = run_diff(["--repo", str(repo.working_dir), v1, "no-such-branch"])
    assert result.exit_code == 1 and "no-such-branch: not a commit" in result.stderr
    (tmp_path / "plain").mkdir()
    result = run_diff(["--repo", str(tmp_path / "plain"), "a", "b"])
    assert result.exit_code == 1 and "not a git repository" in result.stderr
    result = run_diff(["--repo", str(repo.working_dir), v1, v1, "--source-path", "../etc"])
    assert result.exit_code == 1 and "relative path inside the repository" in result.stderr


def test_extract_skips_symlinks_and_non_yaml(repo: git.Repo, tmp_path: Path) -> None:
    root = Path(repo.working_dir)
    write_source(root, {"src/app.yaml": _v(1), "src/notes.txt": "x", "src/out/render.meta": "{}"})
    os.symlink("app.yaml", root / "src" / "link.yaml")
    repo.index.add(["src/app.yaml", "src/notes.txt", "src/out/render.meta", "src/link.yaml"])
    sha = repo.index.commit("v1", author=BOT, committer=BOT).hexsha
    got = extract(repo, sha, "./src/")
    assert got.present and got.files == 2
    assert sorted(got.source.files) == ["app.yaml", "out/render.meta"]
    assert got.source.files["out/render.meta"] == b"{}"
    with pytest.raises(GitRefError, match="not a directory"):
        extract(repo, sha, "src/app.yaml")


def test_normalize_source_path() -> None:
    assert normalize_source_path(".") == ""
    assert normalize_source_path("") == ""
    assert normalize_source_path("./deploy/") == "deploy"
    with pytest.raises(GitRefError):
        normalize_source_path("/abs")


def test_extract_keeps_the_ignore_file(repo: git.Repo) -> None:
    """``diff --repo`` renders each side as ``render`` would: ``.grove-gitops-ignore`` included."""
    sha = _commit(
        repo, {"src/app.yaml": _v(1), "src/.grove-gitops-ignore": "drafts/\n", "src/drafts/x.yaml": "a: [1\n"}, "v1"
    )
    assert extract(repo, sha, "src").source.files[".grove-gitops-ignore"] == b"drafts/\n"


def test_diff_repo_writes_nothing_and_matches_the_two_folder_diff(
    repo: git.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both refs are read into memory (issue 14: writing them out cost more than the diff):
    no temporary file or folder is made, and the report is the one of the same two trees
    given as folders."""
    base = {"config.yaml": LPX_PROFILES, "app.yaml": _v(2), ".grove-gitops-ignore": "drafts/\n", "drafts/x.yaml": "a: [1\n"}
    head = {**base, "app.yaml": _v(3, "lpx-scheduler"), "more/other.yaml": _v(1).replace("name: app", "name: other")}
    v1 = _commit(repo, {f"deploy/{k}": v for k, v in base.items()}, "v1")
    v2 = _commit(repo, {f"deploy/{k}": v for k, v in head.items()}, "v2")
    write_source(tmp_path / "base", base)
    write_source(tmp_path / "head", head)
    made: list[object] = []
    for name in ("mkdtemp", "mkstemp"):
        real = getattr(tempfile, name)
        monkeypatch.setattr(tempfile, name, lambda *a, _real=real, **k: (made.append(a), _real(*a, **k))[1])
    empty = tmp_path / "tmp"
    empty.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(empty))
    labels = ["--base-label", "B", "--head-label", "H", "--output", "text"]
    via_repo = run_diff(["--repo", str(repo.working_dir), v1, v2, "--source-path", "deploy", *labels])
    assert via_repo.exit_code == 0, via_repo.output
    assert made == [] and list(empty.iterdir()) == []
    via_folders = run_diff([str(tmp_path / "base"), str(tmp_path / "head"), *labels])
    assert via_folders.exit_code == 0, via_folders.output
    assert "PodGangs added (1): other-0" in via_repo.stdout
    assert via_repo.stdout == via_folders.stdout


def test_symlinks_and_submodules_of_a_ref_are_skipped(repo: git.Repo, tmp_path: Path) -> None:
    """A symlink inside the tree (git trees are read without following links) and a
    submodule (its content is not in this repository) are never read, even when named like
    YAML; a symlink leading outside the tree is refused, as the walk of a checkout refuses it
    (tests/gitops/test_crafted_trees.py)."""
    root = Path(repo.working_dir)
    write_source(root, {"src/app.yaml": _v(1)})
    os.symlink("app.yaml", root / "src" / "passwd.yaml")
    repo.index.add(["src/app.yaml", "src/passwd.yaml"])
    other = _commit(repo, {"elsewhere.yaml": "a: 1\n"}, "other")
    repo.git.update_index("--add", "--cacheinfo", f"160000,{other},src/sub.yaml")
    repo.git.update_index("--add", "--cacheinfo", f"160000,{other},src/module")
    sha = git.IndexFile(repo).commit("v1", author=BOT, committer=BOT).hexsha
    modes = repo.git.ls_tree("-r", sha, "src")
    assert "120000 blob" in modes and "160000 commit" in modes
    got = extract(repo, sha, "src")
    assert got.present and sorted(got.source.files) == ["app.yaml"]
    result = run_diff(["--repo", str(repo.working_dir), sha, sha, "--source-path", "src"])
    assert result.exit_code == 0 and "**No changes:**" in result.stdout, result.output


def test_a_path_leaving_the_tree_is_never_kept() -> None:
    """Only what the loader reads is kept from a listing; a path the shared rule refuses
    (``..``, ``.git``, a backslash) is refused by a tree held in memory outright (a crafted
    git tree holding one is refused when listed: tests/gitops/test_crafted_trees.py)."""
    from grove_gitops.load.gittree import wanted
    from grove_gitops.load.memory import MemorySource

    assert wanted("a/b.yaml") and wanted(".grove-gitops-ignore") and wanted("out/render.meta")
    for skipped in ("a/notes.txt", ".hidden/x.yaml", "a/.grove-gitops-ignore", "a/.x.yaml"):
        assert not wanted(skipped)
    for bad in ("../x.yaml", "a/../../x.yaml", "/x.yaml", "a//x.yaml", "a\\..\\x.yaml", ".git/x.yaml", ".GIT /x.yaml"):
        with pytest.raises(ValueError):
            MemorySource("src", {bad: b""})


def test_a_blob_both_refs_hold_is_read_once(repo: git.Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    from grove_gitops.diff import gitrefs

    v1 = _commit(repo, {"a.yaml": _v(1), "b.yaml": _v(1).replace("name: app", "name: other")}, "v1")
    v2 = _commit(repo, {"a.yaml": _v(2)}, "v2")
    asked: list[list[str]] = []
    real = gitrefs.read_blobs

    def counting(git_dir: Path, entries: list[Any], known: dict[str, bytes] | None = None) -> dict[str, bytes]:
        asked.append([e.oid for e in entries if known is None or e.oid not in known])
        return real(git_dir, entries, known)

    monkeypatch.setattr(gitrefs, "read_blobs", counting)
    known: dict[str, bytes] = {}
    base, head = extract(repo, v1, ".", known), extract(repo, v2, ".", known)
    assert [len(a) for a in asked] == [2, 1]
    assert head.source.files["b.yaml"] == base.source.files["b.yaml"]
    assert head.source.files["a.yaml"].decode() == textwrap.dedent(_v(2))


def test_a_missing_object_is_an_error_naming_the_ref(repo: git.Repo) -> None:
    """A damaged repository (a blob gone from the object database): exit 1 and a message."""
    v1 = _commit(repo, {"app.yaml": _v(1)}, "v1")
    repo.create_tag("v1")
    blob = repo.commit(v1).tree["app.yaml"].hexsha
    (Path(repo.git_dir) / "objects" / blob[:2] / blob[2:]).unlink()
    with pytest.raises(GitRefError, match=f"v1: cannot read the tree: object {blob}: missing"):
        extract(repo, "v1", ".")
    result = run_diff(["--repo", str(repo.working_dir), v1, v1])
    assert result.exit_code == 1 and "cannot read the tree" in result.stderr and "Traceback" not in result.output
