"""The PR check against a hostile pull request: it never runs the PR's code, never passes a
head it could not establish as valid, never puts a crash or live Markdown into the comment,
and never posts more than a handful of comments."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli.prcheck import pr_check
from grove_gitops.diff.markdown import MARKER, render_markdown
from grove_gitops.diff.mdescape import ZWSP
from grove_gitops.diff.model import ObjectKey, TreeObject
from grove_gitops.diff.report import Side, build_report
from grove_gitops.diff.split import Block
from grove_gitops.prcheck import compose as compose_module
from grove_gitops.prcheck.capping import MAX_PARTS_CEILING, pack_capped
from grove_gitops.prcheck.compose import Options, compose, read_parts, read_status
from grove_gitops.prcheck.sections import feasibility_blocks
from tests.prcheck.prhelpers import (
    FEASIBILITY_DOC,
    WORKLOAD,
    break_replicas,
    bump_image,
    feasibility_shim,
    git,
    make_repo,
)

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV") or ROOT / ".venv") / "bin"
HOSTILE = "@octocat [click](https://x) ![i](https://y)"


def outside_code(md: str) -> str:
    """The comment's text outside fenced blocks and inline code spans (where Markdown, mentions
    and links are not processed)."""
    md = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1[ \t]*$", "", md)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md)


def assert_inert(md: str) -> None:
    text = outside_code(md)
    assert not re.search(r"@\w", text), text
    assert "](" not in text and "![" not in text and "://" not in text.replace("](https://", ""), text
    # the only HTML comments are our own markers, at the top
    assert [m for m in re.findall(r"<!--.*?-->", text)] == re.findall(r"<!--.*?-->", md.split("\n## ", 1)[0]), text


# -- item 1: the PR's own grove_gitops is never run ------------------------------------------

EVIL_INIT = """\
import pathlib, sys
pathlib.Path({marker!r}).write_text("imported from the PR: " + " ".join(sys.argv))
"""
EVIL_MAIN = """\
import json, pathlib
pathlib.Path({marker!r}).write_text("ran the PR's code")
print(json.dumps({{"ok": True, "problems": []}}))
"""


def evil_pr(tmp_path: Path) -> tuple[Path, str, str, Path]:
    """The issue's PR: head adds ``grove_gitops/__init__.py`` and ``__main__.py`` that report
    "valid", next to a manifest that is not. (repo, base, head, marker)"""
    repo, base, _ = make_repo(tmp_path, break_replicas)
    marker = tmp_path / "pwned"
    git(repo, "checkout", "-q", "pr")
    pkg = repo / "grove_gitops"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(EVIL_INIT.format(marker=str(marker)))
    (pkg / "__main__.py").write_text(EVIL_MAIN.format(marker=str(marker)))
    (repo / "sitecustomize.py").write_text(EVIL_INIT.format(marker=str(marker)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "replace the tool")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", head)  # the Action's checkout: the PR's tree is the working directory
    return repo, base, head, marker


def test_the_pr_check_never_runs_a_grove_gitops_the_pr_adds(tmp_path: Path) -> None:
    """Run and verdict as the Action runs them: subprocesses whose working directory is the
    PR's checkout. The PR's package must never be imported and the invalid head must fail."""
    repo, base, head, marker = evil_pr(tmp_path)
    out = tmp_path / "out"
    # a GitHub runner's environment: GITHUB_ACTIONS=true makes pr-check print workflow commands
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "GITHUB_ACTIONS": "true"}
    run = subprocess.run(
        [str(VENV_BIN / "grove-gitops"), "pr-check", "run", "--repo", ".", "--base", base, "--head", head,
         "--source-path", "deploy", "--out-dir", str(out)],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert not marker.exists(), marker.read_text()
    assert run.returncode == 0, run.stderr
    assert f"::error file={WORKLOAD}," in run.stdout  # the real validate found the bad replicas
    status = read_status(out)
    assert status.errors >= 1 and status.diff == "head-invalid"
    verdict = subprocess.run(
        [str(VENV_BIN / "grove-gitops"), "pr-check", "verdict", "--fail-on", "error", "--out-dir", str(out)],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert verdict.returncode == 1
    assert "head's source tree does not render" in verdict.stdout
    assert not marker.exists()


def test_the_default_command_is_isolated_from_the_working_directory() -> None:
    assert (sys.executable, "-I", "-m", "grove_gitops") == compose_module.DEFAULT_CLI


def test_a_head_that_does_not_render_fails_even_when_validate_says_it_is_valid(tmp_path: Path) -> None:
    """A lying or broken validate (exit 0, no problems) and a head the diff cannot render:
    the status says head-invalid and the verdict fails (it passed before)."""
    repo, base, head = make_repo(tmp_path, break_replicas)
    liar = tmp_path / "liar.py"
    liar.write_text("import json\nprint(json.dumps({'ok': True, 'problems': []}))\n")
    out = tmp_path / "out"
    args = ["run", "--repo", str(repo), "--base", base, "--head", head, "--source-path", "deploy"]
    result = CliRunner().invoke(pr_check, [*args, "--cli", f"{sys.executable} {liar}", "--out-dir", str(out)])
    assert result.exit_code == 0, result.output
    status = read_status(out)
    assert status.errors == 0 and status.diff == "head-invalid"
    for fail_on in ("error", "infeasible"):
        verdict = CliRunner().invoke(pr_check, ["verdict", "--fail-on", fail_on, "--out-dir", str(out)])
        assert verdict.exit_code == 1, verdict.output
        assert "head's source tree does not render" in verdict.output


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ('import sys\nprint(\'{"ok": false, "problems": []}\')\nsys.exit(1)\n', "exit 1 but no error"),
        ('import sys\nprint(\'{"ok": false, "problems": []}\')\nsys.exit(0)\n', "exit 0 but no error"),
        (
            'import sys\nprint(\'{"ok": true, "problems": [{"message": "m", "severity": "error"}]}\')\n',
            "exit 0 but an error",
        ),
        ('print(\'{"ok": true, "problems": 5}\')\n', "no JSON answer"),
    ],
)
def test_a_validate_whose_exit_code_and_answer_disagree_fails_the_check(tmp_path: Path, script: str, why: str) -> None:
    repo, base, head = make_repo(tmp_path, bump_image)
    cli = tmp_path / "validate.py"
    cli.write_text(script)
    out = tmp_path / "out"
    args = ["run", "--repo", str(repo), "--base", base, "--head", head, "--source-path", "deploy"]
    result = CliRunner().invoke(pr_check, [*args, "--cli", f"{sys.executable} {cli}", "--out-dir", str(out)])
    assert result.exit_code == 1 and why in result.output
    assert read_status(out).diff == "failed"
    assert CliRunner().invoke(pr_check, ["verdict", "--out-dir", str(out)]).exit_code == 1


# -- item 4: no exception text in a comment ---------------------------------------------------

CRASH = """\
import sys
if sys.argv[1:2] == [{command!r}]:
    raise KeyError("spec")  # a traceback naming this runner's paths
from grove_gitops.cli import main
main(prog_name="grove-gitops")
"""


@pytest.mark.parametrize("command", ["validate", "feasibility"])
def test_a_sub_command_that_crashes_is_a_generic_line_in_the_comment(tmp_path: Path, command: str) -> None:
    repo, base, head = make_repo(tmp_path, bump_image)
    cli = tmp_path / "crashing_grove_gitops.py"
    cli.write_text(CRASH.format(command=command))
    out = tmp_path / "out"
    args = ["run", "--repo", str(repo), "--base", base, "--head", head, "--source-path", "deploy"]
    result = CliRunner().invoke(pr_check, [*args, "--cli", f"{sys.executable} {cli}", "--out-dir", str(out)])
    comment = html.unescape("".join(read_parts(out)))
    assert "Traceback" not in comment and "KeyError" not in comment and str(tmp_path) not in comment
    assert "failed on head (exit 1); see the job log." in comment
    assert "KeyError" in result.output  # the details are in the job log
    if command == "validate":
        assert result.exit_code == 1 and comment.startswith(MARKER)
        assert CliRunner().invoke(pr_check, ["verdict", "--out-dir", str(out)]).exit_code == 1
    else:  # the diff is still reported; only the feasibility section says it failed
        assert result.exit_code == 0
        assert "⚠️ Not checked: grove-gitops feasibility failed on head (exit 1); see the job log." in comment
        assert (
            CliRunner().invoke(pr_check, ["verdict", "--fail-on", "infeasible", "--out-dir", str(out)]).exit_code == 1
        )
        assert CliRunner().invoke(pr_check, ["verdict", "--fail-on", "error", "--out-dir", str(out)]).exit_code == 0


def test_a_crash_inside_the_check_is_a_generic_line_in_the_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E.g. the KeyError: 'spec' a pass-through PodGang once raised in render: the traceback
    goes to the job log, the comment says only that the check failed."""
    repo, base, head = make_repo(tmp_path, bump_image)

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyError("spec")

    monkeypatch.setattr(compose_module, "load_sides", crash)
    out = tmp_path / "out"
    args = ["run", "--repo", str(repo), "--base", base, "--head", head, "--source-path", "deploy"]
    result = CliRunner().invoke(pr_check, [*args, "--out-dir", str(out)])
    assert result.exit_code == 1
    assert "Traceback" in result.output and "KeyError" in result.output  # the job log
    comment = html.unescape(read_parts(out)[0])
    assert comment.startswith(MARKER) and "internal error; see the job log." in comment
    assert "KeyError" not in comment and "Traceback" not in comment and "/" not in comment.split("\n## ")[1]
    assert CliRunner().invoke(pr_check, ["verdict", "--fail-on", "never", "--out-dir", str(out)]).exit_code == 0
    assert CliRunner().invoke(pr_check, ["verdict", "--out-dir", str(out)]).exit_code == 1


def test_a_git_error_names_no_runner_path_in_the_comment(tmp_path: Path) -> None:
    repo, base, _ = make_repo(tmp_path, bump_image)
    out = tmp_path / "out"
    args = ["run", "--repo", str(repo), "--base", base, "--head", "no-such-ref", "--out-dir", str(out)]
    result = CliRunner().invoke(pr_check, args)
    assert result.exit_code == 1 and "no-such-ref" in result.output
    (comment,) = read_parts(out)
    assert str(tmp_path) not in comment and "see the job log" in comment


# -- item 4: Markdown from the PR is inert -----------------------------------------------------


def test_validation_messages_from_the_pr_are_inert_in_the_comment(tmp_path: Path) -> None:
    hostile = HOSTILE.replace('"', "")
    repo, base, head = make_repo(tmp_path, lambda s: s.replace("  replicas: 1", f'  replicas: "{hostile}"', 1))
    result = compose(Options(repo=repo, base=base, head=head, source_path="deploy"))
    assert result.status.diff == "head-invalid"
    (text,) = result.parts
    assert "octocat" in text  # the message is there, shown as typed ...
    assert_inert(text)  # ... but mentions, links and images are dead


def test_feasibility_reasons_and_node_labels_from_the_pr_are_inert(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(FEASIBILITY_DOC))
    doc["gangs"][0]["reason"] = f"{HOSTILE} <!-- grove-gitops-diff key=default part=9/9 --> # head\n# two"
    doc["gangs"][1]["name"] = "_em_ **b** `x`"
    doc["domains"][0][f"{HOSTILE}/gpu"] = "@team"
    doc["heuristic"] = HOSTILE
    text = "".join(b.text for b in feasibility_blocks(doc))
    assert_inert(text)
    assert "<!-- grove-gitops-diff key=default part=9/9" not in text
    assert not re.search(r"(?m)^#", text.replace("### Gang feasibility", ""))
    assert "&#95;em&#95; &#42;&#42;b&#42;&#42; &#96;x&#96;" in text
    repo, base, head = make_repo(tmp_path, bump_image)
    result = compose(
        Options(repo=repo, base=base, head=head, source_path="deploy", cli=feasibility_shim(tmp_path, doc, 3))
    )
    assert_inert(result.parts[0])


def test_render_warnings_and_object_names_in_the_diff_are_inert() -> None:
    key = ObjectKey("ml/_resources", "v1", "ConfigMap", "ml", HOSTILE)
    old = TreeObject(key, "ml/_resources/cm.yaml", "data: 1\n", {"data": 1})
    new = TreeObject(key, "ml/_resources/cm.yaml", "data: 2\n", {"data": 2})
    base = Side("base", {key: old})
    head = Side("head", {key: new}, warnings=[f"{HOSTILE} <!-- grove-gitops-diff key=x part=1/1 -->"])
    (text,) = render_markdown(build_report(base, head), title=f"title {HOSTILE}")
    assert text.count("<!-- grove-gitops-diff") == 2  # ours only
    assert f"@{ZWSP}octocat" in text
    assert_inert(text)


# -- item 4: at most a handful of comments ----------------------------------------------------


def configmaps_repo(tmp_path: Path, n: int, size: int) -> tuple[Path, str, str]:
    """A PR that changes ``n`` ConfigMaps of about ``size`` characters each."""
    repo = tmp_path / "cms"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    cms = repo / "deploy" / "config"
    cms.mkdir(parents=True)

    def write(version: str) -> None:
        for i in range(n):
            lines = "".join(f"    line {j}: {version}-{j}\n" for j in range(size // 20))
            (cms / f"cm-{i}.yaml").write_text(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: apps}}\ndata:\n  big: |\n{lines}"
            )

    write("old")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    write("new")
    git(repo, "commit", "-qam", "head")
    return repo, base, git(repo, "rev-parse", "HEAD")


def test_three_hundred_changed_configmaps_make_a_handful_of_comments(tmp_path: Path) -> None:
    repo, base, head = configmaps_repo(tmp_path, 300, 2500)
    out = tmp_path / "out"
    summary = tmp_path / "summary.md"
    env = {
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/workloads",
        "GITHUB_RUN_ID": "123",
    }
    args = ["run", "--repo", str(repo), "--base", base, "--head", head, "--source-path", "deploy"]
    result = CliRunner().invoke(pr_check, [*args, "--max-chars", "20000", "--out-dir", str(out)], env=env)
    assert result.exit_code == 0, result.output
    parts = read_parts(out)
    status = read_status(out)
    assert len(parts) == status.parts == 5 and status.full_parts > 30
    for i, text in enumerate(parts, start=1):
        assert len(text) < 20000 and f"part={i}/5 -->" in text
        assert text.count("<details>") == text.count("</details>") and text.count("```") % 2 == 0
    assert (
        "⚠️ **Report cut:**" in parts[-1]
        and "[this workflow run](https://github.com/acme/workloads/actions/runs/123)" in parts[-1]
    )
    assert all("Report cut" not in p for p in parts[:-1])
    full = (out / "report.md").read_text()
    assert full.count("<!-- grove-gitops-diff key=default part=") == status.full_parts
    assert "cm-299" in full and "cm-299" not in "".join(parts)
    # the whole report is over a job summary's 1 MiB: the summary holds the posted parts
    assert len(full.encode()) > 1_000_000 and summary.read_text() == "\n\n".join(parts)
    assert "cut from" in result.output


def test_max_parts_is_an_input_with_a_ceiling(tmp_path: Path) -> None:
    repo, base, head = configmaps_repo(tmp_path, 30, 2500)
    out = tmp_path / "out"
    args = [
        "run",
        "--repo",
        str(repo),
        "--base",
        base,
        "--head",
        head,
        "--source-path",
        "deploy",
        "--out-dir",
        str(out),
    ]
    summary = tmp_path / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    result = CliRunner().invoke(pr_check, [*args, "--max-chars", "5000", "--max-parts", "2"], env=env)
    assert result.exit_code == 0, result.output
    parts = read_parts(out)
    assert "cm-29" in summary.read_text() and "cm-29" not in "".join(parts)  # the whole report
    assert len(parts) == 2 and "Report cut" in parts[1] and "these 2 comment(s)" in parts[1]
    assert "/actions/runs/" not in parts[1]  # no run URL outside a runner
    result = CliRunner().invoke(pr_check, [*args, "--max-parts", str(MAX_PARTS_CEILING + 1)])
    assert result.exit_code == 2 and "--max-parts" in result.output


def test_pack_capped_keeps_blocks_whole() -> None:
    lines = ["+x\n" * (i % 7 * 40) for i in range(200)]
    blocks = [
        Block(f"<details>\n\n```diff\n{lines[i]}```\n</details>\n\n", f"s{i // 5}", "### cont\n\n") for i in range(200)
    ]

    def header(i: int, n: int) -> str:
        return f"{MARKER}\npart {i}/{n}\n"

    def note(shown: int, total: int) -> str:
        return f"\ncut: {shown} of {total}\n"

    for cap in (1, 2, 5, MAX_PARTS_CEILING):
        parts, full = pack_capped(blocks, 3000, header, cap, note)
        assert len(parts) <= cap < len(full)
        shown = int(re.search(r"cut: (\d+) of 200", parts[-1]).group(1))  # type: ignore[union-attr]
        assert shown > 0
        for text in parts:
            assert len(text) < 3000 and text.count("<details>") == text.count("</details>")
            assert text.count("```") % 2 == 0
    small, full = pack_capped(blocks[:2], 3000, header, 5, note)
    assert small == full and "cut:" not in "".join(small)
    with pytest.raises(ValueError, match="max_parts"):
        pack_capped(blocks, 3000, header, MAX_PARTS_CEILING + 1, note)


def test_the_cap_shrinks_each_oversized_block_once_per_budget() -> None:
    """The cap packs the blocks again per step of its search; an object diff's shrink is a
    search of its own (300 oversized ConfigMap diffs took 73 s instead of 12 s without this)."""
    calls: dict[int, list[int]] = {}

    def block(i: int) -> Block:
        def shrink(budget: int) -> str:
            calls.setdefault(i, []).append(budget)
            return "y" * (budget - 10) + "\n"

        return Block("x" * 5000 + "\n", f"s{i}", "", shrink)

    def header(i: int, n: int) -> str:
        return f"{MARKER}\npart {i}/{n}\n"

    parts, full = pack_capped([block(i) for i in range(300)], 3000, header, 5, lambda s, t: f"\ncut {s}/{t}\n")
    assert len(parts) == 5 and len(full) == 300
    assert all(len(budgets) == len(set(budgets)) <= 2 for budgets in calls.values()), calls


def test_a_sub_command_that_hangs_is_ended_as_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every input is bounded, but a hang the bounds missed must not hold the job for hours:
    the sub-command is ended after ``SUB_COMMAND_TIMEOUT_S`` and counts as a failed check."""
    from grove_gitops.prcheck import compose

    monkeypatch.setattr(compose, "SUB_COMMAND_TIMEOUT_S", 0.5)
    hang = (sys.executable, "-c", "import time; time.sleep(60)")
    code, doc, stderr = compose._run_cli(hang, ["validate", "x"], tmp_path)
    assert (code, doc) == (compose.TIMED_OUT, None)
    assert "validate did not finish" in stderr


def test_a_report_directory_that_cannot_be_written_is_one_error_line(tmp_path: Path) -> None:
    """OUT_DIR below a regular file: ``error: OUT_DIR: cannot write the report: ...``, exit 1,
    no traceback, whether the check ran (a report) or could not run (the failure part)."""
    repo, base, head = make_repo(tmp_path, bump_image)
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out"
    for ref in (head, "no-such-ref"):
        args = ["run", "--repo", str(repo), "--base", base, "--head", ref, "--source-path", "deploy"]
        result = CliRunner().invoke(pr_check, [*args, "--out-dir", str(out)])
        assert result.exit_code == 1, result.output
        assert f"{out}: cannot write the report: Not a directory" in result.output
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
