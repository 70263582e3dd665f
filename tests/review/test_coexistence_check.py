"""Issue 33.2: a Grove operator beside us is checked, not only documented. With
``coexistWithGroveOperator: true`` (or ``mode: review``) whatever Grove's operator would fight
over is an error naming the file and field, with the fix; off by default (the examples)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from tests.deploy.test_coexistence import EXTERNAL_KAI
from tests.support import PROJECT

BINDING = "topology/gpu-fabric.yaml"


def _examples(tmp_path: Path, *extra_config: str) -> Path:
    src = tmp_path / "src"
    shutil.copytree(PROJECT / "examples", src)
    config = src / "config" / "render-configuration.yaml"
    config.write_text(config.read_text() + "".join(f"{line}\n" for line in extra_config))
    return src


def _validate(src: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", str(src)])
    return result.exit_code, result.output


def test_the_examples_auto_managed_kai_topology_is_an_error_beside_grove(tmp_path: Path) -> None:
    code, out = _validate(_examples(tmp_path, "coexistWithGroveOperator: true"))
    assert code == 1, out
    assert f"{BINDING}:6:1: spec.schedulerTopologyBindings: Required value: a Grove operator runs beside" in out
    assert 'the KAI Topology "gpu-fabric" rendered into _cluster/ (auto-managed) has no ownerReference' in out
    assert "exits with code 3 at start-up" in out
    assert "Fix: make KAI's Topology external: add schedulerTopologyBindings" in out
    assert "docs/migration.md" in out and "nothing was written" in out


def test_the_examples_are_valid_by_default(tmp_path: Path) -> None:
    """Without the setting the examples render (full GitOps, no Grove operator beside)."""
    code, out = _validate(_examples(tmp_path))
    assert code == 0, out


def test_the_documented_fix_passes_the_check(tmp_path: Path) -> None:
    src = _examples(tmp_path, "coexistWithGroveOperator: true")
    binding = src / BINDING
    binding.write_text(binding.read_text() + EXTERNAL_KAI)
    code, out = _validate(src)
    assert code == 0, out


def test_review_mode_applies_no_rendered_topology_so_groves_own_is_fine(tmp_path: Path) -> None:
    """In review mode the cluster gets the binding, and Grove's operator makes the KAI
    Topology itself (with its ownerReference): nothing of ours to fight over."""
    code, out = _validate(_examples(tmp_path, "mode: review"))
    assert code == 0, out


def test_review_mode_refuses_a_passed_through_topology_grove_would_own(tmp_path: Path) -> None:
    src = _examples(tmp_path, "mode: review")
    (src / "topology" / "kai.yaml").write_text(
        "apiVersion: kai.scheduler/v1alpha1\nkind: Topology\nmetadata:\n  name: gpu-fabric\n"
        "spec:\n  levels:\n    - nodeLabel: kubernetes.io/hostname\n"
    )
    code, out = _validate(src)
    assert code == 1, out
    assert 'the KAI Topology "gpu-fabric" passed through from topology/kai.yaml has no ownerReference' in out


@pytest.mark.parametrize(
    ("metadata", "field", "words"),
    [
        ("  labels:\n    app.kubernetes.io/managed-by: grove-operator\n", "metadata.labels[app.kubernetes.io/managed-by]",
         "takes ConfigMap extra for its own"),
        ("  ownerReferences:\n    - {apiVersion: grove.io/v1alpha1, kind: PodCliqueSet, name: x, uid: u}\n",
         "metadata.ownerReferences", "names a grove.io owner"),
    ],
)
def test_a_passed_through_object_matching_groves_predicates_is_an_error(
    tmp_path: Path, metadata: str, field: str, words: str
) -> None:
    src = _examples(tmp_path, "coexistWithGroveOperator: true")
    binding = src / BINDING
    binding.write_text(binding.read_text() + EXTERNAL_KAI)
    (src / "extra.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: inference\n{metadata}data: {{}}\n"
    )
    code, out = _validate(src)
    assert code == 1, out
    assert "extra.yaml:" in out and f": {field}: Invalid value" in out and words in out
    code, out = _validate(_without(src, "coexistWithGroveOperator: true"))
    assert code == 0, out  # only beside Grove's operator


def _without(src: Path, line: str) -> Path:
    config = src / "config" / "render-configuration.yaml"
    config.write_text(config.read_text().replace(f"{line}\n", ""))
    return src

