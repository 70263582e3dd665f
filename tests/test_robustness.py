"""Issue 9 §2 and §8: inputs that crashed, hung or made ``validate`` and ``render`` disagree,
and the size limits (pods per PodCliqueSet / per render, bytes per object).

Every case runs both commands through the CLI and asserts the contract: the same exit code
and the same ``error: file: field: message`` lines, and OUT left as it was on exit 1.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import grove_gitops.output.layout as layout
from grove_gitops.cli import main
from grove_gitops.yamlfiles.yamlio import MAX_OBJECT_BYTES, parse_documents
from tests.support import PROJECT, plain, write_source

CM = "apiVersion: v1\nkind: ConfigMap\n"


def _pcs(replicas: int = 1, clique_replicas: int = 2, group: str = "", labels: str = "") -> str:
    return f"""\
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {{name: demo, namespace: ml{labels}}}
spec:
  replicas: {replicas}
  template:
    cliques:
    - name: router
      spec: {{roleName: router, replicas: 1, podSpec: {{containers: [{{name: r, image: x}}]}}}}
    - name: worker
      spec: {{roleName: worker, replicas: {clique_replicas}, podSpec: {{containers: [{{name: w, image: x}}]}}}}
{group}"""


def _run_both(src: Path, out: Path) -> tuple[int, list[str]]:
    """Exit code and error lines of ``validate`` and ``render``, asserted to agree."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "keep.txt").write_text("not a render, so render must refuse or leave it\n")
    runner = CliRunner()
    v = runner.invoke(main, ["validate", str(src)])
    r = runner.invoke(main, ["render", str(src), "--out", str(out / "o")])
    for result in (v, r):
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert "Traceback" not in result.output
    v_err = [plain(line) for line in v.output.splitlines() if line.startswith("error:")]
    r_err = [plain(line) for line in r.output.splitlines() if line.startswith("error:")]
    assert (v.exit_code, v_err) == (r.exit_code, r_err), (v.output, r.output)
    if r.exit_code == 1:
        assert not (out / "o").exists()
    return v.exit_code, v_err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            CM + "metadata: {name: x, labels: {a: [1, 2]}}\n",
            "w.yaml: metadata.labels.a: value must be a string, not list",
        ),
        (
            CM + "metadata: {name: x, labels: {a: 5}}\n",
            "w.yaml: metadata.labels.a: value must be a string, not integer",
        ),
        (
            CM + "metadata: {name: x, annotations: {a: null}}\n",
            "w.yaml: metadata.annotations.a: value must be a string, not null",
        ),
        (CM + "metadata: {name: x, annotations: [a]}\n", "w.yaml: metadata.annotations: must be a mapping, not list"),
        (CM + "metadata: {name: x, namespace: [a]}\n", "w.yaml: metadata.namespace: Invalid value: [\"a\"]: must be of type string"),
        (CM + 'metadata: {name: "x\\0y"}\n', "w.yaml: metadata.name: Invalid value: \"x\\u0000y\": a lowercase RFC 1123 subdomain"),
        ('apiVersion: v1\nkind: "Config\\0Map"\nmetadata: {name: x}\n', "w.yaml: kind: "),
        (
            CM + "metadata: {name: x}\ndata: {1: a, b: c}\n",
            "w.yaml: data: document 1: mapping key 1 is integer, not a string",
        ),
        (CM + "metadata: {name: x}\ndata: {on: a}\n", "w.yaml: data: document 1: mapping key True is boolean"),
        (CM + "metadata: {name: x}\ndata: {a: .nan}\n", "w.yaml: data.a: document 1: nan is not a JSON number"),
        (
            "apiVersion: scheduler.grove.io/v1alpha1\nkind: PodGang\nmetadata: {name: g, namespace: ml}\n",
            "w.yaml: spec: Required value",
        ),
        (
            "apiVersion: scheduler.grove.io/v1alpha1\nkind: PodGang\nmetadata: {name: g, namespace: ml}\nspec: {podgroups: [{name: a}]}\n",
            "w.yaml: spec.podgroups[0].minReplicas: Required value",
        ),
        (_pcs(labels=", labels: {a: 1}"), "w.yaml: metadata.labels.a: Invalid value: 1: must be of type string"),
        (_pcs(labels=", annotations: {a: [x]}"), "w.yaml: metadata.annotations.a:"),
    ],
)
def test_shape_errors_not_tracebacks(text: str, expected: str, tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"w.yaml": text})
    code, errors = _run_both(src, tmp_path / "out")
    assert code == 1
    assert any(line.startswith(f"error: {expected}") for line in errors), errors


@pytest.mark.parametrize(
    ("tagged", "what"),
    [("!!timestamp 2020-01-01", "timestamp"), ("!!binary aGVsbG8=", "binary"), ("!!set {x, y}", "set")],
)
def test_explicit_yaml_tags_in_a_podspec(tagged: str, what: str, tmp_path: Path) -> None:
    text = _pcs().replace("image: x}]", f"image: x, env: [{{name: E, value: {tagged}}}]}}]", 1)
    src = write_source(tmp_path / "src", {"w.yaml": text})
    code, errors = _run_both(src, tmp_path / "out")
    assert code == 1
    field = "spec.template.cliques[0].spec.podSpec.containers[0].env[0].value"
    assert errors == [
        f"error: w.yaml: {field}: document 1: {what} value is not allowed (Kubernetes manifests are JSON; quote it)"
    ]


def test_mixed_key_types_in_a_podspec(tmp_path: Path) -> None:
    text = _pcs().replace("{containers:", "{1: x, containers:", 1)
    code, errors = _run_both(write_source(tmp_path / "src", {"w.yaml": text}), tmp_path / "out")
    assert code == 1
    assert errors == [
        "error: w.yaml: spec.template.cliques[0].spec.podSpec: document 1: mapping key 1 is integer, not a string (quote it)"
    ]


def test_deep_nesting_is_refused_before_any_recursive_code() -> None:
    text = "a: " + "[" * 150 + "]" * 150 + "\n"
    docs, problems = parse_documents(text, "w.yaml")
    assert docs == []
    assert str(problems[0]).endswith("nesting is deeper than 100 levels")


def test_a_billion_replicas_is_refused_before_expansion(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"w.yaml": _pcs(clique_replicas=1_000_000_000)})
    start = time.monotonic()
    code, errors = _run_both(src, tmp_path / "out")
    assert time.monotonic() - start < 20
    assert code == 1
    assert errors == [
        "error: w.yaml: spec.template.cliques[1].spec.replicas: Invalid value: 1000000000: this PodCliqueSet would "
        "have 1000000001 pods, above the limit of 20000 (RenderConfiguration limits.maxPodsPerPodCliqueSet)"
    ]


def test_pods_are_counted_through_pcs_and_scaling_group_replicas(tmp_path: Path) -> None:
    group = "    podCliqueScalingGroups:\n    - {name: grp, cliqueNames: [worker], replicas: 100}\n"
    src = write_source(tmp_path / "src", {"w.yaml": _pcs(replicas=11, clique_replicas=20, group=group)})
    code, errors = _run_both(src, tmp_path / "out")
    assert code == 1  # 11 x (1 + 100 x 20) = 22011 pods
    assert "would have 22011 pods" in errors[0]
    assert errors[0].startswith("error: w.yaml: spec.template.cliques[1].spec.replicas: Invalid value: 20:")


def test_pods_per_render_limit_and_its_configuration(tmp_path: Path) -> None:
    files = {
        "a.yaml": _pcs(clique_replicas=5),
        "b.yaml": _pcs(clique_replicas=5).replace("name: demo", "name: other"),
        "cfg.yaml": "apiVersion: gitops.grove.io/v1alpha1\nkind: RenderConfiguration\nlimits: {maxPodsPerRender: 10}\n",
    }
    code, errors = _run_both(write_source(tmp_path / "src", files), tmp_path / "out")
    assert code == 1
    assert errors == [
        "error: b.yaml: spec.replicas: Too many: the render would have more than 10 pods "
        "(RenderConfiguration limits.maxPodsPerRender): 6 before this PodCliqueSet, 6 in it"
    ]
    files["cfg.yaml"] = files["cfg.yaml"].replace("10}", "12, maxPodsPerPodCliqueSet: 6}")
    code, errors = _run_both(write_source(tmp_path / "src2", files), tmp_path / "out2")
    assert (code, errors) == (0, [])


def test_a_pass_through_object_above_the_etcd_limit(tmp_path: Path) -> None:
    big = "x" * (MAX_OBJECT_BYTES + 10)  # the file is still below the 2 MiB file limit
    src = write_source(tmp_path / "src", {"w.yaml": CM + f"metadata: {{name: x}}\ndata: {{a: {big}}}\n"})
    code, errors = _run_both(src, tmp_path / "out")
    assert code == 1
    assert errors[0].startswith("error: w.yaml: object is ")
    assert errors[0].endswith(f"above the {MAX_OBJECT_BYTES} byte limit of what etcd stores")


def test_a_rendered_object_above_the_limit_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real over-size PodGang needs ~25,000 pods and minutes; the check is the same at any size.
    monkeypatch.setattr(layout, "MAX_OBJECT_BYTES", 1000)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["render", str(PROJECT / "examples"), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert not out.exists()
    line = result.output.splitlines()[0]
    assert line.startswith("error: workloads/llm-inference/llama-disagg.yaml: rendered ")
    assert "bytes, above the 1000 byte limit of what etcd stores" in line
