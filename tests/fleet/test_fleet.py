"""Fleet mode (issue 12): Cluster objects, OUT/<cluster>/, per-cluster validation, diff, cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from grove_gitops.cache import RenderCache
from grove_gitops.cli import main
from grove_gitops.diff.report import build_report
from grove_gitops.diff.sides import side_from_source
from grove_gitops.errors import InvalidInputError
from grove_gitops.fleet.plan import rewrite_image
from grove_gitops.output.writer import render_to
from grove_gitops.render import plan_source
from grove_gitops.sourcetree import render_source_tree
from tests.support import PROJECT

FLEET = PROJECT / "examples-fleet"
EXAMPLES = PROJECT / "examples"


def _copy(tmp_path: Path, src: Path = FLEET) -> Path:
    dest = tmp_path / "src"
    shutil.copytree(src, dest)
    return dest


def _read(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _load(data: bytes) -> dict[str, object]:
    loaded = yaml.safe_load(data)
    assert isinstance(loaded, dict)
    return loaded


def test_without_cluster_objects_the_output_is_todays_byte_for_byte(tmp_path: Path) -> None:
    """examples/ has no Cluster: the CLI writes exactly what the single-cluster pipeline writes."""
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["render", str(EXAMPLES), "--out", str(out)])
    assert result.exit_code == 0, result.output
    direct = tmp_path / "direct"
    render_to(plan_source(EXAMPLES), direct)
    assert _read(out) == _read(direct)
    assert not any(part in ("_flux", "_argocd") for rel in _read(out) for part in Path(rel).parts)
    assert "clusters" not in json.loads((out / "render.meta").read_text())
    assert result.stdout.startswith("rendered 1 PodCliqueSet(s) into ")


def test_two_clusters_render_complete_trees(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["render", str(FLEET), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "for 2 cluster(s) (prod-kai, staging-volcano)" in result.output
    meta = json.loads((out / "render.meta").read_text())
    assert meta["generator"] == "grove-gitops"
    assert meta["clusters"]["prod-kai"]["kubernetesVersion"] == "1.37"
    assert meta["clusters"]["staging-volcano"]["kubernetesVersion"] == "1.35"
    assert meta["clusters"]["prod-kai"]["podCliqueSets"] == ["inference/embedder", "inference/llama-disagg"]
    assert meta["clusters"]["staging-volcano"]["podCliqueSets"] == ["inference/embedder"]
    for cluster in ("prod-kai", "staging-volcano"):
        root = out / cluster
        assert (root / "kustomization.yaml").is_file() and (root / "README.md").is_file()
        assert json.loads((root / "render.meta").read_text())["generator"] == "grove-gitops"
    # KAI cluster: topology objects, KAI PodGroups in its queue, images from the mirror.
    kai = out / "prod-kai"
    assert (kai / "_cluster" / "10-topology.kai.scheduler--gpu-fabric.yaml").is_file()
    group = _load((kai / "inference/embedder/20-podgroup.scheduling.run.ai--embedder-0.yaml").read_bytes())
    assert group["spec"]["queue"] == "inference-prod"  # type: ignore[index]
    pods = sorted((kai / "inference/embedder").glob("30-pod--*.yaml"))
    assert len(pods) == 4  # replicas 2 x 2 pods
    for pod in pods:
        containers = _load(pod.read_bytes())["spec"]["containers"]  # type: ignore[index]
        assert containers[0]["image"] == "mirror.prod.example.com/ai/example/embedder:2.0.0"
    # Volcano cluster: its own queue, replicas override, unchanged images, no topology, the Queue object.
    vol = out / "staging-volcano"
    assert not list(vol.rglob("*topology*"))
    assert (vol / "_cluster" / "10-queue.scheduling.volcano.sh--staging.yaml").is_file()
    group = _load((vol / "inference/embedder/20-podgroup.scheduling.volcano.sh--embedder-0.yaml").read_bytes())
    assert group["spec"]["queue"] == "staging"  # type: ignore[index]
    assert not (vol / "inference/embedder/20-podgang.scheduler.grove.io--embedder-1.yaml").exists()
    pods = sorted((vol / "inference/embedder").glob("30-pod--*.yaml"))
    assert len(pods) == 2
    assert _load(pods[0].read_bytes())["spec"]["containers"][0]["image"] == "ghcr.io/example/embedder:2.0.0"  # type: ignore[index]
    assert not (vol / "inference" / "llama-disagg").exists()


def test_each_cluster_tree_is_what_a_single_cluster_source_renders(tmp_path: Path) -> None:
    """Without overrides a cluster's tree equals the render of a plain source with its files."""
    src = tmp_path / "fleet"
    (src / "kai").mkdir(parents=True)
    shutil.copy(FLEET / "config/kai/operator-configuration.yaml", src / "kai/op.yaml")
    shutil.copy(FLEET / "config/kai/render-configuration.yaml", src / "kai/render.yaml")
    shutil.copytree(FLEET / "topology", src / "topology")
    shutil.copytree(FLEET / "workloads", src / "workloads")
    plain = tmp_path / "plain"
    shutil.copytree(src, plain)
    for name in ("embedder.yaml", "llama-disagg.yaml"):  # the KAI queue the override would set
        path = plain / "workloads" / name
        path.write_text(path.read_text().replace("  labels:\n", "  labels:\n    kai.scheduler/queue: q\n", 1))
    (src / "cluster.yaml").write_text(
        "apiVersion: gitops.grove.io/v1alpha1\nkind: Cluster\nmetadata: {name: one}\n"
        "spec:\n  operatorConfiguration: {path: kai/op.yaml}\n  renderConfiguration: {path: kai/render.yaml}\n"
        "  clusterTopologyBindings: [{path: topology/gpu-fabric.yaml}]\n  overrides: {queue: q}\n"
    )
    fleet = render_source_tree(src).tree.files
    single = render_source_tree(plain).tree.files
    own = {k[len("one/") :]: v for k, v in fleet.items() if k.startswith("one/") and not k.startswith(("one/_flux/", "one/_argocd/"))}
    assert own == single


def test_a_workload_invalid_on_one_cluster_is_reported_for_that_cluster(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    path = src / "clusters/staging-volcano.yaml"
    text = path.read_text().replace("        - {key: topology, operator: DoesNotExist}\n", "")
    path.write_text(text.replace("    selector:\n      matchExpressions:\n", ""))
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert lines and all(line.endswith("[cluster staging-volcano]") for line in lines), lines
    assert any(line.startswith("error: workloads/llama-disagg.yaml: spec.template.topologyConstraint") for line in lines)
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        ("metadata: {name: Prod_KAI}", "c.yaml: metadata.name: Invalid value: 'Prod_KAI'"),
        ("metadata: {name: ../x}", "c.yaml: metadata.name: Invalid value: '../x'"),
        ("metadata: {}", "c.yaml: metadata.name: Required value"),
        ('metadata: {name: "a\\0b"}', "c.yaml: metadata.name: Invalid value"),
        ("metadata: {name: [a]}", "c.yaml: metadata.name:"),
        (
            'metadata: {name: a}\nspec: {renderConfiguration: {path: "x\\0.yaml"}}',
            "c.yaml: spec.renderConfiguration.path: Invalid value",
        ),
        ("metadata: {name: a}\nspec: {workloads: {paths: /etc}}", "c.yaml: spec.workloads.paths:"),
        ("metadata: {name: a}\nspec: {overrides: {queue: [q]}}", "c.yaml: spec.overrides.queue:"),
        ("metadata: {name: a}\nspec: {workload: {}}", "c.yaml: spec.workload: field not declared in schema"),
        (
            "metadata: {name: a}\nspec: {operatorConfiguration: {path: ../../etc/passwd}}",
            "c.yaml: spec.operatorConfiguration.path: Invalid value: '../../etc/passwd': must stay inside the source tree",
        ),
        (
            "metadata: {name: a}\nspec: {renderConfiguration: {path: /etc/x.yaml}}",
            "c.yaml: spec.renderConfiguration.path: Invalid value: '/etc/x.yaml': must be a relative path",
        ),
        (
            "metadata: {name: a}\nspec: {renderConfiguration: {name: x, path: y.yaml}}",
            "c.yaml: spec.renderConfiguration: Invalid value",
        ),
        (
            "metadata: {name: a}\nspec: {operatorConfiguration: {name: nope}}",
            "c.yaml: spec.operatorConfiguration.name: Not found: no OperatorConfiguration with name 'nope' in the "
            "source tree [cluster a]",
        ),
        (
            "metadata: {name: a}\nspec: {overrides: {replicas: {inference/nope: 1}}}",
            "c.yaml: spec.overrides.replicas[inference/nope]: Not found",
        ),
        (
            "metadata: {name: a}\nspec: {overrides: {defaultSchedulerProfile: volcano}}",
            "c.yaml: spec.overrides.defaultSchedulerProfile: Unsupported value: 'volcano'",
        ),
        ("metadata: {name: a}\nspec: {workloads: {paths: ['a/../../b']}}", "c.yaml: spec.workloads.paths[0]: Invalid value"),
        ("metadata: {name: a}\nspec: {gitops: {argocd: {project: 'Admin Project'}}}", "c.yaml: spec.gitops.argocd.project: Invalid"),
        ("metadata: {name: a}\nspec: {gitops: {flux: {interval: soon}}}", "c.yaml: spec.gitops.flux.interval: Invalid value: 'soon'"),
        ("metadata: {name: a}\nspec: {gitops: {path: ../up}}", "c.yaml: spec.gitops.path: Invalid value: '../up'"),
        ("metadata: {name: a}\nspec: {gitops: {flux: {sourceRef: {name: Bad_Name}}}}", "c.yaml: spec.gitops.flux.sourceRef.name"),
    ],
)
def test_cluster_objects_are_validated_strictly(tmp_path: Path, cluster: str, expected: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "c.yaml").write_text(f"apiVersion: gitops.grove.io/v1alpha1\nkind: Cluster\n{cluster}\n")
    shutil.copytree(FLEET / "workloads", src / "workloads")
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 1, result.output
    assert any(line.startswith(f"error: {expected}") for line in result.output.splitlines()), result.output
    assert "Traceback" not in result.output


def test_duplicate_cluster_names_are_an_error(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    shutil.copy(src / "clusters/prod-kai.yaml", src / "clusters/again.yaml")
    with pytest.raises(InvalidInputError) as err:
        render_source_tree(src)
    assert 'clusters/prod-kai.yaml: metadata.name: duplicate Cluster "prod-kai" (also in clusters/again.yaml)' in str(err.value)


def test_second_configurations_are_an_error_only_without_clusters(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    shutil.rmtree(src / "clusters")
    with pytest.raises(InvalidInputError) as err:
        render_source_tree(src)
    assert "a second OperatorConfiguration" in str(err.value)


def test_unselected_workloads_and_unused_configurations_are_warned_about(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    (src / "config/spare.yaml").write_text("apiVersion: gitops.grove.io/v1alpha1\nkind: RenderConfiguration\nmetadata: {name: spare}\n")
    path = src / "clusters/prod-kai.yaml"
    path.write_text(path.read_text().replace("    paths: [workloads/]\n", "    paths: [workloads/]\n    selector: {matchLabels: {app: embedder}}\n"))
    warnings = render_source_tree(src).tree.warnings
    assert "config/spare.yaml: RenderConfiguration is used by no Cluster; ignored" in warnings
    assert "workloads/llama-disagg.yaml: PodCliqueSet llama-disagg is selected by no Cluster; not rendered" in warnings


def test_json_output_counts_per_cluster() -> None:
    result = CliRunner().invoke(main, ["validate", str(FLEET), "--output", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["ok"] and doc["clusters"]["staging-volcano"]["podCliqueSets"] == 1


def test_diff_groups_changes_per_cluster(tmp_path: Path) -> None:
    head = _copy(tmp_path)
    path = head / "workloads/embedder.yaml"
    path.write_text(path.read_text().replace("embedder:2.0.0", "embedder:2.1.0"))
    report = build_report(side_from_source(FLEET, "base", "base"), side_from_source(head, "head", "head"))
    shards = [s.shard for s in report.shards]
    assert "prod-kai/inference/embedder" in shards and "staging-volcano/inference/embedder" in shards
    clusters = [s.split("/")[0] for s in shards]
    assert clusters == sorted(clusters)  # every cluster's shards together


def test_changing_one_clusters_configuration_re_renders_only_that_cluster(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    cache = RenderCache()
    cache.start()
    render_source_tree(src, cache=cache)
    cache.finish()
    assert cache.misses == 3  # 2 PodCliqueSets on prod-kai, 1 on staging-volcano
    cache.start()
    render_source_tree(src, cache=cache)
    cache.finish()
    assert (cache.hits, cache.misses) == (3, 0)
    op = src / "config/volcano/operator-configuration.yaml"
    op.write_text(op.read_text() + "logLevel: debug\n")
    cache.start()
    render_source_tree(src, cache=cache)
    cache.finish()
    assert (cache.hits, cache.misses) == (2, 1)  # only staging-volcano's embedder


def test_rewrite_image() -> None:
    assert rewrite_image("nvcr.io/nvidia/x:1", "m.example/ai") == "m.example/ai/nvidia/x:1"
    assert rewrite_image("vllm/vllm:1", "m.example") == "m.example/vllm/vllm:1"
    assert rewrite_image("nginx", "m.example") == "m.example/nginx"
    assert rewrite_image("localhost:5000/a@sha256:ab", "m.example") == "m.example/a@sha256:ab"


def test_output_of_a_fleet_is_replaced_and_never_read_back(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    out = src / "rendered"
    for _ in range(2):  # the second render must neither read the first nor refuse to replace it
        result = CliRunner().invoke(main, ["render", str(src), "--out", str(out)])
        assert result.exit_code == 0, result.output


def test_diff_cli_lists_changes_per_cluster(tmp_path: Path) -> None:
    head = _copy(tmp_path)
    path = head / "clusters/staging-volcano.yaml"
    path.write_text(path.read_text().replace("inference/embedder: 1", "inference/embedder: 2"))
    result = CliRunner().invoke(main, ["diff", str(FLEET), str(head), "--output", "text"])
    assert result.exit_code == 0, result.stderr
    assert "  cluster prod-kai: 0 shard(s) changed" in result.stderr
    assert "  cluster staging-volcano: 2 shard(s) changed" in result.stderr  # the shard and its _flux wiring
    as_json = CliRunner().invoke(main, ["diff", str(FLEET), str(head), "--output", "json"])
    doc = json.loads(as_json.stdout)
    assert doc["clusters"] == {
        "prod-kai": [],
        "staging-volcano": ["staging-volcano/_flux", "staging-volcano/inference/embedder"],
    }


def test_plan_of_a_fleet_is_per_cluster(tmp_path: Path) -> None:
    """The same PodCliqueSet on two clusters has the same pod hostnames: planned per cluster."""
    head = _copy(tmp_path)
    path = head / "workloads/embedder.yaml"
    path.write_text(path.read_text().replace("embedder:2.0.0", "embedder:2.1.0"))
    result = CliRunner().invoke(main, ["plan", str(FLEET), str(head)])
    assert result.exit_code == 0, result.stderr
    assert "prod-kai/inference/embedder: RollingRecreate; 4 pods replaced in 4 steps" in result.stdout
    assert "staging-volcano/inference/embedder: RollingRecreate; 2 pods replaced in 2 steps" in result.stdout


def test_watch_renders_a_fleet(tmp_path: Path) -> None:
    from grove_gitops.gitops.watch import render_once

    lines: list[str] = []
    out = tmp_path / "out"
    assert render_once(FLEET, out, lines.append, RenderCache())
    assert (out / "prod-kai" / "kustomization.yaml").is_file() and (out / "staging-volcano" / "_flux").is_dir()
    assert lines[-1].startswith("rendered 3 PodCliqueSet(s)")


def test_default_profile_and_queue_overrides_reach_the_gang_objects(tmp_path: Path) -> None:
    """One OperatorConfiguration with two profiles: the Cluster picks the one an empty
    schedulerName resolves to, and the queue replaces clique-level queue keys too."""
    src = tmp_path / "src"
    (src / "workloads").mkdir(parents=True)
    (src / "op.yaml").write_text(
        "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
        "scheduler:\n  defaultProfileName: kai-scheduler\n  profiles: [{name: kai-scheduler}, {name: volcano}]\n"
    )
    text = (FLEET / "workloads/embedder.yaml").read_text()
    text = text.replace("    cliques:\n      - name: embed\n", "    cliques:\n      - name: embed\n        annotations: {scheduling.grove.io/volcano-queue: old}\n")
    (src / "workloads/embedder.yaml").write_text(text)
    (src / "c.yaml").write_text(
        "apiVersion: gitops.grove.io/v1alpha1\nkind: Cluster\nmetadata: {name: v}\n"
        "spec:\n  operatorConfiguration: {path: op.yaml}\n"
        "  overrides: {defaultSchedulerProfile: volcano, queue: fast}\n"
    )
    files = render_source_tree(src).tree.files
    group = _load(files["v/inference/embedder/20-podgroup.scheduling.volcano.sh--embedder-0.yaml"])
    assert group["spec"]["queue"] == "fast"  # type: ignore[index]
    pod = next(v for k, v in files.items() if k.startswith("v/inference/embedder/30-pod--"))
    assert _load(pod)["spec"]["schedulerName"] == "volcano"  # type: ignore[index]
    assert not any("run.ai" in k for k in files)
    assert not any(b"volcano-queue: old" in v for v in files.values())  # the clique's own key is replaced
