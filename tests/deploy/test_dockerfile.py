"""The Dockerfile and .dockerignore, read statically (no container engine is needed)."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest

from .helpers import (
    DOCKERFILE,
    DOCKERIGNORE,
    PROJECT,
    DockerIgnore,
    Instruction,
    container,
    dockerfile_global_args,
    dockerfile_stages,
    exec_form,
    one,
    pod_spec,
)

Objects = list[dict[str, Any]]
BASE_IMAGE = "python:3.11-slim"
DEV_MARKERS = re.compile(r"\[dev\]|\bpytest\b|\bmypy\b|\bruff\b|kubernetes-validate|\blupa\b|requirements-dev")


@pytest.fixture(scope="module")
def stages() -> list[list[Instruction]]:
    return dockerfile_stages(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def ignore() -> DockerIgnore:
    return DockerIgnore(DOCKERIGNORE.read_text())


def _runs(stage: list[Instruction]) -> list[Instruction]:
    return [i for i in stage if i.keyword == "RUN"]


def test_two_stages_on_one_base_argument(stages: list[list[Instruction]]) -> None:
    """Both stages on ``${PYTHON_IMAGE}`` (python:3.11-slim unless scripts/build-image.sh passes
    its local Debian base), without a ``# syntax=`` line or RUN --mount: buildah and docker build
    it alike, and no builder frontend image is pulled."""
    text = DOCKERFILE.read_text()
    assert dockerfile_global_args(text) == {"PYTHON_IMAGE": BASE_IMAGE}
    assert len(stages) == 2
    builder, runtime = stages
    assert [w.lower() for w in builder[0].words] == ["${python_image}", "as", "builder"]
    assert runtime[0].words == ["${PYTHON_IMAGE}"]
    assert "platform" not in builder[0].flags and "platform" not in runtime[0].flags
    assert not re.search(r"^\s*#\s*syntax\s*=", text, re.M | re.I)
    assert not [i for stage in stages for i in stage if "mount" in i.flags]


def test_builder_installs_into_a_venv(stages: list[list[Instruction]]) -> None:
    """``python3 -m venv`` and ``python3 -m pip`` only (Debian's python3 refuses system-wide pip
    installs, PEP 668): the dependencies from pyproject.toml, then the project without them."""
    runs = _runs(stages[0])
    assert re.search(r"\bpython3 -m venv /opt/grove-gitops\b", runs[0].args), runs[0].args
    for run in runs:
        assert not re.search(r"\bpip3? (install|wheel|uninstall|download)\b", run.args.replace("-m pip ", "-m ")), (
            run.args
        )
    pips = [m.group(0) for r in runs for m in re.finditer(r"/opt/grove-gitops/bin/python3 -m pip \w+[^&]*", r.args)]
    assert any("install" in p and "-r /tmp/requirements.txt" in p for p in pips), pips
    assert any(re.search(r"pip install .*--no-deps \.\s*$", p) for p in pips), pips
    assert any(re.search(r"pip uninstall .*\bpip\b", p) for p in pips), pips


def test_builder_copies_every_package(stages: list[list[Instruction]]) -> None:
    """pyproject.toml's packages.find patterns (grove_gitops*, backends*) all reach the build."""
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    find = pyproject["tool"]["setuptools"]["packages"]["find"]
    packages = {
        (PROJECT / w / p.name).relative_to(PROJECT).parts[0]
        for w in find["where"]
        for p in (PROJECT / w).iterdir()
        if p.is_dir() and (p / "__init__.py").is_file() and any(re.fullmatch(pat.replace("*", ".*"), p.name) for pat in find["include"])
    }
    wanted = packages
    assert wanted == {"grove_gitops", "backends"}
    copied = {w.rstrip("/") for i in stages[0] if i.keyword == "COPY" for w in i.words[:-1]}
    assert wanted <= copied
    readme = pyproject["project"]["readme"]
    assert readme in copied


def test_runtime_installs_git_and_the_venv_only(stages: list[list[Instruction]]) -> None:
    runtime = stages[1]
    runs = _runs(runtime)
    apt = [r for r in runs if "apt-get install" in r.args]
    assert apt and re.search(r"\bgit\b", apt[0].args), [r.args for r in runs]
    assert "--no-install-recommends" in apt[0].args
    assert "rm -rf /var/lib/apt/lists/*" in apt[0].args
    assert not [r for r in runs if re.search(r"\bpip\b", r.args)]
    # Only the builder's venv: no source tree, no wheels, no pip.
    copies = [i for i in runtime if i.keyword in ("COPY", "ADD")]
    assert [(c.keyword, c.flags, c.words) for c in copies] == [
        ("COPY", {"from": "builder"}, ["/opt/grove-gitops", "/opt/grove-gitops"])
    ]
    path = [i.args for i in runtime if i.keyword == "ENV" and i.args.startswith("PATH=")]
    assert path and path[0].startswith("PATH=/opt/grove-gitops/bin:")
    for stage in stages:
        for ins in stage:
            assert not DEV_MARKERS.search(ins.args), f"dev dependency in: {ins.keyword} {ins.args}"


def test_runs_as_numeric_non_root_user(stages: list[list[Instruction]]) -> None:
    runtime = stages[1]
    users = [i for i in runtime if i.keyword == "USER"]
    assert users, "no USER in the final stage"
    final = users[-1].args
    uid, _, gid = final.partition(":")
    assert uid.isdigit() and gid.isdigit(), final
    assert int(uid) == 65532 and int(gid) == 65532
    # The user exists in /etc/passwd (git and ssh look the current user up).
    useradd = [r for r in _runs(runtime) if "useradd" in r.args]
    assert useradd and re.search(r"--uid 65532\b", useradd[0].args) and re.search(r"--gid 65532\b", useradd[0].args)
    assert re.search(r"groupadd .*--gid 65532\b", useradd[0].args)
    # Nothing runs as root after USER.
    after = runtime[runtime.index(users[-1]) :]
    assert not [i for i in after if i.keyword == "RUN"]


def test_entrypoint(stages: list[list[Instruction]]) -> None:
    runtime = stages[1]
    entrypoints = [i for i in runtime if i.keyword == "ENTRYPOINT"]
    assert len(entrypoints) == 1
    assert exec_form(entrypoints[0].args) == ["grove-gitops"]
    cmds = [i for i in runtime if i.keyword == "CMD"]
    assert all(exec_form(c.args) is not None for c in cmds)
    exposed = [i for i in runtime if i.keyword == "EXPOSE"]
    assert [i.args for i in exposed] == ["8080"]


def test_image_user_matches_the_manifests(
    stages: list[list[Instruction]], lifter_objs: Objects, controller_objs: Objects
) -> None:
    uid = int([i for i in stages[1] if i.keyword == "USER"][-1].args.split(":")[0])
    # (container name, subcommand): the agent keeps the gate-lifter's object and container names.
    for objs, name, subcommand in (
        (lifter_objs, "gate-lifter", "agent"),
        (controller_objs, "controller", "controller"),
    ):
        deployment = one(objs, "Deployment")
        assert pod_spec(deployment)["securityContext"]["runAsUser"] == uid
        assert container(deployment, name)["securityContext"]["runAsUser"] == uid
        # The manifests pass a subcommand to the ENTRYPOINT, never a command of their own.
        assert "command" not in container(deployment, name)
        assert container(deployment, name)["args"][0] == subcommand


def test_no_tests_or_venv_in_the_image(stages: list[list[Instruction]], ignore: DockerIgnore) -> None:
    for stage in stages:
        for ins in stage:
            if ins.keyword not in ("COPY", "ADD") or "from" in ins.flags:
                continue
            for src in ins.words[:-1]:
                assert src not in (".", "./", "*"), f"{ins.keyword} {ins.args} copies the whole context"
                assert not re.match(r"(\./)?(tests|\.venv|\.git)\b", src), src
                assert (PROJECT / src).exists(), f"{src} is copied but does not exist"
                assert not ignore.excluded(src), f"{src} is copied but .dockerignore excludes it"


@pytest.mark.parametrize(
    "path",
    [
        "tests/deploy/test_dockerfile.py",
        "tests/__init__.py",
        ".venv/bin/python",
        ".venv/lib/python3.11/site-packages/yaml/__init__.py",
        ".git/config",
        ".demo/out/kustomization.yaml",
        "grove_gitops.egg-info/PKG-INFO",
        "grove_gitops/__pycache__/cli.cpython-311.pyc",
        "backends/__pycache__/kai.cpython-311.pyc",
        ".mypy_cache/3.11/cache.db",
        "docs/deploy.md",
        "overlays/gate-lifter/base/deployment.yaml",
        "examples/README.md",
        "scripts/test.sh",
    ],
)
def test_dockerignore_excludes(ignore: DockerIgnore, path: str) -> None:
    assert ignore.excluded(path)


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "README.md",
        "grove_gitops/cli/main.py",
        "grove_gitops/py.typed",
        "backends/grove_gitops_backends/kai.py",
        "backends/grove_gitops_backends/__init__.py",
    ],
)
def test_dockerignore_keeps_the_sources(ignore: DockerIgnore, path: str) -> None:
    assert not ignore.excluded(path)


def test_every_package_file_reaches_the_build(ignore: DockerIgnore) -> None:
    """Every tracked-looking source file of the two packages is in the build context."""
    for package in ("grove_gitops", "backends"):
        files = [p for p in (PROJECT / package).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        assert files
        for path in files:
            rel = path.relative_to(PROJECT).as_posix()
            assert not ignore.excluded(rel), rel


def test_dockerignore_matcher_follows_docker_rules() -> None:
    rules = DockerIgnore("*\n!keep/\nkeep/**/*.log\n!keep/important.log\n")
    assert rules.excluded("other.txt") and rules.excluded("dir/file")
    assert not rules.excluded("keep/a.py") and not rules.excluded("keep/sub/b.py")
    assert rules.excluded("keep/x.log") and rules.excluded("keep/sub/y.log")
    assert not rules.excluded("keep/important.log")
