"""action.yml and the workflow that dogfoods it: well-formed, wired to commands that exist,
and its steps run end to end on a real repository against the fake GitHub API.

`act` would run the Action in Docker with runner images from a container registry; neither
the images nor act's binary can be installed here (docs/diff.md), so the steps' bash runs
under :mod:`tests.prcheck.actionrunner` instead.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from grove_gitops.cli import main
from tests.prcheck.actionrunner import ACTION, ActionRun, load_action, run_action
from tests.prcheck.fakegithub import HUMAN, FakeGitHub
from tests.prcheck.prhelpers import WORKLOAD, break_replicas, bump_image, git, make_repo

ROOT = ACTION.parent
WORKFLOW = ROOT / ".github" / "workflows" / "pr-diff.yml"
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV") or ROOT / ".venv") / "bin"


def _steps() -> list[dict[str, Any]]:
    steps = load_action()["runs"]["steps"]
    assert isinstance(steps, list)
    return steps


def test_action_is_a_composite_with_the_documented_inputs() -> None:
    action = load_action()
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    for name in ("source-path", "format", "fail-on", "key", "github-token", "version", "max-chars", "comment"):
        assert "description" in inputs[name], name
    assert inputs["fail-on"]["default"] == "error"
    assert inputs["github-token"]["default"] == "${{ github.token }}"
    assert inputs["base"]["default"] == "${{ github.event.pull_request.base.sha }}"
    ids = {s.get("id") for s in _steps()}
    for name, spec in action["outputs"].items():
        m = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", spec["value"])
        assert m and m.group(1) in ids, name


#: How every step runs grove-gitops: the install step's interpreter, isolated.
INVOCATION = '"$GROVE_GITOPS_PYTHON" -I -m grove_gitops '


def _grove_commands(run: str) -> list[list[str]]:
    joined = run.replace("\\\n", " ")
    return [shlex.split(line.strip())[4:] for line in joined.splitlines() if line.strip().startswith(INVOCATION)]


def test_steps_call_only_commands_and_options_that_exist() -> None:
    seen = []
    for step in _steps():
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@"), step["uses"]
            continue
        run = step["run"]
        assert step["shell"] == "bash"
        # inputs reach the shell through env only: no expression is ever pasted into the script
        assert "${{" not in run, step.get("name")
        subprocess.run(["bash", "-n"], input=run, text=True, check=True)
        for argv in _grove_commands(run):
            cmd: click.Command = main
            while isinstance(cmd, click.Group) and argv and not argv[0].startswith("-"):
                sub = cmd.get_command(click.Context(cmd), argv[0])
                assert sub is not None, f"grove-gitops has no command {argv[0]!r}"
                cmd, argv = sub, argv[1:]
            known = {o for p in cmd.params for o in p.opts}
            for arg in argv:
                if arg.startswith("--"):
                    assert arg in known, f"{cmd.name}: no option {arg}"
            seen.append(cmd.name)
    assert seen == ["run", "post", "verdict"]


def _fake_python(tmp: Path) -> Path:
    """A ``python`` whose ``-m venv DIR`` makes a venv whose python logs its arguments."""
    bin_dir = tmp / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(
        '#!/bin/bash\nset -e\n[ "$1 $2 $3" = "-I -m venv" ] || exit 9\nmkdir -p "$4/bin"\n'
        'printf \'#!/bin/bash\\necho "$PWD $@" >> "%s"\\n\' "$4/pip.log" > "$4/bin/python"\nchmod +x "$4/bin/python"\n'
    )
    (bin_dir / "python").chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("version", ["", "0.2.0"])
def test_install_step_installs_the_checkout_or_the_pinned_version(tmp_path: Path, version: str) -> None:
    step = next(s for s in _steps() if s.get("id") == "install")
    temp = tmp_path / "runner"
    temp.mkdir()
    env = {
        "PATH": f"{_fake_python(tmp_path)}:/usr/bin:/bin",
        "RUNNER_TEMP": str(temp),
        "GITHUB_PATH": str(tmp_path / "github_path"),
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        "ACTION_PATH": "/actions/acme/grove-gitops/v1",
        "GROVE_GITOPS_VERSION": version,
    }
    assert step["env"] == {"ACTION_PATH": "${{ github.action_path }}", "GROVE_GITOPS_VERSION": "${{ inputs.version }}"}
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    subprocess.run(["bash", "-c", step["run"]], env=env, check=True, cwd=checkout)
    log = (temp / "grove-gitops-venv" / "pip.log").read_text()
    wanted = f"grove-gitops=={version}" if version else "/actions/acme/grove-gitops/v1"
    # isolated, and run away from the checkout
    assert log == f"{temp} -I -m pip install --quiet --disable-pip-version-check {wanted}\n"
    assert (tmp_path / "github_path").read_text() == f"{temp}/grove-gitops-venv/bin\n"
    assert (tmp_path / "github_output").read_text() == f"python={temp}/grove-gitops-venv/bin/python\n"


def _run(
    tmp: Path,
    fake: FakeGitHub,
    repo: Path,
    base: str,
    head: str,
    extra_env: dict[str, str] | None = None,
    **inputs: str,
) -> ActionRun:
    runner = tmp / f"runner-{len(list(tmp.glob('runner-*')))}"
    runner.mkdir()
    event = {"pull_request": {"number": 7, "base": {"sha": base}, "head": {"sha": head}}}
    (runner / "event.json").write_text(json.dumps(event))
    env = {
        "PATH": "/usr/bin:/bin",  # grove-gitops is not on PATH: the steps take the install step's interpreter
        "HOME": str(tmp),
        "RUNNER_TEMP": str(runner),
        "GITHUB_EVENT_PATH": str(runner / "event.json"),
        "GITHUB_REPOSITORY": fake.repo,
        "GITHUB_API_URL": fake.url,
        "GITHUB_STEP_SUMMARY": str(runner / "summary.md"),
    }
    extra_env = dict(extra_env or {})
    env["PATH"] = extra_env.pop("PATH_PREFIX", "") + env["PATH"]
    github = {"action_path": str(ROOT), "token": fake.token, "event": event}
    installed = {"install": {"python": str(VENV_BIN / "python")}}
    return run_action({"source-path": "deploy", **inputs}, github, {**env, **extra_env}, repo, preset=installed)


@pytest.mark.skipif(not (VENV_BIN / "grove-gitops").exists(), reason="grove-gitops is not installed in the venv")
def test_the_action_end_to_end_on_two_pushes(tmp_path: Path, fake_github: FakeGitHub) -> None:
    everything = lambda s: s.replace("image: ", "image: r.example.com/")  # noqa: E731
    repo, base, head = make_repo(tmp_path, everything)
    human = fake_github.add(7, "Looks big. Quoting the bot:\n<!-- grove-gitops-diff -->", HUMAN)

    # small parts, and the ceiling of parts, so that neither push is cut by the cap
    sizes = {"max-chars": "8000", "max-parts": "10"}
    first = _run(tmp_path, fake_github, repo, base, head, **sizes)
    assert first.succeeded, [(s.id, s.stderr[-500:]) for s in first.steps]
    n = int(first.outputs["parts"])
    assert n < 10
    # the examples hold a NodeInventory that both gangs fit
    assert n > 2 and first.outputs["errors"] == "0" and first.outputs["feasibility"] == "checked"
    assert first.outputs["infeasible"] == "false"
    bodies = fake_github.bodies(7)[1:]
    assert len(bodies) == n and all(f"part={i}/{n}" in b for i, b in enumerate(bodies, start=1))
    assert any("gang(s) fit the node inventory" in b for b in bodies)
    ids = sorted(fake_github.comments)

    # second push: only one image changes now; the set shrinks in place
    git(repo, "checkout", "-q", "pr")
    original = git(repo, "show", f"{base}:{WORKLOAD}") + "\n"
    (repo / WORKLOAD).write_text(bump_image(original))
    git(repo, "commit", "-qam", "smaller")
    head2 = git(repo, "rev-parse", "HEAD")
    second = _run(tmp_path, fake_github, repo, base, head2, **sizes)
    assert second.succeeded
    m = int(second.outputs["parts"])
    assert m < n
    assert sorted(fake_github.comments) == ids[: m + 1]  # updated in place, the rest deleted
    assert fake_github.comments[human]["body"].startswith("Looks big.")
    assert all(f"part={i}/{m}" in b for i, b in enumerate(fake_github.bodies(7)[1:], start=1))
    assert head2[:7] in fake_github.bodies(7)[1]
    assert Path(second.outputs["report-dir"], "comment.1.md").read_text() == fake_github.bodies(7)[1]


@pytest.mark.skipif(not (VENV_BIN / "grove-gitops").exists(), reason="grove-gitops is not installed in the venv")
@pytest.mark.parametrize(("fail_on", "passes"), [("error", False), ("never", True)])
def test_the_action_on_a_head_that_does_not_render(
    tmp_path: Path, fake_github: FakeGitHub, fail_on: str, passes: bool
) -> None:
    repo, base, head = make_repo(tmp_path, break_replicas)
    run = _run(tmp_path, fake_github, repo, base, head, **{"fail-on": fail_on, "format": "text"})
    check = run.step("check")
    assert check.outcome == "success"
    line = (repo / WORKLOAD).read_text().split("\n").index("  replicas: -1") + 1
    assert f"::error file={WORKLOAD},line={line},title=grove-gitops validate%3A spec.replicas::" in check.stdout
    assert run.step("step3").outcome == "success"  # the comment is posted either way
    (body,) = fake_github.bodies(7)
    assert "does not render at head" in body
    assert run.steps[-1].outcome == ("success" if passes else "failure")
    if not passes:
        assert "::error::grove-gitops PR check (fail-on: error): head's source tree has" in run.steps[-1].stdout


@pytest.mark.skipif(not (VENV_BIN / "grove-gitops").exists(), reason="grove-gitops is not installed in the venv")
def test_the_action_on_a_fork_pr_warns_and_keeps_the_summary(tmp_path: Path, fake_github: FakeGitHub) -> None:
    repo, base, head = make_repo(tmp_path, bump_image)
    fake_github.deny_writes = True
    run = _run(tmp_path, fake_github, repo, base, head)
    assert run.succeeded
    assert run.step("step3").stdout.startswith("::warning::cannot comment on the PR")
    summary = (Path(run.outputs["report-dir"]).parents[1] / "summary.md").read_text()
    assert "registry.example.com/" in summary


def test_pr_diff_workflow_dogfoods_the_local_action() -> None:
    data = yaml.safe_load(WORKFLOW.read_text())
    on = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(on, dict) and "pull_request" in on
    assert data["permissions"] == {"contents": "read", "pull-requests": "write"}
    (job,) = data["jobs"].values()
    steps = job["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@") and steps[0]["with"]["fetch-depth"] == 0
    (local,) = [s for s in steps if s.get("uses") == "./"]
    assert set(local["with"]) <= set(load_action()["inputs"])
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["with"]["path"] == f"${{{{ steps.{local['id']}.outputs.report-dir }}}}"
    # the warning about fork PRs and pull_request_target stays with the workflow
    assert "Fork PRs get a read-only token" in WORKFLOW.read_text()
    assert "pull_request_target" in WORKFLOW.read_text()


@pytest.mark.skipif(not (VENV_BIN / "grove-gitops").exists(), reason="grove-gitops is not installed in the venv")
@pytest.mark.parametrize(
    ("fail_on", "passes"), [("infeasible", False), ("error", True), ("outage,infeasible", False), ("outage", True)]
)
def test_the_action_with_a_gang_that_no_longer_fits(
    tmp_path: Path, fake_github: FakeGitHub, fail_on: str, passes: bool
) -> None:
    """The real ``feasibility`` command end to end: head shrinks the racks to one node each."""
    repo, base, head = make_repo(tmp_path, lambda s: s)
    git(repo, "checkout", "-q", "pr")
    inventory = repo / "deploy" / "cluster" / "node-inventory.yaml"
    inventory.write_text(inventory.read_text().replace("count: 4", "count: 1"))
    git(repo, "commit", "-qam", "smaller cluster")
    head = git(repo, "rev-parse", "HEAD")
    run = _run(tmp_path, fake_github, repo, base, head, **{"fail-on": fail_on})
    assert run.step("check").outcome == "success"
    assert run.outputs["feasibility"] == "checked" and run.outputs["infeasible"] == "true"
    assert any("do not fit** the node inventory" in b for b in fake_github.bodies(7))
    assert run.succeeded is passes
    if not passes:  # the gate's own reason, not a usage error of the list
        assert "): a gang does not fit the node inventory" in run.steps[-1].stdout


def _scripts() -> list[tuple[str, str]]:
    return [(str(s.get("id") or s.get("name")), str(s["run"])) for s in _steps() if "run" in s]


def test_no_step_runs_python_with_the_checkout_on_sys_path() -> None:
    """The steps run in the PR's checkout: every python is isolated (-I), grove-gitops is the
    install step's interpreter by absolute path, never a PATH lookup or `-m` without -I."""
    calls = 0
    for sid, run in _scripts():
        joined = run.replace("\\\n", " ")
        for line in joined.splitlines():
            code = line.split("#", 1)[0].strip()
            words = shlex.split(code) if code and not code.startswith(("case ", "echo ")) else []
            for i, word in enumerate(words):
                if re.search(r"(^|/)python[0-9.]*$", word) or word == "$GROVE_GITOPS_PYTHON":
                    assert words[i + 1] == "-I", (sid, line)
                    calls += 1
                assert word != "grove-gitops", (sid, line)  # no PATH lookup of the console script
            if "-m" in words:
                assert "-I" in words[: words.index("-m")], (sid, line)
        if sid != "install":
            assert INVOCATION in run and 'case "$GROVE_GITOPS_PYTHON" in /*)' in run, sid
    assert calls == 6  # venv, pip (twice), run, post, verdict
    install = next(run for sid, run in _scripts() if sid == "install")
    assert install.index('cd "$RUNNER_TEMP"') < install.index("python -I -m venv")
    steps = {s.get("id") or s.get("name"): s for s in _steps()}
    for step in steps.values():
        if "run" in step and step.get("id") != "install":
            assert step["env"]["GROVE_GITOPS_PYTHON"] == "${{ steps.install.outputs.python }}"


@pytest.mark.skipif(not (VENV_BIN / "python").exists(), reason="no venv")
def test_the_action_on_a_pr_that_replaces_the_tool(tmp_path: Path, fake_github: FakeGitHub) -> None:
    """The issue's PR through the whole Action: head adds grove_gitops/__init__.py and
    __main__.py that say "valid" (and a sitecustomize.py), next to an invalid manifest; a
    PATH and a PYTHONPATH pointing into the checkout on top. Nothing of the PR runs, the
    comment says head does not render, the verdict fails."""
    from tests.prcheck.test_prcheck_hardening import evil_pr

    repo, base, head, marker = evil_pr(tmp_path)
    evil_bin = tmp_path / "evil-bin"
    evil_bin.mkdir()
    for name in ("grove-gitops", "python", "python3"):
        (evil_bin / name).write_text(
            f'#!/bin/bash\necho "$0 $*" >> {marker}\necho \'{{"ok": true, "problems": []}}\'\n'
        )
        (evil_bin / name).chmod(0o755)
    run = _run(tmp_path, fake_github, repo, base, head, {"PATH_PREFIX": f"{evil_bin}:{repo}:", "PYTHONPATH": "."})
    assert not marker.exists(), marker.read_text()
    check = run.step("check")
    assert check.outcome == "success", check.stderr[-2000:]
    assert f"::error file={WORKLOAD}," in check.stdout
    assert run.outputs["errors"] != "0"
    (body,) = fake_github.bodies(7)
    assert "does not render at head" in body
    assert run.steps[-1].outcome == "failure"
    assert "head's source tree" in run.steps[-1].stdout
