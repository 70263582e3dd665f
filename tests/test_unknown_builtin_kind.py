"""A built-in kind unknown to the target Kubernetes version is a warning, not an error (issue 9 §5)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from grove_gitops.cli import main


def _validate(tmp_path: Path, text: str) -> tuple[int, str]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "obj.yaml").write_text(text)
    result = CliRunner().invoke(main, ["validate", str(src)])
    return result.exit_code, result.output


def test_misspelled_builtin_kind_warns(tmp_path: Path) -> None:
    code, output = _validate(tmp_path, "apiVersion: v1\nkind: ConfigMaps\nmetadata: {name: x, namespace: ml}\n")
    assert code == 0, output
    assert "warning: obj.yaml: kind: v1 ConfigMaps is not a built-in kind of Kubernetes 1." in output


def test_removed_builtin_version_warns(tmp_path: Path) -> None:
    code, output = _validate(tmp_path, "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: x, namespace: ml}\n")
    assert code == 0, output
    assert "extensions/v1beta1 Ingress is not a built-in kind" in output


def test_known_builtin_and_custom_kinds_do_not_warn(tmp_path: Path) -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ml}\n---\n"
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ml}\n"
    )
    code, output = _validate(tmp_path, text)
    assert code == 0, output
    assert "not a built-in kind" not in output
