"""Helpers for the Argo CD / Flux wiring tests (``overlays/argocd``, ``overlays/flux``).

Lua health checks run in ``lupa``'s Lua 5.1 (Argo CD runs them in gopher-lua, a Lua 5.1) with the
same libraries Argo CD opens when ``useOpenLibs`` is off: base and table only (plus ``package``
and a reduced ``os``, which the scripts do not use). The ``string`` library and the string
metatable are removed, so a script that calls ``s:sub()`` or ``string.format`` fails here as it
would in Argo CD.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from lupa import lua51

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLES = PROJECT / "examples"
ARGOCD = PROJECT / "overlays" / "argocd"
FLUX = PROJECT / "overlays" / "flux"
HEALTH = ARGOCD / "health"

#: Every gang and topology kind grove-gitops renders (group, kind, namespaced).
GANG_KINDS: list[tuple[str, str, bool]] = [
    ("scheduler.grove.io", "PodGang", True),
    ("scheduling.run.ai", "PodGroup", True),
    ("kai.scheduler", "Topology", False),
    ("scheduling.volcano.sh", "PodGroup", True),
    ("scheduling.sigs.k8s.io", "PodGroup", True),
    ("scheduling.koordinator.sh", "ClusterNetworkTopology", False),
    ("scheduling.x-k8s.io", "PodGroup", True),
    ("scheduling.k8s.io", "Workload", True),
    ("scheduling.k8s.io", "PodGroup", True),
    ("scheduling.k8s.io", "CompositePodGroup", True),
    ("grove.io", "ClusterTopologyBinding", False),
]

#: grove-gitops' own kinds (overlays/crds, docs/autoscaling.md): health reports the workload.
GITOPS_KINDS: list[tuple[str, str, bool]] = [
    ("gitops.grove.io", "PodCliqueSet", True),
    ("gitops.grove.io", "PodCliqueScalingGroup", True),
    ("gitops.grove.io", "PodClique", True),
]

HEALTH_STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended"}

_SANDBOX = """
string = nil
math = nil
io = nil
debug = nil
coroutine = nil
os = nil
dofile = nil
loadfile = nil
getmetatable("").__index = nil
"""


def venv_bin() -> Path:
    """The directory holding this project's ``grove-gitops`` (``.venv/bin`` in a checkout)."""
    candidate = PROJECT / ".venv" / "bin"
    if (candidate / "grove-gitops").exists():
        return candidate
    return Path(sys.executable).parent


def _prune_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _prune_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_none(v) for v in value]
    return value


def _to_python(value: Any) -> Any:
    if lua51.lua_type(value) == "table":
        return {k: _to_python(v) for k, v in value.items()}
    return value


def run_health(script: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Run an Argo CD health script on ``obj`` (a Kubernetes object as a dict) and return its result."""
    runtime = lua51.LuaRuntime(unpack_returned_tuples=True, register_eval=False, register_builtins=False)
    runtime.execute(_SANDBOX)
    runtime.globals().obj = runtime.table_from(_prune_none(obj), recursive=True)
    result = runtime.execute(script)
    assert lua51.lua_type(result) == "table", f"health script returned {result!r}, not a table"
    out = _to_python(result)
    assert isinstance(out, dict)
    return out


def health_script(group: str, kind: str) -> str:
    return (HEALTH / f"{group}_{kind}.lua").read_text()


def load_docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def load_one(path: Path) -> dict[str, Any]:
    docs = load_docs(path)
    assert len(docs) == 1, f"{path}: expected one document, found {len(docs)}"
    return docs[0]


def render_cli(source: Path, out: Path) -> None:
    env = {**os.environ, "PATH": f"{venv_bin()}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        ["grove-gitops", "render", str(source), "--out", str(out), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"grove-gitops render failed:\n{proc.stderr}"


def rendered_objects(out: Path) -> dict[str, dict[str, Any]]:
    """``{relative file path: object}`` for every object file of a rendered tree."""
    objects: dict[str, dict[str, Any]] = {}
    for path in sorted(out.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        objects[path.relative_to(out).as_posix()] = load_one(path)
    return objects


def kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        pytest.skip("kubectl is not installed: the `kubectl kustomize` checks need it")
    return path
