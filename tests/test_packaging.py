"""The wheel ships the product only: the fake API server and the conformance validators are test
support (issue 13, "Test support") and live under tests/, which the product never imports."""

from __future__ import annotations

import re
import tomllib

import setuptools

from tests.support import PROJECT


def _wheel_packages() -> list[str]:
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text("utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    return sorted(
        p for where in find["where"] for p in setuptools.find_namespace_packages(where=str(PROJECT / where), include=find["include"])
    )


def test_wheel_packages_exclude_the_test_support() -> None:
    packages = _wheel_packages()
    assert "grove_gitops.validation" in packages and "grove_gitops_backends" in packages
    leaked = [p for p in packages if p.startswith("tests") or re.search(r"testing|fakeapi|fakeserver", p)]
    assert leaked == []


def test_product_code_never_imports_the_tests() -> None:
    importing = re.compile(r"^\s*(from\s+tests[\s.]|import\s+tests\b)", re.MULTILINE)
    offenders = [
        str(path.relative_to(PROJECT))
        for top in ("grove_gitops", "backends/grove_gitops_backends")
        for path in sorted((PROJECT / top).rglob("*.py"))
        if importing.search(path.read_text("utf-8"))
    ]
    assert offenders == []


def test_the_scheduler_backends_install_under_the_projects_own_name() -> None:
    """``backends/`` is the layout's folder, but a generic top-level ``backends`` package would
    shadow (or be shadowed by) a user's own: the wheel's top-level names are all ours (issue 24 §5)."""
    tops = {p.split(".")[0] for p in _wheel_packages()}
    assert tops == {"grove_gitops", "grove_gitops_backends"}
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text("utf-8"))
    targets = config["project"]["entry-points"]["grove_gitops.backends"].values()
    assert targets and all(t.startswith("grove_gitops_backends.") for t in targets)
