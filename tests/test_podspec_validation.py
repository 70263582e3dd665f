"""A clique's podSpec is checked against the target Kubernetes version's Pod schema and quantity rules.

Before, each of these rendered with exit 0 and only failed at apply time (or, for a negative GPU
limit, was silently dropped).  Errors name the user's source path, not the rendered pod.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.errors import InvalidInputError
from grove_gitops.fields.quantity import parse_quantity
from grove_gitops.validation import podspec
from grove_gitops.validation.podspec import pod_spec_errors, resource_errors
from tests.backends.test_koordinator import pcs_doc
from tests.backends.test_koordinator import problems as koord_problems
from tests.support import SMALL_PCS as BASE
from tests.support import plain, render_files

W = "spec.template.cliques[1].spec.podSpec"


def _worker(mutate: Callable[[dict[str, Any]], None]) -> str:
    doc = copy.deepcopy(BASE)
    mutate(doc["spec"]["template"]["cliques"][1]["spec"]["podSpec"])
    return yaml.safe_dump(doc, sort_keys=False)


def _container(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda pod: pod["containers"][0].update(fields)


TYPOS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("resource-for-resources", _container(resource={"limits": {"cpu": "1"}}), f"{W}.containers[0].resource: unknown field"),
    ("nodeSelecter", lambda pod: pod.update(nodeSelecter={"a": "b"}), f"{W}.nodeSelecter: unknown field"),
    (
        "memory-512GB",
        _container(resources={"limits": {"memory": "512GB"}}),
        f'{W}.containers[0].resources.limits[memory]: Invalid value: "512GB": quantities must match',
    ),
    (
        "containerPort-80000",
        _container(ports=[{"containerPort": 80000}]),
        f"{W}.containers[0].ports[0].containerPort: Invalid value: 80000: must be between 1 and 65535, inclusive",
    ),
    (
        "gpu-minus-one",
        _container(resources={"limits": {"nvidia.com/gpu": "-1"}}),
        f'{W}.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "-1": must be greater than or equal to 0',
    ),
]


@pytest.mark.parametrize(("case", "mutate", "expected"), TYPOS, ids=[t[0] for t in TYPOS])
def test_podspec_typo_fails_with_source_path(case: str, mutate: Callable[[dict[str, Any]], None], expected: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        (src / "w.yaml").write_text(_worker(mutate))
        for command in (["validate", str(src)], ["render", str(src), "--out", str(Path(tmp) / "out")]):
            result = CliRunner().invoke(main, command)
            assert result.exit_code == 1, result.output
            assert isinstance(result.exception, SystemExit)
            assert "Traceback" not in result.output
            assert f"w.yaml: {expected}" in plain(result.output), result.output
            assert "demo-0-worker" not in result.output  # the source path, never the rendered pod


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_valid_podspec_passes_on_every_supported_version(version: str) -> None:
    pod = {
        "containers": [
            {
                "name": "w",
                "image": "x",
                "ports": [{"containerPort": 8080, "hostPort": 0}],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1},
                    "limits": {"cpu": 2, "memory": "1.5e9", "nvidia.com/gpu": "1"},
                },
            }
        ],
        "nodeSelector": {"a": "b"},
        "restartPolicy": "Always",
    }
    assert pod_spec_errors(pod, version, "p") == []


def test_unknown_field_depends_on_kubernetes_version() -> None:
    """The schema follows RenderConfiguration.kubernetesVersion, not one fixed version."""
    for version in ("1.35", "1.36", "1.37"):
        assert [str(e) for e in pod_spec_errors({"containers": [{"name": "a"}], "bogus": 1}, version, "p")] == [
            "p.bogus: unknown field"
        ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", Decimal(1)),
        ("+1.5", Decimal("1.5")),
        ("-2", Decimal(-2)),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("500m", Decimal("0.5")),
        ("100n", Decimal("1e-7")),
        ("3u", Decimal("3e-6")),
        ("1k", Decimal(1000)),
        ("2M", Decimal(2_000_000)),
        ("1G", Decimal(10**9)),
        ("1T", Decimal(10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),
        ("1Ki", Decimal(1024)),
        ("1Mi", Decimal(1024**2)),
        ("1Gi", Decimal(1024**3)),
        ("1Ti", Decimal(1024**4)),
        ("1Pi", Decimal(1024**5)),
        ("1Ei", Decimal(1024**6)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("12e-3", Decimal("0.012")),
        (7, Decimal(7)),
        (0.25, Decimal("0.25")),
    ],
)
def test_quantity_grammar_accepts(text: object, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["512GB", "1KiB", "", "m", "1.2.3", "1 Gi", "1ki", "1e", "--1", "1e999", True, None, [1]])
def test_quantity_grammar_rejects(text: object) -> None:
    assert parse_quantity(text) is None


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}, ['r.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1']),
        ({"requests": {"memory": "-1Gi"}}, ['r.requests[memory]: Invalid value: "-1Gi": must be greater than or equal to 0']),
        ({"limits": {"nvidia.com/gpu": "1.5"}}, ['r.limits[nvidia.com/gpu]: Invalid value: "1.5": must be an integer']),
        ({"limits": {"nvidia.com/gpu": "500m"}}, ['r.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer']),
        (
            {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}},
            ["r.requests[nvidia.com/gpu]: Invalid value: 1: must be equal to nvidia.com/gpu limit of 2"],
        ),
        (
            {"requests": {"nvidia.com/gpu": 1}},
            ["r.limits[nvidia.com/gpu]: Required value: Limit must be set for non overcommitable resources"],
        ),
        ({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}, []),
        ({"requests": {"kubernetes.io/batch-cpu": "500m"}}, []),
    ],
)
def test_resource_rules(resources: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in resource_errors(resources, "r")] == expected


def test_pod_level_and_init_container_resources_are_checked() -> None:
    pod = {
        "containers": [{"name": "a"}],
        "initContainers": [{"name": "i", "resources": {"limits": {"memory": "1GB"}}}],
        "resources": {"limits": {"cpu": "-1"}},
    }
    paths = [e.path for e in pod_spec_errors(pod, "1.35", "p")]
    assert paths == ["p.resources.limits[cpu]", "p.initContainers[0].resources.limits[memory]"]


def test_each_distinct_template_is_validated_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The render bar: cost per distinct podSpec, not per pod or per clique sharing a template."""
    podspec._MEMO.clear()
    calls: list[int] = []
    original = podspec._schema_errors

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(podspec, "_schema_errors", counting)
    doc = copy.deepcopy(BASE)
    doc["spec"]["replicas"] = 3
    doc["spec"]["template"]["cliques"][1]["spec"]["replicas"] = 20
    doc["spec"]["template"]["cliques"][1]["spec"]["podSpec"] = copy.deepcopy(doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"])
    result = render_files(tmp_path, {"w.yaml": yaml.safe_dump(doc)})
    assert sum(1 for o in result.objects if o.obj["kind"] == "Pod") == 63
    assert len(calls) == 1


def test_all_problems_of_a_koordinator_pcs_in_one_run(tmp_path: Path) -> None:
    """Grove's errors, the podSpec's schema error and the backend's rejection come out together:
    before, the backend was only asked once everything else was fixed (three rounds)."""
    doc = pcs_doc()
    doc["metadata"]["annotations"] = {"grove.io/mnnvl-group": "nvl-a"}
    doc["spec"]["template"]["cliques"][0]["spec"]["minAvailable"] = 5
    doc["spec"]["template"]["cliques"][1]["spec"]["podSpec"]["containers"][0]["resource"] = {}
    found = koord_problems(tmp_path, doc)
    assert "pcs.yaml: spec.template.cliques[0].spec.minAvailable: Invalid value: 5: minAvailable must not be greater than replicas" in found
    assert "pcs.yaml: spec.template.cliques[1].spec.podSpec.containers[0].resource: unknown field; did you mean resources?" in found
    assert any(p.startswith("pcs.yaml: metadata.annotations[grove.io/mnnvl-group]") and "koord-scheduler does not support MNNVL" in p for p in found)


def test_backend_crash_on_an_invalid_spec_is_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend may assume a spec Grove accepts; on one Grove rejects, its exception is swallowed."""
    from grove_gitops_backends.koordinator import KoordinatorBackend

    def boom(self: Any, pcs: Any) -> Any:
        raise KeyError("assumed valid")

    monkeypatch.setattr(KoordinatorBackend, "validate", boom)
    doc = pcs_doc()
    doc["spec"]["template"]["cliques"][0]["spec"]["minAvailable"] = 5
    assert koord_problems(tmp_path / "a", doc) == [
        "pcs.yaml: spec.template.cliques[0].spec.minAvailable: Invalid value: 5: minAvailable must not be greater than replicas"
    ]
    with pytest.raises(KeyError):  # on a valid spec it is a backend bug, not the user's
        koord_problems(tmp_path / "b", pcs_doc())


def test_backend_is_skipped_when_the_scheduler_name_is_invalid(tmp_path: Path) -> None:
    doc = pcs_doc()
    doc["spec"]["template"]["cliques"][1]["spec"]["podSpec"]["schedulerName"] = "default-scheduler"
    with pytest.raises(InvalidInputError) as info:
        from tests.backends.test_koordinator import render

        render(tmp_path, doc)
    assert all("koord-scheduler does not" not in str(p) for p in info.value.problems)
    assert any("schedulerName" in str(p) for p in info.value.problems)


SERVICE = """apiVersion: v1
kind: Service
metadata: {name: web, namespace: ml, labels: {app: web}}
spec:
  selector: {app: web}
  prots:
  - {port: 80000, targetPort: http}
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: ml}\ndate: {k: v}\n"
CUSTOM = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ml}\nspec: {anything: [1]}\n"
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ml}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
      - {name: c, image: x, ports: [{containerPort: 80000}]}
"""


def test_passthrough_builtins_are_checked_on_their_own_field_paths(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name, text in {"svc.yaml": SERVICE, "cm.yaml": CONFIGMAP, "cr.yaml": CUSTOM, "deploy.yaml": DEPLOYMENT}.items():
        (src / name).write_text(text)
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "svc.yaml: spec.prots: unknown field" in plain(result.output)
    assert "cm.yaml: date: unknown field" in plain(result.output)
    assert "deploy.yaml: spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 80000" in plain(
        result.output
    )
    assert "cr.yaml" not in result.output  # custom resources have no built-in schema to judge them by


def test_valid_passthrough_builtins_pass(tmp_path: Path) -> None:
    good = SERVICE.replace("prots", "ports").replace("80000", "80")
    result = render_files(tmp_path, {"svc.yaml": good, "cm.yaml": CONFIGMAP.replace("date", "data"), "cr.yaml": CUSTOM})
    assert {o.obj["kind"] for o in result.objects} == {"Service", "ConfigMap", "Widget"}
