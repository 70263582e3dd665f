"""Crafted git trees on every command that reads git (issue 21, items 2 and 3).

A tree holding ``..``, ``.git`` in any guise, a backslash name, a symbolic link leading out,
a name twice or an oversize blob is refused the same way by the controller (the commit is
skipped and recorded, never sticks), ``diff --repo``, ``plan --repo`` and ``pr-check run``
(exit 1, the ref and the escaped path named, no traceback), and no content is read before
the sizes are checked. Real repositories throughout: trees are written with git's plumbing
(``tests/gitops/crafting.py``) into a bare repository the controller clones.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from grove_gitops.cli.diff import diff_command
from grove_gitops.cli.plan import plan_command
from grove_gitops.cli.prcheck import pr_check
from grove_gitops.errors import GitError
from grove_gitops.gitops.controller import Controller, ControllerConfig, IterationResult
from grove_gitops.load import gittree
from grove_gitops.load.treepaths import component_problem, path_problem, shown, symlink_problem
from grove_gitops.yamlfiles.yamlio import MAX_FILE_BYTES
from tests.gitops.crafting import Blob, Gitlink, Link, Tree, blob, commit, configmap, craft, git, push

REFUSED = "refusing the tree"
#: Names the shared rule refuses (each is one tree entry's name).
EVIL = ["..", ".", ".git", ".GIT", ".git.", ".git ", "git~1", ".g\u200cit", ".git::$INDEX_ALLOCATION", "a\\..\\x.yaml"]


class Bare:
    """A bare repository holding crafted commits on ``main``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.dir)], check=True)

    def source(self, entries: dict[str | bytes, Any], parent: str | None = None, extra: Tree | None = None) -> str:
        """A commit whose ``src`` folder holds ``entries`` (plus ``extra`` at the root)."""
        src = Tree(list(entries.items()))
        root = Tree([("src", src), *(extra.entries if extra else [])])
        sha = commit(self.dir, root, parent)
        push(self.dir, sha)
        return sha


@pytest.fixture
def bare(tmp_path: Path) -> Bare:
    return Bare(tmp_path)


def _config(bare: Bare, **kw: Any) -> ControllerConfig:
    values: dict[str, Any] = {
        "repo": str(bare.dir),
        "workdir": bare.root / "work" / "clone",
        "source_path": "src",
        "backoff_base": 0.01,
    }
    values.update(kw)
    return ControllerConfig(**values)


def _once(cfg: ControllerConfig) -> IterationResult:
    """One iteration in a fresh controller (a new process: ``--once`` from a CronJob)."""
    with Controller(cfg) as ctl:
        return ctl.run_once()


def _failed(result: IterationResult, sha: str) -> str:
    return "\n".join(result.failed.get(sha, []))


def _evil_entry(name: str) -> tuple[str, Any]:
    """A tree entry ``name``: a folder whose ``x.yaml`` would leave ``src`` through ``..``, or,
    for a name that is a file name (holds a backslash), a ConfigMap."""
    if "\\" in name:
        return name, configmap("sneaky")
    return name, Tree([("x.yaml", configmap("sneaky"))])


# -- item 3: the controller never wedges ----------------------------------------------------


@pytest.mark.parametrize("evil", EVIL)
def test_a_bad_head_at_the_first_clone_is_refused_and_a_fix_renders(bare: Bare, evil: str) -> None:
    """Before: the first clone's HEAD was the bad commit and ``git reset --hard`` failed at
    every run (``invalid path '../x.yaml'``), even after a fix, until the work directory was
    deleted."""
    cfg = _config(bare)
    name, node = _evil_entry(evil)
    bad = bare.source({"a.yaml": configmap("a"), name: node})
    result = _once(cfg)
    assert REFUSED in _failed(result, bad), result
    assert result.rendered == [] and bare.dir.joinpath("refs/heads/rendered").exists() is False
    fixed = bare.source({"a.yaml": configmap("a"), "b.yaml": configmap("b")}, parent=bad)
    assert _once(cfg).rendered == [fixed]
    # And the next process too (the refused commit is behind the examined record).
    assert _once(cfg).rendered == []
    files = git(bare.dir, "ls-tree", "-r", "--name-only", "rendered")
    assert "sneaky" not in files and "default/_resources/10-configmap--b.yaml" in files.split("\n")


def test_a_bad_commit_after_a_good_one_is_skipped_by_every_process(bare: Bare) -> None:
    cfg = _config(bare)
    good = bare.source({"a.yaml": configmap("a")})
    assert _once(cfg).rendered == [good]
    bad = bare.source({"a.yaml": configmap("a"), "..": Tree([("x.yaml", configmap("x"))])}, parent=good)
    result = _once(cfg)
    assert REFUSED in _failed(result, bad) and "src/..: tree entry has a path component '..'" in _failed(result, bad)
    assert _once(cfg).failed == {}  # recorded as examined: not tried again
    fixed = bare.source({"a.yaml": configmap("a"), "b.yaml": configmap("b")}, parent=bad)
    assert _once(cfg).rendered == [fixed]


@pytest.mark.parametrize("evil", ["..", "a\\..\\x.yaml"])
def test_folder_mode_refuses_to_check_out_a_bad_head_then_recovers(bare: Bare, evil: str) -> None:
    """In folder mode the output branch is the source branch: its bad head is never checked
    out (a clear error for the iteration); once a fix is pushed, the bad commit is skipped and
    the fix rendered."""
    cfg = _config(bare, output_branch="main", output_path="out")
    good = bare.source({"a.yaml": configmap("a")})
    assert _once(cfg).rendered == [good]
    head = git(bare.dir, "rev-parse", "main")
    name, node = _evil_entry(evil)
    bad = bare.source({"a.yaml": configmap("a"), name: node}, parent=head)
    with pytest.raises(GitError, match=r"output branch 'main' at [0-9a-f]{12}: src/.*refusing the tree"):
        _once(cfg)
    fixed = bare.source({"a.yaml": configmap("a"), "b.yaml": configmap("b")}, parent=bad)
    result = _once(cfg)
    assert REFUSED in _failed(result, bad) and result.rendered == [fixed]


def test_a_symlinked_output_path_is_never_written_through(bare: Bare, tmp_path: Path) -> None:
    """Folder mode: a source commit making the output path a link to a folder elsewhere. The
    controller wrote the rendered files through it, outside its work tree."""
    outside = tmp_path / "outside"
    outside.mkdir()
    cfg = _config(bare, output_branch="main", output_path="out")
    bare.source({"a.yaml": configmap("a")}, extra=Tree([("out", Link(os.fsencode(outside)))]))
    with pytest.raises(GitError, match="out: a symbolic link where the output is written"):
        _once(cfg)
    assert list(outside.iterdir()) == []


def test_a_missing_source_path_is_refused_not_retried_for_ever(bare: Bare) -> None:
    cfg = _config(bare)
    good = bare.source({"a.yaml": configmap("a")})
    assert _once(cfg).rendered == [good]
    moved = commit(bare.dir, Tree([("elsewhere", Tree([("a.yaml", configmap("a"))]))]), good)
    push(bare.dir, moved)
    result = _once(cfg)
    assert "src: the source path is not a folder in commit" in _failed(result, moved)
    fixed = bare.source({"a.yaml": configmap("a"), "b.yaml": configmap("b")}, parent=moved)
    assert _once(cfg).rendered == [fixed]


def test_a_tree_git_cannot_read_is_a_refused_commit_not_a_wedge(bare: Bare) -> None:
    """A folder entry naming a blob. Served over the protocol, ``pack-objects`` refuses it
    (the fetch fails: git's own refusal); a clone of a local path copies it as it is, and
    ``ls-tree`` then fails on it. Before, the controller took that for a repository error
    and retried the commit at every run."""
    cfg = _config(bare)
    not_a_tree = Blob(blob(bare.dir, b"hello\n"), b"40000")
    bad = bare.source({"a.yaml": configmap("a"), "d": not_a_tree})
    result = _once(cfg)
    assert "src: git cannot read the tree of commit" in _failed(result, bad), result
    fixed = bare.source({"a.yaml": configmap("a"), "b.yaml": configmap("b")}, parent=bad)
    diff = _run(diff_command, ["--repo", str(bare.dir), fixed, bad, "--source-path", "src"])
    assert diff.exit_code == 1 and "cannot read the tree" in diff.output, diff.output
    assert _once(cfg).rendered == [fixed]


# -- item 3: diff --repo and plan --repo refuse the same trees ------------------------------


def _run(command: Any, args: list[str]) -> Result:
    return CliRunner().invoke(command, args)


@pytest.mark.parametrize("evil", EVIL)
def test_diff_and_plan_refuse_what_the_controller_refuses(bare: Bare, evil: str) -> None:
    """Before: "no changes" for ``..``, and a ConfigMap ``a\\..\\x.yaml`` shown as added that
    Argo CD would never deploy."""
    base = bare.source({"a.yaml": configmap("a")})
    name, node = _evil_entry(evil)
    head = bare.source({"a.yaml": configmap("a"), name: node}, parent=base)
    git(bare.dir, "branch", "pr", head)
    for command in (diff_command, plan_command):
        result = _run(command, ["--repo", str(bare.dir), base, "pr", "--source-path", "src"])
        assert result.exit_code == 1, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert "Traceback" not in result.output
        assert f"error: pr ({head[:7]}): src/{shown(name)}" in result.output, result.output
        assert REFUSED in result.output


def test_pr_check_run_fails_on_a_refused_head(bare: Bare, tmp_path: Path) -> None:
    """Before: the PR check's diff showed ``a\\..\\x.yaml`` as an added ConfigMap."""
    base = bare.source({"a.yaml": configmap("a")})
    head = bare.source({"a.yaml": configmap("a"), "a\\..\\x.yaml": configmap("x")}, parent=base)
    out = tmp_path / "pr"
    args = ["run", "--repo", str(bare.dir), "--base", base, "--head", head, "--source-path", "src", "--out-dir", str(out)]
    result = _run(pr_check, args)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert f"{head[:7]}): src/a\\\\..\\\\x.yaml: tree entry has a backslash" in result.output, result.output
    assert json.loads((out / "status.json").read_text())["diff"] == "failed"


def test_refusals_in_json_name_the_ref_and_path(bare: Bare) -> None:
    base = bare.source({"a.yaml": configmap("a")})
    head = bare.source({"a.yaml": configmap("a"), "a\\..\\x.yaml": configmap("x")}, parent=base)
    result = _run(diff_command, ["--repo", str(bare.dir), base, head, "--output", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and "src/a\\\\..\\\\x.yaml: tree entry has a backslash" in doc["problems"][0]["message"]


_CM = configmap("x")


@pytest.mark.parametrize(
    ("entries", "refused"),
    [
        ([("a.yaml", _CM), ("a.yaml", configmap("y"))], "src/a.yaml: tree entry appears twice in its folder"),
        ([("d", Tree([("x.yaml", _CM)])), ("d", _CM)], "src/d: tree entry appears twice in its folder"),
        ([("d/x.yaml", _CM)], "src/d/x.yaml: tree entry has a '/' inside a single name"),
        ([("l.yaml", Link(b"../../../etc/passwd"))], "src/l.yaml: tree entry is a symbolic link leading outside"),
        ([("etc", Link(b"/etc"))], "src/etc: tree entry is a symbolic link leading outside"),
        ([("[31m.yaml", _CM), ("d", Tree([("..", _CM)]))], "src/d/..: tree entry has a path component '..'"),
        ([("n" * 256, _CM)], "tree entry has a name longer than 255 bytes"),
        ([("\x1b]0;t\x07\\.yaml", _CM)], "src/\\x1b]0;t\\x07\\\\.yaml: tree entry has a backslash"),
        ([("ok.yaml", _CM), ("in.yaml", Link(b"ok.yaml")), ("sub", Gitlink()), (".h", Link(b"/etc"))], None),
    ],
)
def test_every_reader_refuses_the_same_entries(bare: Bare, entries: list[tuple[str, Any]], refused: str | None) -> None:
    """Duplicates, a ``/`` inside a name, links leading out: the controller and ``diff``
    refuse them with the same words; links inside the tree, hidden ones and submodules are
    left out by both."""
    cfg = _config(bare)
    base = bare.source({"a.yaml": configmap("a")})
    assert _once(cfg).rendered == [base]
    head = commit(bare.dir, Tree([("src", Tree(entries, sort=False))]), base)
    push(bare.dir, head)
    diff = _run(diff_command, ["--repo", str(bare.dir), base, head, "--source-path", "src", "--output", "text"])
    result = _once(cfg)
    if refused is None:
        assert diff.exit_code == 0 and result.rendered == [head], (diff.output, result)
        assert "ConfigMap default/x" in diff.output
        return
    assert diff.exit_code == 1 and refused in diff.output, diff.output
    assert refused in _failed(result, head), result


# -- item 2: sizes are checked before anything is read -----------------------------------


@pytest.fixture
def cat_file_inputs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """Every object id anything in this process asked ``git cat-file --batch`` for."""
    asked: list[bytes] = []
    real = subprocess.run

    def recording(args: Any, *a: Any, **kw: Any) -> Any:
        if isinstance(args, list) and "cat-file" in args and kw.get("input"):
            asked.append(kw["input"])
        return real(args, *a, **kw)

    monkeypatch.setattr(gittree.subprocess, "run", recording)
    yield asked


def _big_blob(bare: Bare, size: int) -> str:
    line = b"# " + b"x" * 77 + b"\n"
    return blob(bare.dir, configmap("big") + line * (size // len(line)))


def test_an_oversize_blob_is_refused_without_being_read(bare: Bare, cat_file_inputs: list[bytes]) -> None:
    """A 5 MB YAML file: ``diff``, ``plan`` and the controller report it as too large and never
    ask git for its content (before: read whole, then refused; 658 MB for a 200 MB blob)."""
    big = _big_blob(bare, 5 * 1024 * 1024)
    base = bare.source({"a.yaml": configmap("a")})
    head = bare.source({"a.yaml": configmap("a"), "big.yaml": Blob(big)}, parent=base)
    message = f"big.yaml: file is larger than the {MAX_FILE_BYTES} byte limit"
    for command in (diff_command, plan_command):
        result = _run(command, ["--repo", str(bare.dir), base, head, "--source-path", "src"])
        assert result.exit_code == 1 and f"error: head: {message}" in result.output, result.output
    result = _once(_config(bare))
    assert f"src/{message}" in _failed(result, head)
    assert cat_file_inputs and not any(big.encode() in asked for asked in cat_file_inputs)


def test_the_total_size_and_count_of_a_tree_are_bounded(bare: Bare, monkeypatch: pytest.MonkeyPatch) -> None:
    base = bare.source({"a.yaml": configmap("a")})
    head = bare.source({f"f{i}.yaml": configmap(f"f{i}") for i in range(40)}, parent=base)
    args = ["--repo", str(bare.dir), base, head, "--source-path", "src"]
    monkeypatch.setattr(gittree, "MAX_TREE_BYTES", 3000)
    result = _run(diff_command, args)
    assert result.exit_code == 1 and "src: the YAML files hold more than 3000 bytes in all" in result.output
    monkeypatch.setattr(gittree, "MAX_TREE_BYTES", 1 << 30)
    monkeypatch.setattr(gittree, "MAX_TREE_FILES", 30)
    assert "src: more than 30 YAML files" in _run(diff_command, args).output
    monkeypatch.setattr(gittree, "MAX_TREE_FILES", 1000)
    monkeypatch.setattr(gittree, "MAX_TREE_ENTRIES", 20)
    result = _run(plan_command, args)
    assert result.exit_code == 1 and "the tree holds more than 20 entries" in result.output
    assert REFUSED in _failed(_once(_config(bare)), head)


# -- the shared rule --------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*EVIL, "", "a/b", "x\0", "a" * 256, ".GiT  ..", "GIT~1", ".\u200cgit\ufeff"])
def test_the_rule_refuses(name: str) -> None:
    assert component_problem(name) is not None


@pytest.mark.parametrize("name", ["a.yaml", ".github", ".gitignore", ".gitkeep", "git", "x.git", "a b", "é.yaml", "a" * 255])
def test_the_rule_accepts(name: str) -> None:
    assert component_problem(name) is None


def test_paths_links_and_messages() -> None:
    assert path_problem("a/" * 2047 + "b") is None and path_problem("a/" * 2048 + "b") is not None
    assert symlink_problem("a/l.yaml", b"../b.yaml") is None  # inside: not read, not refused
    for target in (b"../../x", b"/etc/passwd", b"", b"a/../../.."):
        assert symlink_problem("a/l.yaml", target) is not None
    assert symlink_problem(".hidden/l.yaml", b"/etc") is None  # the walk never looks there
    assert shown("a\\..\\x\n\x1b[31m" + os.fsdecode(b"\xff")) == "a\\\\..\\\\x\\x0a\\x1b[31m\\xff"


# -- fuzz: hostile trees on every command that reads git ---------------------------------------

_NAMES: list[str | bytes] = [
    *EVIL,
    "ok.yaml",
    "b.yml",
    "sub",
    "render.meta",
    "notes.txt",
    ".hidden",
    "\x01odd.yaml",
    b"\xff\xfe.yaml",
    "a/b.yaml",
    "n" * 300 + ".yaml",
    "",
]
_TARGETS = [b"../../../etc/passwd", b"/etc", b"ok.yaml", b"sub/x.yaml", b"..", b""]


@st.composite
def _trees(draw: st.DrawFn, depth: int = 0) -> Tree:
    entries: list[tuple[str | bytes, Any]] = []
    for _ in range(draw(st.integers(0, 4 if depth < 3 else 1))):
        name = draw(st.sampled_from(_NAMES))
        kind = draw(st.sampled_from(["file", "file", "dir", "link", "gitlink", "big"] if depth < 3 else ["file", "link"]))
        if kind == "file":
            entries.append((name, configmap(f"cm-{depth}-{len(entries)}-{draw(st.integers(0, 10**6))}")))
        elif kind == "dir":
            entries.append((name, draw(_trees(depth + 1))))
        elif kind == "link":
            entries.append((name, Link(draw(st.sampled_from(_TARGETS)))))
        elif kind == "gitlink":
            entries.append((name, Gitlink()))
        else:
            entries.append((name, "big"))
    if depth == 0 and draw(st.booleans()):
        entries.append(("deep", draw(st.sampled_from(["deep-5", "deep-400"]))))
    return Tree(entries, sort=draw(st.booleans()) or depth > 0)


#: Every example runs git and a controller: shrinking a failure would take many minutes, and
#: the failing tree is printed as it is.
_NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]
_SLOW = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


class _World:
    """One bare repository, a good base commit and a controller work directory, shared by
    every example (each pushes a new head on top of the base)."""

    def __init__(self, root: Path) -> None:
        self.bare = Bare(root)
        self.base = self.bare.source({"a.yaml": configmap("a")})
        self.shared = {"big": Blob(_big_blob(self.bare, 3 * 1024 * 1024))}
        for levels in (5, 400):  # 400 x 11 bytes: a path beyond PATH_MAX
            deep = Tree([("leaf.yaml", configmap("leaf"))])
            for _ in range(levels):
                deep = Tree([("d" * 10, deep)])
            self.shared[f"deep-{levels}"] = Blob(craft(self.bare.dir, deep), b"40000")
        self.cfg = _config(self.bare)
        self.outside = root / "outside"
        self.outside.mkdir()
        assert _once(self.cfg).rendered == [self.base]


def _resolve(tree: Tree, shared: dict[str, Blob]) -> Tree:
    """``tree`` with the names of shared objects replaced by them."""
    return Tree(
        [(n, shared[v] if isinstance(v, str) else _resolve(v, shared) if isinstance(v, Tree) else v) for n, v in tree.entries],
        tree.sort,
    )


def _listing(root: Path) -> set[str]:
    """Every path below ``root`` but the controller's clone and the remote it pushes to."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if not {"work", "remote.git"} & set(p.relative_to(root).parts)}


def _controller(cfg: ControllerConfig, sha: str) -> tuple[bool, str]:
    """(refused?, what it said) of one controller iteration over the head ``sha``. A tree git
    itself will not send (an empty name: the remote's ``pack-objects`` refuses it) fails the
    fetch: an iteration error, never a crash, and the next push is fetched again."""
    try:
        result = _once(cfg)
    except GitError as exc:
        assert "fetch failed" in str(exc), exc
        return True, str(exc)
    assert not any("cannot render" in line for line in result.failed.get(sha, [])), result
    return sha in result.failed, _failed(result, sha)


@settings(max_examples=30, deadline=None, phases=_NO_SHRINK, suppress_health_check=_SLOW)
@given(tree=_trees())
def test_fuzz_hostile_trees_diff_plan_and_the_controller_agree(tmp_path_factory: pytest.TempPathFactory, tree: Tree) -> None:
    world = _fuzz_world(tmp_path_factory)
    before = _listing(world.bare.root)
    head = _push_src(world, _resolve(tree, world.shared))
    out = world.bare.root / "out"
    args = ["--repo", str(world.bare.dir), world.base, head, "--source-path", "src"]
    diff = _run(diff_command, [*args, "--output-file", str(out / "diff.md")])
    plan = _run(plan_command, args)
    failed, said = _controller(world.cfg, head)
    for got in (diff, plan):
        assert got.exit_code in (0, 1), got.output
        assert got.exception is None or isinstance(got.exception, SystemExit), repr(got.exception)
        assert "Traceback" not in got.output
    assert (diff.exit_code == 1) == (plan.exit_code == 1) == failed, (diff.output, plan.output, said)
    if "fetch failed" not in said:
        assert (REFUSED in diff.output) == (REFUSED in plan.output) == (REFUSED in said), (diff.output, said)
    after = _listing(world.bare.root) - before
    assert all(p == "out" or p.startswith("out/") for p in after), after
    assert list(world.outside.iterdir()) == []


_WORLDS: dict[str, _World] = {}


def _fuzz_world(factory: pytest.TempPathFactory) -> _World:
    if "fuzz" not in _WORLDS:
        _WORLDS["fuzz"] = _World(factory.mktemp("fuzz"))
    return _WORLDS["fuzz"]


def _push_src(world: _World, tree: Tree) -> str:
    root = Tree([("src", tree)])
    sha = commit(world.bare.dir, root, world.base)
    push(world.bare.dir, sha)
    return sha


@settings(max_examples=5, deadline=None, phases=_NO_SHRINK, suppress_health_check=_SLOW)
@given(tree=_trees())
def test_fuzz_hostile_trees_pr_check_run_agrees_with_diff(tmp_path_factory: pytest.TempPathFactory, tree: Tree) -> None:
    world = _fuzz_world(tmp_path_factory)
    head = _push_src(world, _resolve(tree, world.shared))
    args = ["--repo", str(world.bare.dir), world.base, head, "--source-path", "src"]
    diff = _run(diff_command, args)
    out = world.bare.root / "out" / "pr"
    run = _run(pr_check, ["run", "--repo", str(world.bare.dir), "--base", world.base, "--head", head, "--source-path", "src", "--out-dir", str(out)])
    assert run.exit_code in (0, 1), run.output
    assert run.exception is None or isinstance(run.exception, SystemExit), repr(run.exception)
    assert "Traceback" not in run.output
    status = json.loads((out / "status.json").read_text())
    if REFUSED in diff.output:
        assert run.exit_code == 1 and status["diff"] == "failed", (run.output, status)
    else:
        assert status["diff"] != "failed", (run.output, status)
