"""The PR-diff workflow cannot run here; check it is well-formed and wired to the CLI's contract.

The github-script body is run under Node against a fake GitHub API to check the sticky-comment
logic (update in place, create missing parts, delete stale parts, leave humans alone) when
Node is installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.diff.markdown import MARKER, part_marker

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "pr-diff.yml"


def _load() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(data, dict)
    return data


def _steps() -> list[dict[str, Any]]:
    (job,) = _load()["jobs"].values()
    steps = job["steps"]
    assert isinstance(steps, list)
    return steps


def _script() -> str:
    (step,) = [s for s in _steps() if str(s.get("uses", "")).startswith("actions/github-script@")]
    return str(step["with"]["script"])


def test_workflow_is_wellformed_and_triggers_on_pull_request() -> None:
    data = _load()
    on = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(on, dict) and "pull_request" in on
    assert data["permissions"] == {"contents": "read", "pull-requests": "write"}
    uses = [s.get("uses", "") for s in _steps()]
    assert any(u.startswith("actions/checkout@") for u in uses)
    assert any(u.startswith("actions/setup-python@") for u in uses)
    checkout = next(s for s in _steps() if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    for step in _steps():
        assert "name" in step or "uses" in step
        assert ("run" in step) != ("uses" in step)


def test_run_step_calls_diff_with_the_cli_contract() -> None:
    run = next(s["run"] for s in _steps() if "grove-gitops diff" in s.get("run", ""))
    assert re.search(r"grove-gitops diff --repo \. \"\$base\" \"\$HEAD_SHA\"", run)
    for option in ('--source-path "$SOURCE_PATH"', '--key "$DIFF_KEY"', "--out diff.md", "--max-chars 60000"):
        assert option in run
    # The error comment written on failure carries the same markers the script looks for.
    assert "echo '<!-- grove-gitops-diff -->'" in run
    assert 'echo "<!-- grove-gitops-diff key=$DIFF_KEY part=1/1 -->"' in run
    bash = shutil.which("bash")
    if bash:
        subprocess.run([bash, "-n"], input=run, text=True, check=True)


def test_script_marker_matches_the_renderer() -> None:
    script = _script()
    assert f"'{MARKER}'" in script
    regex = re.search(r"/(<!-- grove-gitops-diff key=.*? -->)/", script)
    assert regex is not None
    js_regex = regex.group(1).replace("\\/", "/").replace("\\d", r"\d")
    assert re.fullmatch(js_regex, part_marker("eu-1.prod", 2, 3))


NODE_HARNESS = r"""
const fs = require('fs');
const state = JSON.parse(process.env.STATE);
let nextId = 1000;
const log = [];
const github = {
  paginate: async (fn, args) => state.comments,
  rest: { issues: {
    listComments: 'listComments',
    createComment: async (a) => { log.push(['create', a.body]); },
    updateComment: async (a) => { log.push(['update', a.comment_id, a.body]); },
    deleteComment: async (a) => { log.push(['delete', a.comment_id]); },
  } },
};
const context = { repo: { owner: 'o', repo: 'r' }, payload: { pull_request: { number: 7 } } };
const core = { info: () => {}, setFailed: (m) => { log.push(['failed', m]); } };
(async () => {
  process.chdir(process.env.WORKDIR);
  const fn = new (Object.getPrototypeOf(async function () {}).constructor)(
    'require', 'github', 'context', 'core', process.env.SCRIPT);
  await fn(require, github, context, core);
  console.log(JSON.stringify(log));
})().catch((e) => { console.error(e); process.exit(3); });
"""


def _comment(cid: int, body: str, bot: bool = True) -> dict[str, Any]:
    return {"id": cid, "body": body, "user": {"type": "Bot" if bot else "User"}}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_sticky_comment_logic_under_node(tmp_path: Path) -> None:
    def part(i: int, n: int, text: str, key: str = "default") -> str:
        return f"{MARKER}\n{part_marker(key, i, n)}\n{text}"

    (tmp_path / "diff.1.md").write_text(part(1, 2, "new one"))
    (tmp_path / "diff.2.md").write_text(part(2, 2, "same two"))
    (tmp_path / "diff.md").write_text("the whole thing")
    comments = [
        _comment(1, part(1, 3, "old one")),  # update
        _comment(2, part(2, 3, "same two").replace("part=2/3", "part=2/2")),  # unchanged
        _comment(3, part(3, 3, "stale three")),  # delete
        _comment(4, part(1, 1, "other key", key="eu-1")),  # another cluster's comment: keep
        _comment(5, part(4, 4, "a human quoting us"), bot=False),  # a human: keep
    ]
    env = {
        "STATE": json.dumps({"comments": comments}),
        "SCRIPT": _script(),
        "WORKDIR": str(tmp_path),
        "DIFF_KEY": "default",
        "PATH": "/usr/bin:/bin",
    }
    node = shutil.which("node")
    assert node is not None
    proc = subprocess.run([node, "-e", NODE_HARNESS], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    log = json.loads(proc.stdout)
    assert log == [["update", 1, part(1, 2, "new one")], ["delete", 3]]

    (tmp_path / "diff.2.md").unlink()
    (tmp_path / "diff.1.md").write_text(part(1, 1, "only"))
    env["STATE"] = json.dumps({"comments": []})
    proc = subprocess.run([node, "-e", NODE_HARNESS], env=env, capture_output=True, text=True, check=False)
    assert json.loads(proc.stdout) == [["create", part(1, 1, "only")]]
