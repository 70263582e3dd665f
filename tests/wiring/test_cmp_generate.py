"""End to end: the Config Management Plugin's ``generate`` command, run the way Argo CD's
``argocd-cmp-server`` runs it (in the Application's source directory, ``ARGOCD_ENV_*`` variables),
prints every rendered object exactly once as a YAML stream and nothing else."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from .helpers import ARGOCD, kubectl, load_one, render_cli, rendered_objects, venv_bin


def generate_command() -> list[str]:
    plugin = yaml.safe_load(load_one(ARGOCD / "cmp-plugin.yaml")["data"]["plugin.yaml"])
    generate = plugin["spec"]["generate"]
    return [*generate["command"], *generate.get("args", [])]


def run_generate(source: Path, tmpdir: Path, shard: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{venv_bin()}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmpdir),
        "TMPDIR": str(tmpdir),
        "ARGOCD_APP_NAME": "grove-workloads",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_SOURCE_PATH": ".",
    }
    if shard is not None:
        env["ARGOCD_ENV_GROVE_SHARD"] = shard
    return subprocess.run(
        generate_command(), cwd=source, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def identity(doc: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = doc["metadata"]
    return (doc["apiVersion"], doc["kind"], meta.get("namespace", ""), meta["name"])


def stream(stdout: str) -> list[dict[str, Any]]:
    docs = list(yaml.safe_load_all(stdout))
    assert all(isinstance(d, dict) for d in docs), "the stream holds only objects (no empty documents)"
    return docs


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    path = tmp_path / "tmp"
    path.mkdir()
    return path


def test_generate_prints_every_rendered_object_exactly_once(
    examples_copy: Path, scratch: Path, tmp_path: Path
) -> None:
    proc = run_generate(examples_copy, scratch)
    assert proc.returncode == 0, proc.stderr
    docs = stream(proc.stdout)

    expected_dir = tmp_path / "expected"
    render_cli(examples_copy, expected_dir)
    expected = rendered_objects(expected_dir)

    counts = Counter(identity(d) for d in docs)
    assert [k for k, n in counts.items() if n > 1] == [], "an object is printed twice"
    assert set(counts) == {identity(o) for o in expected.values()}
    assert len(docs) == len(expected)
    # Same objects, byte for byte after parsing: nothing dropped, reordered inside, or added.
    by_identity = {identity(o): o for o in expected.values()}
    for doc in docs:
        assert doc == by_identity[identity(doc)]
    # Only objects: no README, render.meta or kustomization.yaml content.
    assert not any(d.get("kind") == "Kustomization" for d in docs)
    assert "Rendered by grove-gitops" not in proc.stdout
    # The render's warnings reach Argo CD through stderr, never stdout.
    assert "warning:" not in proc.stdout
    # The temporary output is cleaned up.
    assert list(scratch.iterdir()) == []


def test_generate_order_is_kustomization_order(examples_copy: Path, scratch: Path, tmp_path: Path) -> None:
    """The stream's order is what `kubectl kustomize` of the rendered tree gives (waves first)."""
    proc = run_generate(examples_copy, scratch)
    assert proc.returncode == 0, proc.stderr
    rendered = tmp_path / "rendered"
    render_cli(examples_copy, rendered)
    built = subprocess.run(
        [kubectl(), "kustomize", str(rendered)], capture_output=True, text=True, timeout=120, check=False
    )
    assert built.returncode == 0, built.stderr
    kustomized = [identity(d) for d in yaml.safe_load_all(built.stdout) if d is not None]
    assert [identity(d) for d in stream(proc.stdout)] == kustomized


def test_generate_one_shard(examples_copy: Path, scratch: Path, tmp_path: Path) -> None:
    expected_dir = tmp_path / "expected"
    render_cli(examples_copy, expected_dir)
    expected = rendered_objects(expected_dir)
    for shard in ("_cluster", "inference/llama-disagg", "inference", "/inference/llama-disagg/"):
        proc = run_generate(examples_copy, scratch, shard)
        assert proc.returncode == 0, proc.stderr
        prefix = shard.strip("/") + "/"
        wanted = {identity(o) for rel, o in expected.items() if rel.startswith(prefix)}
        got = [identity(d) for d in stream(proc.stdout)]
        assert wanted and sorted(got) == sorted(wanted), shard


def test_generate_rejects_an_unknown_shard(examples_copy: Path, scratch: Path) -> None:
    for shard in ("inference/nope", "../etc", "inference/llama-disagg/10-secret"):
        proc = run_generate(examples_copy, scratch, shard)
        assert proc.returncode != 0, shard
        assert proc.stdout == ""
        assert "is not a rendered directory" in proc.stderr


def test_generate_fails_on_invalid_source_and_prints_nothing(examples_copy: Path, scratch: Path) -> None:
    (examples_copy / "workloads" / "broken.yaml").write_text(
        "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata:\n  name: broken\n"
        "  namespace: inference\nspec:\n  replicas: 1\n  template:\n    cliques: []\n"
    )
    proc = run_generate(examples_copy, scratch)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "broken.yaml" in proc.stderr
    assert list(scratch.iterdir()) == []
