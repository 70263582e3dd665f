"""Run a composite action's ``run`` steps the way the Actions runner does, for the tests.

Not a general runner: it knows the expression forms action.yml uses (``${{ inputs.x }}``,
``${{ github.… }}``, ``${{ steps.id.outputs.x }}`` and ``if:`` terms joined by ``&&`` among
``always()``, ``A == 'lit'``, ``A != 'lit'``), gives every step a fresh ``GITHUB_OUTPUT``
file, applies ``GITHUB_PATH`` additions to later steps, and records each step's outcome.
An unknown expression fails the test rather than being guessed at.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ACTION = Path(__file__).resolve().parents[2] / "action.yml"
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_COMPARE = re.compile(r"^(.+?)\s*(==|!=)\s*'([^']*)'$")


def load_action(path: Path = ACTION) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


@dataclass
class StepRun:
    id: str
    name: str
    outcome: str  # success, failure, skipped
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]

    def step(self, sid: str) -> StepRun:
        return next(s for s in self.steps if s.id == sid)

    @property
    def succeeded(self) -> bool:
        return all(s.outcome != "failure" for s in self.steps)


def _lookup(context: dict[str, Any], expr: str) -> Any:
    value: Any = context
    for part in expr.split("."):
        if not isinstance(value, dict) or part not in value:
            raise AssertionError(f"expression {expr!r}: {part!r} is not in the test runner's context")
        value = value[part]
    return value


def substitute(text: str, context: dict[str, Any]) -> str:
    return _EXPR.sub(lambda m: str(_lookup(context, m.group(1)) or ""), text)


def condition(expr: str | None, context: dict[str, Any], failed: bool) -> bool:
    if expr is None:
        return not failed
    expr = _EXPR.sub(lambda m: m.group(1), str(expr)).strip()
    terms = [t.strip() for t in expr.split("&&")]
    result = True if "always()" in terms else not failed
    for term in terms:
        if term in ("always()", "success()"):
            continue
        m = _COMPARE.match(term)
        if not m:
            raise AssertionError(f"if: {term!r} is beyond the test runner")
        lhs = str(_lookup(context, m.group(1).strip()) or "")
        result = result and ((lhs == m.group(3)) == (m.group(2) == "=="))
    return result


def run_action(
    inputs: dict[str, str],
    github: dict[str, Any],
    env: dict[str, str],
    workdir: Path,
    skip: tuple[str, ...] = ("install",),
    action: dict[str, Any] | None = None,
    preset: dict[str, dict[str, str]] | None = None,
) -> ActionRun:
    """Run the action's steps: ``uses`` steps and the step ids in ``skip`` are skipped (the
    test provides what they would: Python, and grove-gitops installed); ``preset`` gives a
    skipped step's outputs (the install step's interpreter)."""
    action = action or load_action()
    context: dict[str, Any] = {"github": github, "steps": {}, "inputs": {}}
    for name, spec in action["inputs"].items():
        context["inputs"][name] = inputs.get(name, substitute(str(spec.get("default", "")), context))
    runner_temp = Path(env["RUNNER_TEMP"])
    path_file = runner_temp / "github_path"
    path_file.touch()
    runs: list[StepRun] = []
    failed = False
    for n, step in enumerate(action["runs"]["steps"]):
        sid = step.get("id", f"step{n}")
        if not condition(step.get("if"), context, failed) or "uses" in step or sid in skip:
            given = (preset or {}).get(sid, {})
            runs.append(StepRun(sid, step.get("name", ""), "skipped", outputs=dict(given)))
            context["steps"][sid] = {"outcome": "success" if given else "skipped", "outputs": dict(given)}
            continue
        assert step.get("shell") == "bash"
        out_file = runner_temp / f"output-{n}"
        out_file.write_text("")
        step_env = {**env, **{k: substitute(str(v), context) for k, v in (step.get("env") or {}).items()}}
        step_env["GITHUB_OUTPUT"] = str(out_file)
        step_env.setdefault("GITHUB_ACTIONS", "true")  # every GitHub runner sets it
        step_env["GITHUB_PATH"] = str(path_file)
        extra = [line for line in path_file.read_text().splitlines() if line]
        step_env["PATH"] = os.pathsep.join([*reversed(extra), env["PATH"]])
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", substitute(step["run"], context)],
            cwd=workdir,
            env=step_env,
            capture_output=True,
            text=True,
            check=False,
        )
        outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if "=" in line)
        outcome = "success" if proc.returncode == 0 else "failure"
        failed = failed or outcome == "failure"
        runs.append(StepRun(sid, step.get("name", ""), outcome, proc.stdout, proc.stderr, outputs))
        context["steps"][sid] = {"outcome": outcome, "outputs": outputs}
    outputs = {name: substitute(str(spec["value"]), context) for name, spec in (action.get("outputs") or {}).items()}
    return ActionRun(runs, outputs)
