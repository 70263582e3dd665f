"""The rendered README of an autoscaled workload (issue 34.6): its base PodGang is the
agent's, so Git's objects alone gave an empty Gangs table and no diagram. The README shows the
workload at its floor, the agent's gangs marked, and how far each unit scales."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from grove_gitops.cli import main
from tests.support import sample_text, write_source


def _render(tmp_path: Path, files: dict[str, str]) -> Path:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["render", str(write_source(tmp_path / "src", files)), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    return out


def test_an_autoscaled_clique_shows_its_gangs_at_the_floor_and_the_way_to_the_maximum(tmp_path: Path) -> None:
    out = _render(tmp_path, {"s.yaml": sample_text("simple/simple1.yaml")})
    readme = (out / "default" / "simple1" / "README.md").read_text()
    assert not list((out / "default" / "simple1").glob("*podgang*"))  # the base gang is the agent's
    assert "| `simple1-0` | default-scheduler | `simple1-0-pca` (3)" in readme
    assert "cluster (the agent makes it) |" in readme
    assert "```mermaid" in readme and "PodGang simple1-0<br/>base gang" in readme
    # pca: 3 → 5 pods of 1; sga (4 pods a replica, minAvailable 1): 1 → 6, a scaled gang per replica above 1
    assert "| `pca` | PodClique | 3 | 5 | 1 | 0 (its pods are in the base gang, which grows) |" in readme
    assert "| `sga` | PodCliqueScalingGroup | 1 | 6 | 4 | 0 → 5 |" in readme
    assert "At the floor the workload has 9 pods in 1 PodGang(s); at every maximum, 31 pods in 6 PodGang(s)." in readme


def test_a_large_maximum_is_described_not_expanded(tmp_path: Path) -> None:
    """The maximum is arithmetic (4,000 replicas of 4 pods, under the pod limit): the README
    counts them, the render never expands them."""
    text = sample_text("simple/simple1.yaml").replace("maxReplicas: 6", "maxReplicas: 4000")
    assert "maxReplicas: 4000" in text
    out = _render(tmp_path, {"s.yaml": text})
    readme = (out / "default" / "simple1" / "README.md").read_text()
    assert "| `sga` | PodCliqueScalingGroup | 1 | 4000 | 4 | 0 → 3999 |" in readme
    assert "at every maximum, 16007 pods in 4000 PodGang(s)" in readme
    assert sum(1 for p in out.rglob("*-pod--*.yaml")) == 9  # Git holds the floor's pods only


def test_a_workload_that_does_not_scale_keeps_its_plain_gangs_table(tmp_path: Path) -> None:
    from tests.support import pcs_yaml

    out = _render(tmp_path, {"a.yaml": pcs_yaml("alpha"), "ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n"})
    [readme] = [p.read_text() for p in out.rglob("alpha/README.md")]
    assert "## Gangs\n" in readme and "Autoscaling" not in readme and "agent makes it" not in readme


def test_the_root_readme_says_what_the_gitops_flavour_means(tmp_path: Path) -> None:
    out = _render(tmp_path, {"s.yaml": sample_text("simple/simple1.yaml")})
    root = (out / "README.md").read_text()
    assert "(both)" not in root
    assert "with the apply-order annotations of both Argo CD and Flux (RenderConfiguration `gitops: both`)" in root


def test_every_render_path_writes_the_same_autoscaled_readme(tmp_path: Path) -> None:
    """The streaming render hands the README its floor objects; the in-memory one expands
    them again: the same README either way."""
    from grove_gitops.output.layout import build_tree, build_tree_from_plan
    from grove_gitops.render import plan_source, render_source

    src = write_source(tmp_path / "src", {"s.yaml": sample_text("simple/simple1.yaml")})
    streamed = build_tree_from_plan(plan_source(src)).files["default/simple1/README.md"]
    assert b"## Autoscaling" in streamed
    assert build_tree(render_source(src)).files["default/simple1/README.md"] == streamed
