"""The Git controller against real repositories and bare remotes on local disk."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import git
import pytest

from grove_gitops.errors import GitError
from grove_gitops.gitops import trailers
from grove_gitops.gitops.controller import Controller, ControllerConfig
from grove_gitops.gitops.redact import redact
from grove_gitops.metrics import HealthServer, Registry
from grove_gitops.output.layout import build_tree
from grove_gitops.render import render_source
from tests.support import PROJECT, pcs_yaml, plain

AUTHOR = git.Actor("dev", "dev@example.com")


class Remote:
    """A bare remote plus a developer clone that pushes source commits."""

    def __init__(self, root: Path) -> None:
        self.bare = root / "remote.git"
        git.Repo.init(self.bare, bare=True, initial_branch="main")
        self.dev = git.Repo.clone_from(str(self.bare), root / "dev")
        self.root = root

    def push_source(self, files: dict[str, str], message: str, path: str = "src") -> str:
        base = Path(self.dev.working_tree_dir or "") / path
        for rel, text in files.items():
            target = base / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        self.dev.git.add("-A")
        commit = self.dev.index.commit(message, author=AUTHOR, committer=AUTHOR)
        self.dev.git.push("origin", "HEAD:refs/heads/main")
        return str(commit.hexsha)

    def branch_log(self, branch: str) -> list[git.Commit]:
        bare = git.Repo(self.bare)
        try:
            return list(bare.iter_commits(branch))
        except git.GitCommandError:
            return []

    def files_at(self, branch: str, path: str = "") -> dict[str, bytes]:
        bare = git.Repo(self.bare)
        tree = bare.commit(branch).tree
        if path:
            tree = tree / path
        out = {}
        for item in tree.traverse():
            if isinstance(item, git.Blob):
                rel = str(item.path)[len(path) + 1 :] if path else str(item.path)
                out[rel] = item.data_stream.read()
        return out


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path)


def config(remote: Remote, **kw: object) -> ControllerConfig:
    values: dict[str, object] = {
        "repo": str(remote.bare),
        "workdir": remote.root / "work" / "clone",
        "source_path": "src",
        "backoff_base": 0.01,
    }
    values.update(kw)
    return ControllerConfig(**values)  # type: ignore[arg-type]


def expected_files(remote: Remote, sha: str) -> dict[str, bytes]:
    export = remote.root / f"expected-{sha[:8]}"
    repo = git.Repo(remote.bare)
    for item in (repo.commit(sha).tree / "src").traverse():
        if isinstance(item, git.Blob):
            target = export / str(item.path)[len("src/") :]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(item.data_stream.read())
    return build_tree(render_source(export)).files


def test_valid_push_gives_exactly_one_rendered_commit(remote: Remote) -> None:
    sha = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "add alpha")
    with Controller(config(remote)) as ctl:
        first = ctl.run_once()
        assert first.rendered == [sha] and first.pushed
        log = remote.branch_log("rendered")
        assert len(log) == 1
        found = trailers.parse(str(log[0].message))
        assert found[trailers.DRY_SHA] == sha
        assert found[trailers.VERSION]
        assert found[trailers.ARGO_REFERENCE] == sha
        assert log[0].summary.startswith(f"Render {sha[:12]}: add alpha")
        assert remote.files_at("rendered") == expected_files(remote, sha)
        second = ctl.run_once()
        assert second.rendered == [] and not second.pushed
    assert len(remote.branch_log("rendered")) == 1
    # A new process (fresh work dir) agrees there is nothing to do.
    with Controller(config(remote, workdir=remote.root / "work2" / "clone")) as again:
        assert again.run_once().rendered == []
    assert len(remote.branch_log("rendered")) == 1


def test_every_new_source_commit_is_rendered_in_order(remote: Remote) -> None:
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    with Controller(config(remote)) as ctl:
        ctl.run_once()
        shas = [
            remote.push_source({"b.yaml": pcs_yaml("beta")}, "v2"),
            remote.push_source({"README.md": "docs only"}, "v3 docs"),
            remote.push_source({"c.yaml": pcs_yaml("gamma")}, "v4"),
        ]
        result = ctl.run_once()
    assert result.rendered == [shas[0], shas[2]]
    assert result.unchanged == [shas[1]]
    dry = [trailers.dry_sha(str(c.message)) for c in remote.branch_log("rendered")]
    assert dry[:2] == [shas[2], shas[0]]
    assert remote.files_at("rendered") == expected_files(remote, shas[2])


def test_concurrent_push_to_output_branch_is_survived(remote: Remote) -> None:
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    cfg = config(remote, output_path="clusters/prod")
    with Controller(cfg) as ctl:
        ctl.run_once()
    new_sha = remote.push_source({"b.yaml": pcs_yaml("beta")}, "v2")
    other = git.Repo.clone_from(str(remote.bare), remote.root / "other", branch="rendered")
    raced: list[str] = []

    def race() -> None:
        if raced:
            return
        (Path(other.working_tree_dir or "") / "NOTES.md").write_text("hand-written notes\n")
        other.git.add("-A")
        raced.append(str(other.index.commit("notes", author=AUTHOR, committer=AUTHOR).hexsha))
        other.git.push("origin", "HEAD:refs/heads/rendered")

    with Controller(cfg, before_push=race) as ctl:
        result = ctl.run_once()
    assert result.pushed and result.push_attempts == 2 and result.rendered == [new_sha]
    log = remote.branch_log("rendered")
    assert raced[0] in {c.hexsha for c in log}  # the other writer's commit is kept
    assert trailers.dry_sha(str(log[0].message)) == new_sha
    assert log[0].parents[0].hexsha == raced[0]
    assert remote.files_at("rendered")["NOTES.md"] == b"hand-written notes\n"
    assert remote.files_at("rendered", "clusters/prod") == expected_files(remote, new_sha)


def test_invalid_source_commit_never_reaches_output(remote: Remote) -> None:
    good = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "good")
    with Controller(config(remote)) as ctl:
        ctl.run_once()
        before = remote.files_at("rendered")
        bad = remote.push_source({"a.yaml": pcs_yaml("alpha").replace("replicas: 2", "replicas: -2")}, "bad")
        result = ctl.run_once()
        assert result.rendered == [] and bad in result.failed
        assert any(
            "src/a.yaml: spec.template.cliques[1].spec.replicas: Invalid value: -2: must be greater than 0" in line
            for line in map(plain, result.failed[bad])
        )
        assert remote.files_at("rendered") == before
        assert trailers.dry_sha(str(remote.branch_log("rendered")[0].message)) == good
        fixed = remote.push_source({"a.yaml": pcs_yaml("alpha").replace("replicas: 2", "replicas: 3")}, "fixed")
        result = ctl.run_once()
    assert result.rendered == [fixed]
    assert remote.files_at("rendered") == expected_files(remote, fixed)


def test_once_exits_1_on_invalid_source(remote: Remote) -> None:
    remote.push_source({"a.yaml": "kind: [\n"}, "broken")
    proc = _controller_process(remote, once=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "src/a.yaml:2:1: malformed YAML: " in err
    assert "Traceback" not in err
    assert remote.branch_log("rendered") == []


def test_once_keeps_failing_while_the_source_head_does_not_render(remote: Remote) -> None:
    """A cron job or CI step re-running ``--once`` on a head an earlier run examined must not
    report ``0 failed`` and exit 0 (issue 34.7): the head still does not render."""
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "good")
    good = _controller_process(remote, once=True)
    _, err = good.communicate(timeout=120)
    assert good.returncode == 0, err
    remote.push_source({"a.yaml": "kind: [\n"}, "broken")
    first = _controller_process(remote, once=True)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 1, err
    assert "done: 0 rendered, 0 unchanged, 1 failed" in err
    again = _controller_process(remote, once=True)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 1, err
    assert "done: 0 rendered, 0 unchanged, 0 failed" in err
    assert "does not render (examined by an earlier run" in err
    assert "Traceback" not in err
    # another process with a fresh work directory reads the same record on the remote
    assert _run_once_cli(remote, remote.root / "other" / "clone") == 1
    remote.push_source({"a.yaml": pcs_yaml("alpha").replace("replicas: 2", "replicas: 3")}, "fixed")
    fixed = _controller_process(remote, once=True)
    _, err = fixed.communicate(timeout=120)
    assert fixed.returncode == 0, err
    again = _controller_process(remote, once=True)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err


def _controller_process(remote: Remote, once: bool, pause: str = "") -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.pop("GROVE_GITOPS_TEST_PAUSE", None)
    if pause:
        env["GROVE_GITOPS_TEST_PAUSE"] = pause
    args = [
        sys.executable,
        "-m",
        "grove_gitops.cli",
        "controller",
        "--repo",
        str(remote.bare),
        "--source-path",
        "src",
        "--workdir",
        str(remote.root / "work" / "clone"),
    ]
    if once:
        args.append("--once")
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=PROJECT)


def _wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float = 60) -> None:
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if needle in line:
            return
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"{needle!r} never logged")


@pytest.mark.parametrize("point", ["after-render", "before-push"])
def test_sigkill_mid_iteration_then_restart_converges(remote: Remote, point: str) -> None:
    first = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    with Controller(config(remote)) as ctl:
        ctl.run_once()
    second = remote.push_source({"b.yaml": pcs_yaml("beta")}, "v2")
    third = remote.push_source({"c.yaml": pcs_yaml("gamma")}, "v3")
    proc = _controller_process(remote, once=True, pause=f"{point}:60")
    try:
        if point == "before-push":
            _wait_for_line(proc, "rendered source commit")
        else:
            time.sleep(4.0)  # fetched, rendered v2, now sleeping before it is written
        assert proc.poll() is None, "controller finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)
    log = remote.branch_log("rendered")
    assert [trailers.dry_sha(str(c.message)) for c in log] == [first]  # nothing partial reached the remote
    restarted = _controller_process(remote, once=True)
    _, err = restarted.communicate(timeout=120)
    assert restarted.returncode == 0, err
    dry = [trailers.dry_sha(str(c.message)) for c in remote.branch_log("rendered")]
    assert dry == [third, second, first]  # no source commit skipped
    assert remote.files_at("rendered") == expected_files(remote, third)


def test_folder_mode_ignores_its_own_commits(remote: Remote) -> None:
    sha = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    cfg = config(remote, output_branch="main", output_path="rendered")
    with Controller(cfg) as ctl:
        assert ctl.run_once().rendered == [sha]
        assert ctl.run_once().rendered == []
    log = remote.branch_log("main")
    assert len(log) == 2 and trailers.dry_sha(str(log[0].message)) == sha
    assert remote.files_at("main", "rendered") == expected_files(remote, sha)
    with pytest.raises(Exception, match="folder mode"):
        Controller(config(remote, output_branch="main", output_path=""))


def test_credentials_never_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = "https://bot:s3cr3t-token@127.0.0.1:1/org/repo.git"
    cfg = ControllerConfig(repo=url, workdir=tmp_path / "clone")
    ctl = Controller(cfg)
    with pytest.raises(GitError) as info:
        ctl.__enter__()
    assert "s3cr3t-token" not in str(info.value)
    assert "https://127.0.0.1:1/org/repo.git" in str(info.value)  # credentials stripped, not only masked
    assert redact("fatal: unable to access 'https://x:abc123@h/r'") == "fatal: unable to access 'https://***@h/r'"


def test_health_and_metrics_endpoints(remote: Remote) -> None:
    sha = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    registry = Registry()
    with Controller(config(remote), registry) as ctl:
        ctl.run_once()
        server = HealthServer(registry, "127.0.0.1", 0, lambda: ctl.healthy(30)).start()
        try:
            base = f"http://127.0.0.1:{server.port}"
            assert urllib.request.urlopen(f"{base}/healthz", timeout=5).read() == b"ok\n"
            metrics = urllib.request.urlopen(f"{base}/metrics", timeout=5).read().decode()
        finally:
            server.stop()
    assert f'grove_gitops_last_rendered_source{{sha="{sha}"}} 1' in metrics
    assert "grove_gitops_render_duration_seconds_count 1" in metrics
    assert "grove_gitops_push_duration_seconds_count 1" in metrics
    assert "# TYPE grove_gitops_rendered_commits_total counter" in metrics


def test_damaged_workdir_is_recloned(remote: Remote) -> None:
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    cfg = config(remote)
    with Controller(cfg) as ctl:
        ctl.run_once()
    (cfg.workdir / ".git" / "index.lock").write_text("")
    shutil.rmtree(cfg.workdir / ".git" / "objects")
    sha = remote.push_source({"b.yaml": pcs_yaml("beta")}, "v2")
    with Controller(cfg) as ctl:
        assert ctl.run_once().rendered == [sha]


# -- issue 9: hardening ----------------------------------------------------------------------


def _push_crafted_tree(remote: Remote, evil_name: str) -> str:
    """Push a commit whose ``src`` holds an entry ``evil_name`` (built with git plumbing).

    The entry is a tree holding ``clone/.git/config`` with a ``core.fsmonitor`` command: an
    export that turned ``..`` into a path would overwrite the controller's own clone config.
    """
    dev = remote.dev
    payload = "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch PWNED\n"
    blob = _hash_blob(dev, payload)
    git_dir = _mktree(dev, [f"100644 blob {blob}\tconfig"])
    clone = _mktree(dev, [f"040000 tree {git_dir}\t.git"])
    escape = _mktree(dev, [f"040000 tree {clone}\tclone"])
    good = _hash_blob(dev, pcs_yaml("alpha"))
    src = _mktree(dev, [f"100644 blob {good}\ta.yaml", f"040000 tree {escape}\t{evil_name}"])
    root = _mktree(dev, [f"040000 tree {src}\tsrc"])
    parent = dev.head.commit.hexsha if dev.head.is_valid() else None
    args = ["git", "commit-tree", root, "-m", "crafted"] + (["-p", parent] if parent else [])
    sha = str(
        dev.git.execute(
            args,
            env={
                "GIT_AUTHOR_NAME": "x",
                "GIT_AUTHOR_EMAIL": "x@x",
                "GIT_COMMITTER_NAME": "x",
                "GIT_COMMITTER_EMAIL": "x@x",
            },
        )
    )
    dev.git.push("origin", f"{sha}:refs/heads/main")
    return sha


def _push_on_top(remote: Remote, parent: str, files: dict[str, str], message: str) -> str:
    """A normal source commit on top of ``parent`` (git refuses to check a crafted tree out)."""
    dev = remote.dev
    for rel, text in files.items():
        (Path(dev.working_tree_dir or "") / "src" / rel).write_text(text)
    dev.git.add("-A")
    commit = dev.index.commit(message, parent_commits=[dev.commit(parent)], author=AUTHOR, committer=AUTHOR)
    dev.git.push("origin", f"{commit.hexsha}:refs/heads/main", "--force")
    return str(commit.hexsha)


def _hash_blob(repo: git.Repo, text: str) -> str:
    proc = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        input=text.encode(),
        cwd=repo.working_tree_dir,
        capture_output=True,
        check=True,
    )
    return proc.stdout.decode().strip()


def _mktree(repo: git.Repo, lines: list[str]) -> str:
    proc = subprocess.run(
        ["git", "mktree"],
        input="".join(f"{line}\n" for line in lines).encode(),
        cwd=repo.working_tree_dir,
        capture_output=True,
        check=True,
    )
    return proc.stdout.decode().strip()


@pytest.mark.parametrize("evil_name", ["..", ".", ".git", ".GiT", "a\\b"])
def test_crafted_tree_entry_never_escapes_the_export(remote: Remote, evil_name: str) -> None:
    first = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    cfg = config(remote)
    with Controller(cfg) as ctl:
        assert ctl.run_once().rendered == [first]
    before = (cfg.workdir / ".git" / "config").read_text()
    crafted = _push_crafted_tree(remote, evil_name)
    with Controller(cfg) as ctl:
        result = ctl.run_once()
        assert crafted in result.failed and "refusing the tree" in "\n".join(result.failed[crafted])
        assert result.rendered == []
        after_fix = _push_on_top(remote, crafted, {"b.yaml": pcs_yaml("beta")}, "v3")
        # The next good commit still renders: the crafted one was skipped like an invalid one.
        assert ctl.run_once().rendered == [after_fix]
    config_text = (cfg.workdir / ".git" / "config").read_text()
    assert "fsmonitor" not in config_text and "PWNED" not in config_text
    assert config_text.startswith(before.split("[remote")[0])
    assert not list(remote.root.rglob("PWNED"))
    assert not (cfg.workdir.parent / "clone" / ".git" / "config").read_text().count("PWNED")


def test_token_in_url_is_not_stored_in_the_clone(remote: Remote, tmp_path: Path) -> None:
    """A ``user:token@`` URL works, but ``.git/config`` only ever holds the bare URL."""
    from grove_gitops.gitops.repo import split_credentials

    assert split_credentials("https://bot:s3cr%40t@h.example/o/r.git") == ("https://h.example/o/r.git", "bot", "s3cr@t")
    assert split_credentials("git@h.example:o/r.git") == ("git@h.example:o/r.git", None, None)
    cfg = ControllerConfig(repo="https://bot:s3cr3t-token@127.0.0.1:1/org/repo.git", workdir=tmp_path / "w" / "clone")
    ctl = Controller(cfg)
    assert ctl.workspace.url == "https://127.0.0.1:1/org/repo.git"
    assert ctl.workspace._env["GROVE_GITOPS_ASKPASS_TOKEN"] == "s3cr3t-token"
    # A real clone through a URL with credentials (file:// ignores them, the path is what counts).
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    with Controller(config(remote)) as real:
        real.run_once()
    assert "s3cr3t" not in (remote.root / "work" / "clone" / ".git" / "config").read_text()
    # An HTTP remote: git asks GIT_ASKPASS for the password; the clone config never sees it.
    assert "s3cr3t-token" not in _http_clone_config(remote, tmp_path)


def _http_clone_config(remote: Remote, tmp_path: Path) -> str:
    """Serve the bare remote over dumb HTTP with basic auth; clone with a token in the URL."""
    import base64
    import functools
    import http.server
    import threading

    subprocess.run(["git", "update-server-info"], cwd=remote.bare, check=True)
    expected = "Basic " + base64.b64encode(b"bot:s3cr3t-token").decode()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="x"')
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(remote.bare)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://bot:s3cr3t-token@127.0.0.1:{server.server_address[1]}/"
        cfg = ControllerConfig(repo=url, workdir=tmp_path / "http" / "clone", source_path="src")
        with Controller(cfg) as ctl:
            ctl.workspace.fetch()
            assert ctl.workspace.remote_head("main") is not None
        return (cfg.workdir / ".git" / "config").read_text()
    finally:
        server.shutdown()
        server.server_close()


def _run_once_cli(remote: Remote, workdir: Path, **kw: str) -> int:
    from grove_gitops.gitops.service import run_controller

    args: dict[str, str] = {
        "source_branch": "main",
        "source_path": "src",
        "output_branch": "rendered",
        "output_path": "",
    }
    args.update(kw)
    return run_controller(
        repo=str(remote.bare),
        workdir=workdir,
        once=True,
        interval=1,
        metrics_address="",
        author="grove-gitops <grove-gitops@users.noreply.local>",
        **args,
    )


def test_workdir_with_user_files_is_refused_not_wiped(remote: Remote) -> None:
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    workdir = remote.root / "mine"
    workdir.mkdir()
    (workdir / "notes.txt").write_text("precious")
    assert _run_once_cli(remote, workdir) == 2
    assert (workdir / "notes.txt").read_text() == "precious"
    assert sorted(p.name for p in workdir.iterdir()) == ["notes.txt"]
    # A user's own git repository (no marker) is refused too, even of the same remote.
    own = remote.root / "dev"
    assert _run_once_cli(remote, own) == 2
    assert (own / "src" / "a.yaml").exists()
    # An empty directory is fine, and so is the controller's own directory on the next run.
    empty = remote.root / "empty"
    empty.mkdir()
    assert _run_once_cli(remote, empty) == 0
    assert _run_once_cli(remote, empty) == 0


def test_workdir_holding_another_remote_is_refused(remote: Remote, tmp_path: Path) -> None:
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    other = Remote(tmp_path / "other")
    other.push_source({"b.yaml": pcs_yaml("beta")}, "o1")
    cfg = config(other)
    with Controller(cfg) as ctl:
        ctl.run_once()
    assert _run_once_cli(remote, cfg.workdir) == 2
    assert git.Repo(cfg.workdir).remotes.origin.url == str(other.bare)  # left as it was


def test_folder_mode_without_output_path_is_a_usage_error(remote: Remote) -> None:
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    assert _run_once_cli(remote, remote.root / "w", output_branch="main") == 2


def test_poison_commit_is_skipped_and_counted(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected exception on one commit never stops the later ones from rendering."""
    import grove_gitops.gitops.controller as controller_module

    real = controller_module.render_source_tree

    def flaky(source: Path, *args: Any) -> object:
        if (source / "poison.yaml").exists():
            raise KeyError("boom")
        return real(source, *args)

    monkeypatch.setattr(controller_module, "render_source_tree", flaky)
    first = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    registry = Registry()
    with Controller(config(remote), registry) as ctl:
        assert ctl.run_once().rendered == [first]
        poison = remote.push_source({"poison.yaml": "x: 1\n"}, "poison")
        result = ctl.run_once()
        assert result.rendered == [] and "KeyError" in result.failed[poison][0]
        (Path(remote.dev.working_tree_dir or "") / "src" / "poison.yaml").unlink()
        fixed = remote.push_source({"b.yaml": pcs_yaml("beta")}, "revert poison")
        assert ctl.run_once().rendered == [fixed]
    assert "grove_gitops_render_crashes_total 1" in registry.render()


def test_unchanged_commits_are_examined_once(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> None:
    import grove_gitops.gitops.controller as controller_module

    first = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    with Controller(config(remote)) as ctl:
        assert ctl.run_once().rendered == [first]
    one = remote.push_source({"README.md": "docs only\n"}, "docs 1")
    two = remote.push_source({"README.md": "docs only, again\n"}, "docs 2")
    calls: list[Path] = []
    real = controller_module.render_source_tree

    def counting(source: Path, *args: Any) -> object:
        calls.append(source)
        return real(source, *args)

    monkeypatch.setattr(controller_module, "render_source_tree", counting)
    with Controller(config(remote)) as ctl:
        assert ctl.run_once().unchanged == [one, two]
    assert len(calls) == 2
    with Controller(config(remote, workdir=remote.root / "fresh" / "clone")) as ctl:  # a new pod, same remote
        result = ctl.run_once()
        assert result.unchanged == [] and result.rendered == [] and result.failed == {}
        assert ctl.run_once().unchanged == []
    assert len(calls) == 2


def test_output_affecting_flag_change_rerenders_head(remote: Remote) -> None:
    sha = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    with Controller(config(remote)) as ctl:
        assert ctl.run_once().rendered == [sha]
    with Controller(config(remote, output_path="deploy")) as ctl:
        assert ctl.run_once().rendered == [sha]
        assert ctl.run_once().rendered == []  # recorded: not again
    assert remote.files_at("rendered", "deploy") == expected_files(remote, sha)
    head = remote.branch_log("rendered")[0]
    assert trailers.parse(str(head.message))[trailers.CONFIG] == ctl.config_digest


def test_deleted_output_branch_is_recreated(remote: Remote) -> None:
    first = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    cfg = config(remote)
    with Controller(cfg) as ctl:
        assert ctl.run_once().rendered == [first]
    git.Repo(remote.bare).git.branch("-D", "rendered")
    second = remote.push_source({"b.yaml": pcs_yaml("beta")}, "v2")
    with Controller(cfg) as ctl:
        assert ctl.run_once().rendered == [second]
    assert remote.files_at("rendered") == expected_files(remote, second)
    git.Repo(remote.bare).git.branch("-D", "rendered")
    with Controller(cfg) as ctl:  # no new source commit: the branch is re-created all the same
        assert ctl.run_once().rendered == [second]
    assert remote.files_at("rendered") == expected_files(remote, second)


def test_loop_survives_an_unexpected_exception(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    sha = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    registry = Registry()
    stop = threading.Event()
    with Controller(config(remote), registry) as ctl:
        real = ctl.workspace.fetch
        calls: list[int] = []

        def fetch() -> None:
            calls.append(1)
            if len(calls) == 1:
                raise KeyError("unexpected")
            if len(calls) >= 2:
                stop.set()
            real()

        monkeypatch.setattr(ctl.workspace, "fetch", fetch)
        ctl.run_forever(0.01, stop)
    assert registry.get("grove_gitops_iteration_failures_total") == 1
    assert [c.hexsha for c in remote.branch_log("rendered")] != [] and trailers.dry_sha(
        str(remote.branch_log("rendered")[0].message)
    ) == sha


def test_workers_render_the_same_commit_and_keep_the_cache(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> None:
    """``controller --jobs 2``: the same rendered files, and an unchanged PodCliqueSet of the
    next commit comes from the cache (not re-sent to a worker)."""
    from grove_gitops.output import parallel

    monkeypatch.setattr(parallel, "MIN_PODS", 0)
    # Workers get PodCliqueSets two ways: the pool started while the plan is validated
    # (EarlyPool.offer; a cache hit is offered without its spec and never sent) or the output
    # stage's pool (render_shards). Count what reaches a worker either way, per commit.
    sent: list[str] = []
    real_shards, real_offer = parallel.render_shards, parallel.EarlyPool.offer

    def shards(plan: Any, items: list[Any], *a: Any) -> Any:
        sent.extend(item.file for item in items)
        return real_shards(plan, items, *a)

    def offer(self: Any, context: Any, item: Any) -> None:
        real_offer(self, context, item)
        if item.pcs is not None and self.started:
            sent.append(item.file)

    monkeypatch.setattr(parallel, "render_shards", shards)
    monkeypatch.setattr(parallel.EarlyPool, "offer", offer)
    sha = remote.push_source({"a.yaml": pcs_yaml("alpha"), "b.yaml": pcs_yaml("beta")}, "two")
    with Controller(config(remote, jobs=2)) as ctl:
        assert ctl.run_once().rendered == [sha]
        assert remote.files_at("rendered") == expected_files(remote, sha)
        assert sorted(Path(f).name for f in sent) == ["a.yaml", "b.yaml"]
        sent.clear()
        sha2 = remote.push_source({"c.yaml": pcs_yaml("gamma"), "d.yaml": pcs_yaml("delta")}, "two more")
        assert ctl.run_once().rendered == [sha2]
        assert remote.files_at("rendered") == expected_files(remote, sha2)
    assert sorted(Path(f).name for f in sent) == ["c.yaml", "d.yaml"]  # alpha and beta came from the cache
