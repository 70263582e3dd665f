"""The gang diagrams render in a real browser: headless Chromium + the mermaid npm package.

Every diagram a shard README of ``examples/`` and of Grove's samples carries, one per
scheduler backend, a diff pair with marked nodes and a diagram of hostile-looking names are
rendered in one page load; none may raise a Mermaid error, and the hostile labels must come
out as text with no HTML element. PNGs land in ``.browser/png/`` (git-ignored) for a look.
Skipped, saying why, only where ``scripts/setup-browser.sh`` could not install Chromium or
mermaid.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.output import diagram
from grove_gitops.output.layout import build_tree
from grove_gitops.render import render_source
from tests import browser
from tests.support import PROJECT, SAMPLES, write_source
from tests.test_diagram import BACKEND_CASES, hostile_objects

PNG_DIR = PROJECT / ".browser" / "png"


def _readme_diagrams(tree_files: dict[str, bytes]) -> dict[str, str]:
    out = {}
    for path, data in sorted(tree_files.items()):
        if path.endswith("/README.md"):
            found = re.search(r"```mermaid\n(.*?)```", data.decode(), re.S)
            if found:
                out[path.removesuffix("/README.md")] = found.group(1)
    return out


def _all_diagrams(tmp_path: Path) -> dict[str, str]:
    diagrams: dict[str, str] = {}
    for shard, text in _readme_diagrams(build_tree(render_source(PROJECT / "examples")).files).items():
        diagrams[f"example {shard}"] = text
    for i, sample in enumerate(sorted(SAMPLES.rglob("*.yaml"))):
        src = tmp_path / f"sample{i}"
        src.mkdir()
        shutil.copy(sample, src / sample.name)
        for shard, text in _readme_diagrams(build_tree(render_source(src)).files).items():
            diagrams[f"sample {sample.stem} {shard}"] = text
    for name, files in BACKEND_CASES.items():
        tree = build_tree(render_source(write_source(tmp_path / f"backend-{name}", files)))
        for shard, text in _readme_diagrams(tree.files).items():
            diagrams[f"backend {name} {shard}"] = text
    before = _objects(tmp_path / "before", 2, 1)
    after = _objects(tmp_path / "after", 3, 2)
    g_old, g_new = diagram.build_graph("ml/demo", before), diagram.build_graph("ml/demo", after)
    m_old, m_new = diagram.mark_changes(g_old, g_new)
    diagrams["diff before"] = diagram.to_mermaid(g_old, m_old)
    diagrams["diff after"] = diagram.to_mermaid(g_new, m_new)
    diagrams["hostile names"] = diagram.to_mermaid(diagram.build_graph("ml/demo", hostile_objects()))
    return diagrams


def _objects(root: Path, replicas: int, workers: int) -> list[dict[str, Any]]:
    pcs = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "demo", "namespace": "ml"},
        "spec": {
            "replicas": replicas,
            "template": {
                "cliques": [
                    {
                        "name": "worker",
                        "spec": {
                            "roleName": "worker",
                            "replicas": workers,
                            "podSpec": {"containers": [{"name": "c", "image": "x"}]},
                        },
                    }
                ]
            },
        },
    }
    result = render_source(write_source(root, {"pcs.yaml": yaml.safe_dump(pcs)}))
    return [o.obj for o in result.objects if o.obj["kind"] != "Pod"]


def test_every_diagram_renders_in_chromium(tmp_path: Path) -> None:
    reason = browser.missing()
    if reason:
        pytest.skip(reason)
    diagrams = _all_diagrams(tmp_path)
    names = list(diagrams)
    assert len(names) >= 15
    started = time.monotonic()
    shutil.rmtree(PNG_DIR, ignore_errors=True)
    title, results = browser.render([diagrams[n] for n in names])
    errors = {names[i]: r.error for i, r in enumerate(results) if not r.ok}
    assert errors == {}
    assert title == "OK" and len(results) == len(names)
    assert all(r.forbidden == 0 and r.width > 50 and r.height > 20 for r in results)
    hostile = results[names.index("hostile names")]
    for needle in ('x"]:::evil', "<img src=x onerror=alert(1)>", "%%{init: {}}%%", "click n0 call alert()"):
        assert needle in hostile.text.replace("\n", " "), needle
    example = results[names.index("example inference/llama-disagg")].text
    assert "PodGroup.scheduling.run.ai" in example and "minSubGroup: 2" in example
    # PNGs: the example, the marked diff pair and one per backend (one page load each).
    wanted = [n for n in names if n.startswith(("example", "diff", "backend"))]
    with ThreadPoolExecutor(max_workers=2) as pool:
        shots = list(
            pool.map(
                lambda n: browser.screenshot(diagrams[n], PNG_DIR / f"{_file(n)}.png", results[names.index(n)]), wanted
            )
        )
    for png in shots:
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000, png
    assert time.monotonic() - started < 120


def _file(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", name)


def _run_setup(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "scripts").mkdir(exist_ok=True)
    shutil.copy(PROJECT / "scripts" / "setup-browser.sh", tmp_path / "scripts" / "setup-browser.sh")
    return subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(tmp_path / "scripts" / "setup-browser.sh")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_setup_browser_never_fails_and_says_why(tmp_path: Path) -> None:
    """Without chromium, apt-get or npm on PATH the script exits 0 and names what is missing;
    the browser test then skips (``browser.missing``)."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("id", "mkdir", "dirname"):
        found = shutil.which(tool)
        assert found
        (bare / tool).symlink_to(found)
    done = _run_setup(tmp_path, {"PATH": str(bare), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "browser test will skip" in done.stdout and "npm is not installed" in done.stdout
    skipped = _run_setup(tmp_path, {"PATH": str(bare), "GROVE_GITOPS_SKIP_BROWSER_SETUP": "1"})
    assert skipped.returncode == 0 and "skipped" in skipped.stdout


def test_setup_browser_is_idempotent() -> None:
    """Once chromium and mermaid are there, a second run installs nothing and prints nothing."""
    if browser.missing():
        pytest.skip(browser.missing() or "")
    done = subprocess.run(
        ["bash", str(PROJECT / "scripts" / "setup-browser.sh")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout == ""
