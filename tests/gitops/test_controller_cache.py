"""``controller --once`` from a fresh process reuses the previous process's work (issue 14):
rendered PodCliqueSets from the cache in the work directory, the source export, and the
output compared by git blob ids instead of reading the previous output tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from grove_gitops.gitops.controller import Controller
from grove_gitops.gitops.repo import Workspace
from tests.gitops.test_controller import Remote, config, expected_files
from tests.support import pcs_yaml


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path)


NAMES = ("alpha", "beta", "gamma", "delta")


def _once(remote: Remote) -> tuple[list[str], int, int]:
    """One iteration in a new Controller on the same work directory (what ``--once`` does)."""
    with Controller(config(remote)) as ctl:
        result = ctl.run_once()
        return result.rendered, ctl.cache.hits, ctl.cache.misses


def test_a_fresh_process_renders_only_the_changed_podcliqueset(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> None:
    sha = remote.push_source({f"{n}.yaml": pcs_yaml(n) for n in NAMES}, "four")
    assert _once(remote) == ([sha], 0, 4)
    workdir = remote.root / "work" / "clone"
    assert list((workdir / ".git" / "grove-gitops-cache" / "shards").rglob("*"))

    changed = pcs_yaml("beta").replace("replicas: 2", "replicas: 3")
    sha2 = remote.push_source({"beta.yaml": changed}, "beta: 3 workers")
    read: list[Path] = []
    written: list[Path] = []
    real_read, real_write = Path.read_bytes, Path.write_bytes

    def spy_read(self: Path) -> bytes:
        read.append(self)
        return real_read(self)

    def spy_write(self: Path, data: bytes) -> int:  # type: ignore[override]
        written.append(self)
        return real_write(self, data)

    monkeypatch.setattr(Path, "read_bytes", spy_read)
    monkeypatch.setattr(Path, "write_bytes", spy_write)
    assert _once(remote) == ([sha2], 3, 1)
    monkeypatch.undo()
    assert remote.files_at("rendered") == expected_files(remote, sha2)
    # The previous output was never read back; only the changed source file was exported.
    assert not [p for p in read if ".git" not in p.relative_to(workdir).parts]
    source_dir = workdir / ".git" / "grove-gitops-source"
    assert [p.relative_to(source_dir).as_posix() for p in written if p.is_relative_to(source_dir)] == ["beta.yaml"]
    before, after = expected_files(remote, sha), expected_files(remote, sha2)
    differ = {rel for rel in after if before.get(rel) != after[rel]}
    outputs = {p.relative_to(workdir).as_posix() for p in written if ".git" not in p.relative_to(workdir).parts}
    assert outputs == differ and all(rel.startswith(("ml/beta/", "README.md", "render.meta")) for rel in differ)


def test_output_modified_in_the_work_tree_never_reaches_the_branch(remote: Remote) -> None:
    """The rule: outputs are compared with the committed blob ids; the private work tree is
    reset to the branch by a fresh process, and an edit behind a running one is never staged."""
    remote.push_source({f"{n}.yaml": pcs_yaml(n) for n in NAMES}, "four")
    workdir = remote.root / "work" / "clone"
    with Controller(config(remote)) as ctl:
        ctl.run_once()
        tampered = next(p for p in workdir.rglob("*.yaml") if ".git" not in p.parts and "/ml/alpha/" in p.as_posix())
        tampered.write_text("tampered: true\n")
        (workdir / "ml" / "gamma" / "README.md").unlink()
        sha = remote.push_source({"beta.yaml": pcs_yaml("beta").replace("replicas: 2", "replicas: 3")}, "beta")
        assert ctl.run_once().rendered == [sha]
        assert remote.files_at("rendered") == expected_files(remote, sha)
    tampered.write_text("tampered again\n")
    sha = remote.push_source({"delta.yaml": pcs_yaml("delta").replace("replicas: 2", "replicas: 4")}, "delta")
    assert _once(remote)[0] == [sha]
    assert remote.files_at("rendered") == expected_files(remote, sha)
    assert b"tampered" not in tampered.read_bytes()  # the fresh process reset its work tree


def test_a_corrupt_cache_entry_or_export_record_between_processes(remote: Remote) -> None:
    remote.push_source({f"{n}.yaml": pcs_yaml(n) for n in NAMES}, "four")
    _once(remote)
    workdir = remote.root / "work" / "clone"
    entries = sorted(p for p in (workdir / ".git" / "grove-gitops-cache" / "shards").rglob("*") if p.is_file())
    entries[0].write_bytes(entries[0].read_bytes()[:100])
    (workdir / ".git" / "grove-gitops-source.json").write_text("{not json")
    sha = remote.push_source({"gamma.yaml": pcs_yaml("gamma").replace("replicas: 2", "replicas: 5")}, "gamma")
    rendered, hits, misses = _once(remote)
    assert rendered == [sha] and (hits, misses) == (2, 2)
    assert remote.files_at("rendered") == expected_files(remote, sha)


def test_an_export_killed_midway_is_not_trusted(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> None:
    remote.push_source({f"{n}.yaml": pcs_yaml(n) for n in NAMES}, "four")
    _once(remote)
    sha = remote.push_source({"alpha.yaml": pcs_yaml("alpha").replace("replicas: 2", "replicas: 6")}, "alpha")

    def killed(*args: object, **kwargs: object) -> dict[str, str]:
        raise KeyboardInterrupt  # stands for SIGKILL: nothing after this line runs

    monkeypatch.setattr(Workspace, "export", killed)
    with pytest.raises(KeyboardInterrupt), Controller(config(remote)) as ctl:
        ctl.run_once()
    monkeypatch.undo()
    assert not (remote.root / "work" / "clone" / ".git" / "grove-gitops-source.json").exists()
    assert _once(remote)[0] == [sha]
    assert remote.files_at("rendered") == expected_files(remote, sha)


def test_stale_locks_are_removed_without_walking_loose_objects(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> None:
    """A killed run's ``*.lock`` files go (refs, index, packs); the loose-object fan-out, the
    render cache and the source export are not walked for them."""
    import os

    sha = remote.push_source({"alpha.yaml": pcs_yaml("alpha")}, "one")
    _once(remote)
    git_dir = remote.root / "work" / "clone" / ".git"
    stale = [git_dir / "index.lock", git_dir / "refs" / "heads" / "rendered.lock", git_dir / "objects" / "pack" / "x.lock"]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    walked: list[str] = []
    real_walk = os.walk

    def spy(top: str | os.PathLike[str], *args: object, **kwargs: object) -> object:
        for entry in real_walk(top, *args, **kwargs):  # type: ignore[call-overload]
            walked.append(entry[0])
            yield entry

    monkeypatch.setattr(os, "walk", spy)
    sha2 = remote.push_source({"alpha.yaml": pcs_yaml("alpha").replace("replicas: 2", "replicas: 3")}, "two")
    assert _once(remote)[0] == [sha2] and sha != sha2
    assert not [p for p in stale if p.exists()]
    skipped = ("grove-gitops-cache", "grove-gitops-source")
    assert walked and not [w for w in walked if any(s in w for s in skipped)]
    assert not [w for w in walked if len(os.path.basename(w)) == 2 and os.path.basename(os.path.dirname(w)) == "objects"]
