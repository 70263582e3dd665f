"""``grove-gitops pr-check``: the steps of the composite Action (``action.yml``).

``run`` composes the report and prints annotations, ``post`` keeps the sticky comments,
``verdict`` applies ``fail-on``; ``annotate`` turns a saved ``validate --output json``
document into annotations on its own. Each step reads the GitHub Actions environment
(``GITHUB_EVENT_PATH``, ``GITHUB_REPOSITORY``, ``GITHUB_API_URL``, ``GITHUB_TOKEN``) with
options to override it, so every step also runs, and is tested, outside a runner.
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import click

from grove_gitops.cli.options import deprecated_format_option, resolve_output
from grove_gitops.errors import GroveGitopsError
from grove_gitops.prcheck.annotations import to_annotations
from grove_gitops.prcheck.capping import DEFAULT_MAX_PARTS, MAX_PARTS_CEILING
from grove_gitops.prcheck.compose import (
    DEFAULT_CLI,
    KEY_RE,
    Options,
    PrCheckError,
    Status,
    compose,
    failure_parts,
    read_parts,
    read_status,
    write_results,
)
from grove_gitops.prcheck.github import DEFAULT_API_URL, GitHub, GitHubError
from grove_gitops.prcheck.sticky import sync
from grove_gitops.prcheck.verdict import FAIL_ON, failures, parse_fail_on
from grove_gitops.prcheck.workflow import add_summary, command, for_this_ci, set_outputs

OUT_DIR = click.option(
    "--out-dir",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Where the comment parts (comment.<i>.md) and status.json go.",
)


def _key(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """The key names a directory and a marker: checked before either is used (exit 2)."""
    if not KEY_RE.match(value):
        raise click.BadParameter("letters, digits, '.', '_' and '-' only (at most 64)")
    return value


KEY_OPTION = click.option(
    "--key", default="default", show_default=True, callback=_key, help="Sticky-comment key (one per source tree)."
)


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def _event() -> dict[str, Any]:
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GroveGitopsError(f"{path}: cannot read the event: {exc}") from exc
    return data if isinstance(data, dict) else {}


@click.group("pr-check")
def pr_check() -> None:
    """The pull-request check of action.yml: diff, plan, feasibility, annotations, sticky comment."""


#: GitHub's limit for one step's job summary is 1 MiB.
SUMMARY_BYTES = 1_000_000
_SERVER_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def run_url() -> str:
    """The workflow run's page (where the summary and the artifacts are), from the runner's
    variables; "" when they are missing or not plainly a URL, a repository and a number."""
    server = os.environ.get("GITHUB_SERVER_URL", "")
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    run_id = os.environ.get("GITHUB_RUN_ID", "")
    if _SERVER_URL.match(server) and _REPOSITORY.match(repo) and run_id.isascii() and run_id.isdigit():
        return f"{server}/{repo}/actions/runs/{int(run_id)}"
    return ""


def _summary(parts: list[str], full: list[str]) -> str:
    """The job summary: the whole report when it fits GitHub's limit, else the posted parts,
    else a pointer to the report file."""
    for candidate in ("\n\n".join(full), "\n\n".join(parts)):
        if len(candidate.encode("utf-8")) <= SUMMARY_BYTES:
            return candidate
    return "The grove-gitops PR check's report is larger than a job summary: see `report.md` in its report directory.\n"


def _write(out_dir: Path, parts: list[str], status: Status, full: list[str] | None = None) -> None:
    """:func:`write_results`, or a one-line error (exit 1) when OUT_DIR cannot be written."""
    try:
        write_results(out_dir, parts, status, full)
    except OSError as exc:
        _fail(f"{out_dir}: cannot write the report: {exc.strerror or exc}")


def _crashed(out_dir: Path, title: str, key: str, public: str, detail: str) -> None:
    """The check could not run: the details to the job log, a generic line to the comment."""
    click.echo(f"error: {detail}", err=True)
    _write(out_dir, failure_parts(title, key, public), Status(diff="failed", notes=[public]))
    set_outputs({"parts": "1", "errors": "0", "infeasible": "false", "feasibility": "failed"})
    sys.exit(1)


@pr_check.command("run")
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="The git repository holding both commits (its work tree is never touched: the trees are read from git).",
)
@click.option("--base", required=True, help="The PR's base commit (the merge base with HEAD is compared).")
@click.option("--head", required=True, help="The PR's head commit.")
@click.option(
    "--source-path",
    default=".",
    show_default=True,
    help="The source tree's path in the repository; '.', './' and '' are the repository root.",
)
@KEY_OPTION
@click.option("--title", default="grove-gitops PR check", show_default=True, help="Heading of every comment part.")
@click.option(
    "--output",
    type=click.Choice(["markdown", "text"]),
    default="markdown",
    show_default=True,
    help="How the diff is shown in the comment: markdown (summaries, tables, collapsed diffs) or text "
    "(`diff --output text` in code blocks). The comment itself is always Markdown.",
)
@deprecated_format_option
@click.option(
    "--max-chars",
    type=click.IntRange(2000, 65_536),
    default=60_000,
    show_default=True,
    help="Each comment part is shorter than this (GitHub rejects comments over 65536 characters).",
)
@click.option(
    "--max-parts",
    type=click.IntRange(1, MAX_PARTS_CEILING),
    default=DEFAULT_MAX_PARTS,
    show_default=True,
    help="At most this many comment parts; a longer report is cut and points to the full one.",
)
@click.option(
    "--cli",
    "cli",
    default=None,
    help="The grove-gitops command to run (default: this installation, isolated from the working directory).",
)
@OUT_DIR
def run_command(
    repo: Path,
    base: str,
    head: str,
    source_path: str,
    key: str,
    title: str,
    output: str,
    fmt: str | None,
    max_chars: int,
    max_parts: int,
    cli: str | None,
    out_dir: Path,
) -> None:
    """Compose the report into OUT_DIR and print annotations for head's validation problems.

    The report compares head with its merge base: the diff, the rollout plan, gang feasibility
    and head's validation problems, as comment parts (comment.<i>.md), the whole report
    (report.md) and status.json for `pr-check verdict`. Workflow commands (::error, ::notice)
    are printed only where a CI reads them (GITHUB_ACTIONS=true); elsewhere the same findings
    are plain lines on stderr.
    """
    fmt = resolve_output(output, fmt, "pr-check run")
    argv = tuple(cli.split()) if cli else DEFAULT_CLI
    opts = Options(repo, base, head, source_path, key, title, fmt, max_chars, argv, max_parts, run_url())
    try:
        result = compose(opts)
    except PrCheckError as exc:
        # Say so in the comment too, instead of leaving an earlier push's report standing.
        _crashed(out_dir, title, key, exc.public or "the check could not run; see the job log.", str(exc))
        return
    except GroveGitopsError as exc:
        _crashed(out_dir, title, key, "the check could not run (exit 1); see the job log.", str(exc))
        return
    except Exception as exc:  # a bug: the traceback is for the job log, never the comment
        traceback.print_exc()
        _crashed(out_dir, title, key, "internal error; see the job log.", f"{type(exc).__name__}: {exc}")
        return
    for line in result.annotations:
        click.echo(for_this_ci(line))
    for line in result.log:
        click.echo(line, err=True)
    status = result.status
    for note in status.notes:
        click.echo(for_this_ci(command("notice", note)))
    _write(out_dir, result.parts, status, result.full)
    set_outputs(
        {
            "parts": str(status.parts),
            "errors": str(status.errors),
            "infeasible": "true" if status.infeasible else "false",
            "feasibility": status.feasibility,
        }
    )
    add_summary(_summary(result.parts, result.full))
    cut = f" (cut from {status.full_parts}: see report.md)" if status.full_parts > status.parts else ""
    click.echo(
        f"pr-check: {status.parts} comment part(s){cut}, {status.errors} error(s), {status.warnings} warning(s), "
        f"feasibility {status.feasibility}{' (a gang does not fit)' if status.infeasible else ''}",
        err=True,
    )


def _gitlab_mr(pr: int | None) -> int | None:
    if pr is not None:
        return pr
    iid = os.environ.get("CI_MERGE_REQUEST_IID", "")
    return int(iid) if iid.isascii() and iid.isdigit() and len(iid) < 19 else None


def _post_gitlab(
    key: str,
    pr: int | None,
    repository: str | None,
    author: str,
    api_url: str | None,
    note_chars: int,
    parts: list[str],
) -> None:
    """The GitLab side of ``post``: GitLab CI's variables, GITLAB_TOKEN or CI_JOB_TOKEN."""
    from grove_gitops.forge.gitlab import DEFAULT_API_URL as GITLAB_API_URL
    from grove_gitops.forge.gitlab import GitLabError
    from grove_gitops.prcheck.gitlab import post_notes

    mr = _gitlab_mr(pr)
    if mr is None:
        _fail("--pr: no merge request IID (CI_MERGE_REQUEST_IID is set in merge request pipelines only)")
        return
    project = repository or os.environ.get("CI_PROJECT_ID", "")
    if not project:
        _fail("--repository: no GitLab project (CI_PROJECT_ID)")
    token, job = os.environ.get("GITLAB_TOKEN", ""), False
    if not token and os.environ.get("CI_JOB_TOKEN"):
        token, job = os.environ["CI_JOB_TOKEN"], True
    if not token:
        _fail("no token: set GITLAB_TOKEN (an access token with the api scope) or run in GitLab CI (CI_JOB_TOKEN)")
    url = api_url or os.environ.get("CI_API_V4_URL") or GITLAB_API_URL
    try:
        post_notes(parts, key, project, mr, token, url, job, author, note_chars, log=lambda s: click.echo(s, err=True))
    except GitLabError as exc:
        if exc.status == 403:
            click.echo(f"warning: cannot write notes on the merge request ({exc}); see report.md", err=True)
            return
        _fail(str(exc))
    except (GroveGitopsError, ValueError) as exc:
        _fail(str(exc))


@pr_check.command("post")
@KEY_OPTION
@click.option(
    "--forge",
    type=click.Choice(["auto", "github", "gitlab"]),
    default="auto",
    show_default=True,
    help="Where the PR is: auto is gitlab inside GitLab CI (GITLAB_CI=true), else github.",
)
@click.option(
    "--pr",
    "pr",
    type=click.IntRange(1, 2**63 - 1),
    default=None,
    help="PR number, or GitLab merge request IID (default: GITHUB_EVENT_PATH; CI_MERGE_REQUEST_IID).",
)
@click.option(
    "--repository",
    default=None,
    help="owner/name, or GitLab project id or path (default: GITHUB_REPOSITORY; CI_PROJECT_ID).",
)
@click.option(
    "--author", default="", help="Only comments by this login are ours (default: any bot; GitLab: the token's user)."
)
@click.option("--api-url", default=None, help="API base URL (default: GITHUB_API_URL; CI_API_V4_URL).")
@click.option(
    "--max-note-chars",
    type=click.IntRange(400, 1_000_000),
    default=1_000_000,
    show_default=True,
    help="GitLab: the parts are joined into notes of at most this many characters (GitLab's limit).",
)
@OUT_DIR
def post_command(
    key: str,
    forge: str,
    pr: int | None,
    repository: str | None,
    author: str,
    api_url: str | None,
    max_note_chars: int,
    out_dir: Path,
) -> None:
    """Create, update and delete the PR's sticky comments (GitLab: notes) to match OUT_DIR's parts.

    GitHub: the token is GITHUB_TOKEN, the API GITHUB_API_URL. GitLab: the token is GITLAB_TOKEN
    (PRIVATE-TOKEN; an access token with the api scope), else CI_JOB_TOKEN (JOB-TOKEN; most
    GitLab instances do not let it write notes), the API CI_API_V4_URL.
    """
    parts = read_parts(out_dir)
    if not parts:
        _fail(f"{out_dir}: no comment.<i>.md parts to post (did the run step fail before writing them?)")
    if len(parts) > MAX_PARTS_CEILING:
        _fail(f"{out_dir}: {len(parts)} comment parts: more than {MAX_PARTS_CEILING} are never posted")
    if forge == "gitlab" or (forge == "auto" and os.environ.get("GITLAB_CI") == "true"):
        _post_gitlab(key, pr, repository, author, api_url, max_note_chars, parts)
        return
    try:
        event = _event()
        number = pr if pr is not None else (event.get("pull_request") or {}).get("number")
        if not isinstance(number, int):
            _fail("--pr: no pull request number (not a pull_request event?)")
            return
        repo = repository or os.environ.get("GITHUB_REPOSITORY", "")
        gh = GitHub(
            repo, os.environ.get("GITHUB_TOKEN", ""), api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL
        )
        sync(gh, number, key, parts, author, log=lambda line: click.echo(line, err=True))
    except GitHubError as exc:
        if exc.status == 403:
            # A fork PR's token is read-only under pull_request: the report is in the job summary.
            click.echo(for_this_ci(command("warning", f"cannot comment on the PR ({exc}); the report is in the job summary")))
            return
        _fail(str(exc))
    except GroveGitopsError as exc:
        _fail(str(exc))


def _fail_on(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """Comma-separated, repeatable, or both; checked before the status is read (exit 2)."""
    try:
        return parse_fail_on(value or ("error",))
    except ValueError as exc:
        raise click.BadParameter(str(exc).removeprefix("fail-on: ")) from exc


@pr_check.command("verdict")
@click.option(
    "--fail-on",
    multiple=True,
    callback=_fail_on,
    metavar="GATES",
    help=(
        f"What fails the check, comma-separated and repeatable: {', '.join(FAIL_ON)} "
        "(default: error; every gate includes error; never alone). infeasible gates on the node "
        "inventory whatever the source tree's feasibility mode says."
    ),
)
@OUT_DIR
def verdict_command(fail_on: tuple[str, ...], out_dir: Path) -> None:
    """Exit 1 when the findings in OUT_DIR/status.json fail the check under --fail-on."""
    try:
        status = read_status(out_dir)
    except GroveGitopsError as exc:
        _fail(str(exc))
        return
    reasons = failures(status, fail_on)
    gates = ",".join(fail_on)
    if reasons:
        for reason in reasons:
            click.echo(for_this_ci(command("error", f"grove-gitops PR check (fail-on: {gates}): {reason}")))
        sys.exit(1)
    click.echo(f"pr-check passes (fail-on: {gates})", err=True)


@pr_check.command("annotate")
@click.argument("validate_json", type=click.File("r"))
@click.option(
    "--source-root", type=click.Path(path_type=Path, file_okay=False), required=True, help="The tree validated."
)
@click.option("--source-path", default=".", show_default=True, help="That tree's path in the repository.")
def annotate_command(validate_json: Any, source_root: Path, source_path: str) -> None:
    """Print workflow commands for a saved `validate --output json` document ('-' = stdin)."""
    try:
        doc = json.load(validate_json)
    except ValueError as exc:
        _fail(f"{validate_json.name}: not JSON: {exc}")
        return
    problems = doc.get("problems") if isinstance(doc, dict) else None
    if not isinstance(problems, list):
        _fail(f"{validate_json.name}: problems: expected the list of `validate --output json`")
        return
    for line in to_annotations([p for p in problems if isinstance(p, dict)], source_root, source_path):
        click.echo(line)
