"""The wheel ships the product only: the fake API server and the conformance validators are test
support (issue 13, "Test support") and live under tests/, which the product never imports."""

from __future__ import annotations

import re
import tomllib

import setuptools

from tests.support import PROJECT


def _wheel_packages() -> list[str]:
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text("utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(setuptools.find_namespace_packages(where=str(PROJECT), include=include))


def test_wheel_packages_exclude_the_test_support() -> None:
    packages = _wheel_packages()
    assert "grove_gitops.validation" in packages and "backends" in packages
    leaked = [p for p in packages if p.startswith("tests") or re.search(r"testing|fakeapi|fakeserver", p)]
    assert leaked == []


def test_product_code_never_imports_the_tests() -> None:
    importing = re.compile(r"^\s*(from\s+tests[\s.]|import\s+tests\b)", re.MULTILINE)
    offenders = [
        str(path.relative_to(PROJECT))
        for top in ("grove_gitops", "backends")
        for path in sorted((PROJECT / top).rglob("*.py"))
        if importing.search(path.read_text("utf-8"))
    ]
    assert offenders == []
