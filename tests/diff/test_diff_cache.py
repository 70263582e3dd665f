"""``diff`` and ``plan`` reuse rendered PodCliqueSets (issue 14): between base and head in one
run, and across runs with ``--cache-dir``; the report is the same with and without."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.generate import generate
from grove_gitops.cli import main
from grove_gitops.render import RenderPlan


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("diffcache")
    base = generate(root / "base", 5)
    head = root / "head"
    shutil.copytree(base, head)
    first = sorted((head / "workloads").rglob("*.yaml"))[0]
    text = first.read_text()
    first.write_text(text.replace("replicas: 1\n", "replicas: 2\n", 1))
    assert first.read_text() != text
    # One PodCliqueSet switches to OnDelete: ``plan`` must know it from a cache hit too.
    last = sorted((head / "workloads").rglob("*.yaml"))[-1]
    last.write_text(last.read_text().replace("spec:\n", "spec:\n  updateStrategy: {type: OnDelete}\n", 1))
    return base, head


@pytest.fixture
def expansions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = RenderPlan.expand

    def spy(self: RenderPlan, item: object) -> object:
        seen.append(item.file)  # type: ignore[attr-defined]
        return real(self, item)  # type: ignore[arg-type]

    monkeypatch.setattr(RenderPlan, "expand", spy)
    return seen


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_podcliqueset_equal_on_both_sides_is_rendered_once(sides: tuple[Path, Path], expansions: list[str]) -> None:
    base, head = sides
    _run("diff", str(base), str(head), "--format", "text")
    assert len(expansions) == 5 + 2  # every base PodCliqueSet, and the two that changed


def test_the_report_is_the_same_with_a_cold_a_warm_and_no_cache(
    sides: tuple[Path, Path], tmp_path: Path, expansions: list[str]
) -> None:
    base, head = sides
    cache = ["--cache-dir", str(tmp_path / "c")]
    for command in (["diff", "--format", "text"], ["diff"], ["plan"], ["plan", "--output", "json"]):
        plain = _run(*command, str(base), str(head))
        expansions.clear()
        cold = _run(*command, str(base), str(head), *cache)
        assert len(expansions) <= 7
        expansions.clear()
        warm = _run(*command, str(base), str(head), *cache)
        assert expansions == []  # nothing rendered: every PodCliqueSet of both sides is cached
        assert plain == cold == warm
    assert "OnDelete" in _run("plan", str(base), str(head), *cache)


def test_a_warm_diff_parses_no_rendered_file_again(
    sides: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from grove_gitops.diff import model

    base, head = sides
    cache = ["--cache-dir", str(tmp_path / "c")]
    parsed: list[str] = []
    real = yaml.load_all
    monkeypatch.setattr(model.yaml, "load_all", lambda text, Loader: (parsed.append(text), real(text, Loader))[1])
    cold = _run("diff", str(base), str(head), *cache)
    cold_parses = len(parsed)
    parsed.clear()
    assert _run("diff", str(base), str(head), *cache) == cold
    # Only the objects no PodCliqueSet renders (bindings, topology objects) are parsed again.
    assert parsed and all("PodCliqueSet" not in text and "grove.io/podcliqueset" not in text for text in parsed)
    assert len(parsed) * 10 < cold_parses
    parsed.clear()
    # A damaged entry of parsed objects is a miss: that shard's files are parsed again.
    entry = sorted(p for p in (tmp_path / "c" / "objects").rglob("*") if p.is_file())[0]
    entry.write_bytes(entry.read_bytes()[:-5])
    assert _run("diff", str(base), str(head), *cache) == cold
    assert parsed


def test_cache_dir_inside_a_source_is_refused(sides: tuple[Path, Path]) -> None:
    base, head = sides
    for command in ("diff", "plan"):
        result = CliRunner().invoke(main, [command, str(base), str(head), "--cache-dir", str(head / ".cache")])
        assert result.exit_code == 2 and "--cache-dir" in result.output
    assert not (head / ".cache").exists()
