"""``scripts/demo.sh``, the first command of the README's quick start (issue 34 §11): besides the
rendered branch it must show why to adopt the tool, a pull-request-like change whose rollout plan
flags an OUTAGE and names the fix.

The script runs in a copy of the parts it uses (its own ``.demo/`` must not clobber the
checkout's); ``scripts/setup.sh`` there is a no-op, the venv running this test stands in for
``.venv``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def test_demo_ends_with_a_pull_request_and_its_outage(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(PROJECT / "scripts" / "demo.sh", root / "scripts" / "demo.sh")
    (root / "scripts" / "setup.sh").write_text("# the venv of the test run is used instead\n")
    shutil.copytree(PROJECT / "examples", root / "examples")
    (root / ".venv").symlink_to(Path(sys.prefix))
    assert (root / ".venv" / "bin" / "grove-gitops").exists(), "the test needs grove-gitops in its venv"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    # The timeout only keeps a hang from stalling the suite; the demo takes a few seconds.
    proc = subprocess.run(
        ["bash", str(root / "scripts" / "demo.sh")], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    headings = ("== 1. rendered branch", "== 2. a pull request", "== 3. its rollout plan")
    assert all(h in out for h in headings), out[-2000:]
    rendered, pull_request, plan = (out.index(h) for h in headings)
    assert rendered < pull_request < plan
    assert "inference/llama-disagg/" in out[rendered:pull_request]
    assert "1 file changed" in out[pull_request:plan]
    plan_text = out[plan:]
    assert "OUTAGE of decode" in plan_text
    assert "Fix:" in plan_text and "podCliqueScalingGroups[decode]" in plan_text
    # The PR is a real branch of the demo's repository, next to the rendered one.
    branches = subprocess.run(
        ["git", "--git-dir", str(root / ".demo" / "remote.git"), "branch", "--format=%(refname:short)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    assert sorted(branches) == ["bump-vllm", "main", "rendered"]
