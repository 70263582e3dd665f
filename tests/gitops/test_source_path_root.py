"""``--source-path``: ``.``, ``./`` and the empty path all mean the repository root, for every
command that takes one (issue 34.15): ``controller``, ``diff --repo``, ``plan --repo`` and
``pr-check run``. Real repositories on local disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.gitops.controller import Controller, ControllerConfig, ControllerUsageError
from grove_gitops.prcheck.compose import Options, compose
from tests.gitops.test_controller import Remote
from tests.support import pcs_yaml

ROOTS = [".", "./", "", " ./ "]


@pytest.mark.parametrize("spelling", ROOTS)
def test_the_controller_renders_the_root(tmp_path: Path, spelling: str) -> None:
    remote = Remote(tmp_path)
    sha = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "at the root", path="")
    cfg = ControllerConfig(repo=str(remote.bare), workdir=tmp_path / "work", source_path=spelling)
    with Controller(cfg) as ctl:
        result = ctl.run_once()
    assert result.failed == {} and result.rendered == [sha]
    assert any(name.endswith(".yaml") for name in remote.files_at("rendered"))


def test_the_root_spellings_share_one_render_configuration(tmp_path: Path) -> None:
    """``.`` and ``""`` are the same source: switching between them re-renders nothing."""
    remote = Remote(tmp_path)
    digests = {
        Controller(ControllerConfig(repo=str(remote.bare), workdir=tmp_path / f"w{i}", source_path=s)).config_digest
        for i, s in enumerate(ROOTS)
    }
    assert len(digests) == 1


@pytest.mark.parametrize("bad", ["/etc", "../up", "a/../../b"])
def test_a_path_outside_the_repository_is_a_usage_error(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ControllerUsageError, match="inside the repository"):
        Controller(ControllerConfig(repo=str(tmp_path / "r.git"), workdir=tmp_path / "w", source_path=bad))


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    remote = Remote(tmp_path)
    base = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1", path="")
    head = remote.push_source({"a.yaml": pcs_yaml("alpha").replace("replicas: 2", "replicas: 3")}, "v2", path="")
    return Path(remote.dev.working_tree_dir or ""), base, head


@pytest.mark.parametrize("spelling", ROOTS)
@pytest.mark.parametrize("command", ["diff", "plan"])
def test_diff_and_plan_read_the_root(tmp_path: Path, spelling: str, command: str) -> None:
    repo, base, head = _repo(tmp_path)
    args = [command, "--repo", str(repo), base, head, "--source-path", spelling, "--output", "json"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "alpha" in result.stdout


@pytest.mark.parametrize("spelling", ROOTS)
def test_feasibility_reads_the_root(tmp_path: Path, spelling: str) -> None:
    repo, _, head = _repo(tmp_path)
    args = ["feasibility", "--repo", str(repo), head, "--source-path", spelling, "--output", "json"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    # the tree at the root was read: its PodCliqueSet's namespace warning is in the document
    assert any(p["file"] == "a.yaml" and p["line"] == 5 for p in json.loads(result.stdout)["problems"]), result.stdout


@pytest.mark.parametrize("spelling", ROOTS)
def test_pr_check_reads_the_root(tmp_path: Path, spelling: str) -> None:
    repo, base, head = _repo(tmp_path)
    result = compose(Options(repo, base, head, spelling))
    assert result.status.diff == "ok" and result.status.errors == 0
    assert "alpha" in result.parts[0]


def test_help_says_what_the_root_is() -> None:
    for command in (["controller"], ["diff"], ["plan"], ["feasibility"], ["pr-check", "run"]):
        out = " ".join(CliRunner().invoke(main, [*command, "--help"]).output.split())
        assert "'.', './' and '' are the repository root" in out, command
        assert "default: root)" not in out
