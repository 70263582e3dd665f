"""Run the checks on a PR and lay out its sticky comment.

Between the merge base of BASE and HEAD (like GitHub's *Files changed* tab: commits that
landed on the base branch since are not this PR's doing) and HEAD:

* ``validate --output json`` on head's source tree: its problems become check annotations
  and decide ``fail-on: error``;
* ``feasibility --output json`` on head's source tree, when this grove-gitops has the command
  (an older pinned version does not: the section then says so) — ``fail-on: infeasible``;
* ``diff`` with its rollout plan, in process, so the feasibility section packs together with
  the diff's blocks into parts below GitHub's comment limit on whole-object boundaries, at
  most ``max_parts`` of them (:mod:`.capping`; the full report is kept for the job summary
  and the report directory).

``validate`` and ``feasibility`` run as the command line and are read through their JSON
contract, the same way a user's script would read them. The command is *this* installation,
never anything the pull request holds: the Action runs in the PR's checkout, so ``python -m
grove_gitops`` would import a ``grove_gitops/`` package the PR adds (its code running with
the job's token in reach, its ``validate`` saying "valid"). :data:`DEFAULT_CLI` is isolated
mode (``-I``: neither the working directory nor the script's directory on ``sys.path``,
``PYTHON*`` variables and the user site ignored), and the commands run in a directory of our
own.

Nothing a sub-command prints unexpectedly reaches the comment: a crash is "failed on head
(exit N); see the job log", with the details in the job log only.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import git

from grove_gitops.diff.gitrefs import extract, open_repo, resolve, write_source
from grove_gitops.diff.markdown import MARKER, markdown_blocks, part_header, part_marker
from grove_gitops.diff.mdescape import md_text
from grove_gitops.diff.report import Report, build_report
from grove_gitops.diff.split import Block
from grove_gitops.diff.text import render_text
from grove_gitops.errors import GroveGitopsError
from grove_gitops.plan.clusters import build_fleet_plan
from grove_gitops.plan.formats import markdown_blocks as plan_markdown_blocks
from grove_gitops.plan.formats import outage_blocks, stranded_blocks, unavailable_block
from grove_gitops.plan.model import PlanError
from grove_gitops.prcheck.annotations import to_annotations
from grove_gitops.prcheck.capping import DEFAULT_MAX_PARTS, pack_capped
from grove_gitops.prcheck.sections import (
    feasibility_blocks,
    feasibility_note,
    has_inventory,
    problem_blocks,
    text_blocks,
)
from grove_gitops.reviewsides import InvalidSidesError, load_sides

#: This installation's grove-gitops, isolated from the working directory (the PR's checkout).
DEFAULT_CLI: tuple[str, ...] = (sys.executable, "-I", "-m", "grove_gitops")
KEY_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
PART_FILE = re.compile(r"^comment\.(\d+)\.md$")
STATUS_FILE = "status.json"
#: The whole report, however many parts it has (the comments hold at most ``max_parts``).
REPORT_FILE = "report.md"
#: A problem's message in the comment is cut to this many characters.
MESSAGE_CHARS = 2000


class PrCheckError(GroveGitopsError):
    """The check itself could not run (no merge base, a sub-command that crashed).

    The message is for the job log; ``public`` is what the PR comment may say instead (a
    generic line when empty): a message can hold runner paths or a crash's output.
    """

    def __init__(self, message: str, public: str = "") -> None:
        super().__init__(message)
        self.public = public


@dataclass
class Options:
    repo: Path
    base: str
    head: str
    source_path: str = "."
    key: str = "default"
    title: str = "grove-gitops PR check"
    fmt: str = "markdown"
    max_chars: int = 60_000
    cli: Sequence[str] = DEFAULT_CLI
    max_parts: int = DEFAULT_MAX_PARTS
    #: Where the full report is (the workflow run's page), linked from a cut report; "" for none.
    report_url: str = ""


@dataclass
class Status:
    """What :mod:`.verdict` decides on, saved as ``status.json`` between the Action's steps."""

    errors: int = 0
    warnings: int = 0
    #: ``checked`` (then ``infeasible`` says the answer), ``no-inventory``, ``absent``,
    #: ``skipped`` (head does not render) or ``failed``.
    feasibility: str = "absent"
    infeasible: bool = False
    #: ``ok``, ``head-invalid``, ``base-invalid`` or ``failed``; ``unknown`` until the check
    #: established it (a status nobody filled in never passes).
    diff: str = "unknown"
    #: Comment parts posted, and the parts of the full report (more when the cap cut it).
    parts: int = 0
    full_parts: int = 0
    merge_base: str = ""
    head: str = ""
    notes: list[str] = field(default_factory=list)
    #: ``ok`` when the rollout plan was computed, ``failed`` when a side could not be
    #: planned, ``unknown`` when the diff did not get that far.
    plan: str = "unknown"
    #: One line per role a rollout leaves with no available pod (``ns/pcs: decode (scaling group): steps 1``).
    outages: list[str] = field(default_factory=list)
    #: The merge base's source tree has a node inventory (asked only when head has none: a PR
    #: that deletes it must not switch ``fail-on: infeasible`` off).
    base_inventory: bool = False
    #: One line per running gang a topology change leaves unschedulable at its next reschedule.
    stranded: list[str] = field(default_factory=list)


@dataclass
class Result:
    parts: list[str]
    status: Status
    annotations: list[str]
    #: The report uncut (``parts`` when it fits the cap).
    full: list[str] = field(default_factory=list)
    #: Details for the job log only (a sub-command's stderr), never for the comment.
    log: list[str] = field(default_factory=list)


#: The longest one sub-command may run. Every input it reads is bounded, so a legitimate
#: tree finishes in seconds; this only ends a hang the bounds missed, as a failed check
#: (exit :data:`TIMED_OUT`, a generic line in the comment) instead of a job stuck for hours.
SUB_COMMAND_TIMEOUT_S = 900.0
#: The exit code a timed-out sub-command reports (``timeout(1)``'s).
TIMED_OUT = 124


def _run_cli(cli: Sequence[str], args: list[str], cwd: Path) -> tuple[int, Any, str]:
    """(exit code, parsed JSON stdout or None, stderr) of one CLI call, run in ``cwd`` (ours,
    not the checkout)."""
    try:
        proc = subprocess.run(
            [*cli, *args], capture_output=True, text=True, check=False, cwd=cwd, timeout=SUB_COMMAND_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return TIMED_OUT, None, f"grove-gitops {args[0] if args else ''} did not finish in {SUB_COMMAND_TIMEOUT_S:.0f} s"
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        doc = None
    return proc.returncode, doc, proc.stderr


def _scrub(text: str, root: Path) -> str:
    """``text`` with the temporary tree's path made relative (no runner path in a comment)."""
    return text.replace(f"{root}/", "").replace(str(root), ".")


def merge_base(repo: git.Repo, base: str, head: str) -> str:
    bases = repo.merge_base(resolve(repo, base), resolve(repo, head))
    if not bases:
        message = f"{base} and {head} have no merge base here: check out the full history (actions/checkout with fetch-depth: 0)"
        raise PrCheckError(message, public=message)
    return str(bases[0].hexsha)


def check_feasibility(cli: Sequence[str], head_root: Path, status: Status, log: list[str]) -> list[Block]:
    """The feasibility section, recording the outcome in ``status`` (details in ``log``)."""
    code, doc, stderr = _run_cli(cli, ["feasibility", str(head_root), "--output", "json"], head_root.parent)
    if code == 2 and "No such command" in stderr:
        status.feasibility = "absent"
        note = "this grove-gitops has no `feasibility` command (pin a newer `version`)"
        status.notes.append(f"gang feasibility not checked: {note}")
        return feasibility_note(f"ℹ️ Not checked: {note}.")
    if code in (0, 3) and isinstance(doc, dict):
        blocks = feasibility_blocks(doc)
        checked = has_inventory(doc)
        status.feasibility = "checked" if checked else "no-inventory"
        status.infeasible = checked and (code == 3 or doc.get("fits") is False)
        return blocks
    status.feasibility = "failed"
    problems = doc.get("problems") if isinstance(doc, dict) else None
    log.append(f"grove-gitops feasibility failed on head (exit {code}): {stderr.strip() or 'no JSON answer'}")
    if code == 1 and isinstance(problems, list) and problems:
        # Invalid input, reported through the JSON contract: the PR's own problems, escaped.
        reason = "; ".join(
            _scrub(str(p.get("message") if isinstance(p, dict) else p), head_root) for p in problems[:20]
        )
        status.notes.append(f"gang feasibility not checked: {reason[:MESSAGE_CHARS]}")
        return feasibility_note(
            f"⚠️ Not checked: `grove-gitops feasibility` failed (exit 1): {md_text(reason, MESSAGE_CHARS)}"
        )
    status.notes.append(f"gang feasibility failed on head (exit {code}); see the job log")
    return feasibility_note(f"⚠️ Not checked: grove-gitops feasibility failed on head (exit {code}); see the job log.")


def base_has_inventory(cli: Sequence[str], repo: git.Repo, base_sha: str, source_path: str, tmp: Path) -> bool:
    """Whether the merge base's source tree has a node inventory (asked when head has none).

    ``fail-on: infeasible`` is the workflow's gate: a PR that deletes the inventory must not
    pass it by leaving nothing to check. A base that cannot be read or checked answers False
    (the gate then rests on head, as before)."""
    try:
        source = extract(repo, base_sha, source_path).source
    except GroveGitopsError:
        return False
    base_root = tmp / "base"
    write_source(source, base_root)
    code, doc, _ = _run_cli(cli, ["feasibility", str(base_root), "--output", "json"], tmp)
    return code in (0, 3) and isinstance(doc, dict) and has_inventory(doc)


def _header_for(title: str, key: str, base: str, head: str) -> Callable[[int, int], str]:
    def header(i: int, n: int) -> str:
        label = f"{md_text(title)} (base `{base}` → head `{head}`)" + (f" · part {i}/{n}" if n > 1 else "")
        return f"{MARKER}\n{part_marker(key, i, n)}\n## {label}\n\n"

    return header


def _cut_note(max_parts: int, report_url: str) -> Callable[[int, int], str]:
    """The end of the last posted part when the report needs more than ``max_parts``."""
    where = f"[this workflow run]({report_url})" if report_url else "this workflow run"

    def note(shown: int, total: int) -> str:
        return (
            f"\n---\n⚠️ **Report cut:** these {max_parts} comment(s) show the first {shown} of the report's "
            f"{total} blocks (summaries and object diffs; the Action's `max-parts` input). The full report is "
            f"in the job summary of {where} and in `{REPORT_FILE}` of its report directory (the Action's "
            "`report-dir` output, e.g. uploaded with actions/upload-artifact).\n"
        )

    return note


def rollout_blocks(report: Report, status: Status) -> tuple[list[Block], list[Block]]:
    """(the outage and stranded-gang banners for the top of the comment, the rollout plan's
    section), recording the plan's outcome, every outage (``fail-on: outage``) and every
    stranded gang (``fail-on: infeasible``) in ``status``. A side the plan
    cannot read costs the section (and fails ``outage``), not the diff."""
    try:
        plan = build_fleet_plan(report.base, report.head)
    except PlanError as exc:
        status.plan = "failed"
        return [], [unavailable_block(str(exc))]
    status.plan = "ok"
    status.outages = [
        f"{p.title}: {o.role.label}: step{'s' if len(o.steps) != 1 else ''} {', '.join(map(str, o.steps))}"
        for p, o in plan.outages
    ]
    status.stranded = [f"{p.title}: {g.gang}: {g.reason}" for p, g in plan.stranded]
    return [*outage_blocks(plan), *stranded_blocks(plan)], plan_markdown_blocks(plan)


def compose(opts: Options) -> Result:
    """Run every check and return the comment parts, the status and the annotations."""
    if not KEY_RE.match(opts.key):
        raise PrCheckError(f"key: {opts.key!r}: letters, digits, '.', '_' and '-' only (at most 64)")
    if opts.fmt not in ("markdown", "text"):
        raise PrCheckError(f"format: {opts.fmt!r}: expected markdown or text")
    repo = open_repo(opts.repo)
    status = Status()
    log: list[str] = []
    base_sha = merge_base(repo, opts.base, opts.head)
    head_sha = str(resolve(repo, opts.head).hexsha)
    status.merge_base, status.head = base_sha, head_sha
    source_path = opts.source_path.strip() or "."
    sp = None if source_path in (".", "") else source_path
    header = _header_for(opts.title, opts.key, base_sha[:7], head_sha[:7])

    def packed(blocks: Sequence[Block], head: Callable[[int, int], str]) -> Result:
        parts, full = pack_capped(
            blocks, opts.max_chars, head, opts.max_parts, _cut_note(opts.max_parts, opts.report_url)
        )
        status.parts, status.full_parts = len(parts), len(full)
        return Result(parts, status, notes, full, log)

    with tempfile.TemporaryDirectory(prefix="grove-gitops-pr-") as tmp:
        head_root = Path(tmp) / "head"
        write_source(extract(repo, head_sha, source_path).source, head_root)
        code, doc, stderr = _run_cli(opts.cli, ["validate", str(head_root), "--output", "json"], Path(tmp))
        if code not in (0, 1) or not isinstance(doc, dict) or not isinstance(doc.get("problems", []), list):
            raise PrCheckError(
                f"grove-gitops validate failed on head (exit {code}): {stderr.strip() or 'no JSON answer'}",
                public=f"grove-gitops failed on head (exit {code}); see the job log.",
            )
        problems = [p for p in doc.get("problems") or [] if isinstance(p, dict)]
        has_error = any(p.get("severity") != "warning" for p in problems)
        if (code == 1) != has_error or (code == 0 and doc.get("ok") is False):
            # the exit code and the document disagree: head's validity is not established
            raise PrCheckError(
                f"grove-gitops validate on head: exit {code} but {'an' if has_error else 'no'} error in its JSON: "
                f"{stderr.strip()}",
                public=f"grove-gitops failed on head (exit {code}); see the job log.",
            )
        # a warning its workload acknowledges (gitops.grove.io/acknowledge) is no annotation and
        # no warning: the comment's diff lists it once, as acknowledged, when head brings it
        problems = [p for p in problems if p.get("acknowledged") is not True]
        notes = to_annotations(problems, head_root, source_path)
        status.errors = sum(1 for p in problems if p.get("severity") != "warning")
        status.warnings = len(problems) - status.errors
        if status.errors:
            status.feasibility = "skipped"
            feas: list[Block] = []
        else:
            feas = check_feasibility(opts.cli, head_root, status, log)
            if status.feasibility == "no-inventory":
                status.base_inventory = base_has_inventory(opts.cli, repo, base_sha, source_path, Path(tmp))
    try:
        base_side, head_side, args = load_sides(
            base_sha, head_sha, False, opts.repo, sp, (f"merge base {base_sha[:7]}", None)
        )
    except InvalidSidesError as exc:
        sides = {e.side for e in exc.errors}
        status.diff = "head-invalid" if "head" in sides else "base-invalid"
        listed = [
            {"file": p.file, "field": p.field, "message": f"{e.side}: {p.message}"}
            for e in exc.errors
            for p in e.error.problems
        ]
        which = " and ".join(sorted(sides, reverse=True))
        blocks = problem_blocks(listed, f"❌ The source tree does not render at {which}; nothing was compared.")
        return packed([*blocks, *feas], header)
    status.diff = "ok"
    report = build_report(base_side, head_side)
    hint = f"grove-gitops diff {args} --output text"
    outage, plan = rollout_blocks(report, status)
    if opts.fmt == "markdown":
        blocks = markdown_blocks(
            report,
            title=opts.title,
            key=opts.key,
            max_chars=opts.max_chars,
            rerun_hint=hint,
            plan_blocks=plan,
            lead_blocks=feas,
        )
        # the outage goes first: it is what a reviewer of a serving change must not miss
        return packed([*outage, *blocks], lambda i, n: part_header(report, opts.title, opts.key, i, n))
    body = text_blocks(render_text(report, opts.title))
    return packed(
        [*outage, *body[:1], *feas, *plan, *body[1:]],
        lambda i, n: part_header(report, opts.title, opts.key, i, n),
    )


def failure_parts(title: str, key: str, message: str, max_chars: int = 60_000) -> list[str]:
    """The comment when the check itself could not run: say so instead of leaving a stale
    report. ``message`` is shown as plain text (escaped): never pass an exception's text."""
    header = _header_for(title, key, "?", "?")
    text = f"❌ The grove-gitops PR check failed: {md_text(message, MESSAGE_CHARS)}\n"
    parts, _ = pack_capped([Block(text)], max_chars, header, 1, lambda shown, total: "")
    return parts


def write_results(out_dir: Path, parts: Sequence[str], status: Status, full: Sequence[str] | None = None) -> list[Path]:
    """``comment.<i>.md`` per part (older, higher-numbered ones removed), ``status.json`` and
    the whole report, ``full`` or the parts, in ``report.md``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.iterdir():
        if PART_FILE.match(old.name):
            old.unlink()
    paths = []
    for i, text in enumerate(parts, start=1):
        path = out_dir / f"comment.{i}.md"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    (out_dir / REPORT_FILE).write_text("\n\n".join(full if full is not None else parts), encoding="utf-8")
    (out_dir / STATUS_FILE).write_text(json.dumps(asdict(status), indent=2) + "\n", encoding="utf-8")
    return paths


def read_parts(out_dir: Path) -> list[str]:
    """The parts written by :func:`write_results`, in order."""
    found = (
        sorted(((int(m.group(1)), p) for p in out_dir.iterdir() if (m := PART_FILE.match(p.name))), key=lambda t: t[0])
        if out_dir.is_dir()
        else []
    )
    return [p.read_text(encoding="utf-8") for _, p in found]


def read_status(out_dir: Path) -> Status:
    """``status.json`` as :func:`write_results` wrote it; any other shape is an error (the
    verdict fails rather than guess)."""
    path = out_dir / STATUS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        status = Status(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise PrCheckError(f"{path}: cannot read the check's status: {exc}") from exc
    defaults = Status()
    for f in fields(Status):
        value, wanted = getattr(status, f.name), type(getattr(defaults, f.name))
        if type(value) is not wanted:
            raise PrCheckError(f"{path}: {f.name}: expected {wanted.__name__}, not {type(value).__name__}")
    return status
