"""Run the checks on a PR and lay out its sticky comment.

Between the merge base of BASE and HEAD (like GitHub's *Files changed* tab: commits that
landed on the base branch since are not this PR's doing) and HEAD:

* ``validate --output json`` on head's source tree: its problems become check annotations
  and decide ``fail-on: error``;
* ``feasibility --output json`` on head's source tree, when this grove-gitops has the command
  (an older pinned version does not: the section then says so) — ``fail-on: infeasible``;
* ``diff`` with its rollout plan, in process, so the feasibility section packs together with
  the diff's blocks into parts below GitHub's comment limit on whole-object boundaries.

``validate`` and ``feasibility`` run as the command line (``python -m grove_gitops``) and are
read through their JSON contract, the same way a user's script would read them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import git

from grove_gitops.diff.errors import GitRefError
from grove_gitops.diff.gitrefs import extract, open_repo, resolve, write_source
from grove_gitops.diff.markdown import MARKER, part_header, part_marker, render_markdown
from grove_gitops.diff.report import build_report
from grove_gitops.diff.split import Block, pack
from grove_gitops.diff.text import render_text
from grove_gitops.diffcli import InvalidSidesError, load_sides, plan_blocks
from grove_gitops.errors import GroveGitopsError
from grove_gitops.prcheck.annotations import to_annotations
from grove_gitops.prcheck.sections import (
    feasibility_blocks,
    feasibility_note,
    has_inventory,
    problem_blocks,
    text_blocks,
)

DEFAULT_CLI: tuple[str, ...] = (sys.executable, "-m", "grove_gitops")
KEY_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
PART_FILE = re.compile(r"^comment\.(\d+)\.md$")
STATUS_FILE = "status.json"


class PrCheckError(GroveGitopsError):
    """The check itself could not run (no merge base, a broken CLI answer)."""


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


@dataclass
class Status:
    """What :mod:`.verdict` decides on, saved as ``status.json`` between the Action's steps."""

    errors: int = 0
    warnings: int = 0
    #: ``checked`` (then ``infeasible`` says the answer), ``no-inventory``, ``absent``,
    #: ``skipped`` (head does not render) or ``failed``.
    feasibility: str = "absent"
    infeasible: bool = False
    #: ``ok``, ``head-invalid``, ``base-invalid`` or ``failed``.
    diff: str = "ok"
    parts: int = 0
    merge_base: str = ""
    head: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class Result:
    parts: list[str]
    status: Status
    annotations: list[str]


def _run_cli(cli: Sequence[str], args: list[str]) -> tuple[int, Any, str]:
    """(exit code, parsed JSON stdout or None, stderr) of one CLI call."""
    proc = subprocess.run([*cli, *args], capture_output=True, text=True, check=False)
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        doc = None
    return proc.returncode, doc, proc.stderr


def merge_base(repo: git.Repo, base: str, head: str) -> str:
    bases = repo.merge_base(resolve(repo, base), resolve(repo, head))
    if not bases:
        raise GitRefError(
            f"{base} and {head} have no merge base here: check out the full history (actions/checkout with fetch-depth: 0)"
        )
    return str(bases[0].hexsha)


def check_feasibility(cli: Sequence[str], head_root: Path, status: Status) -> list[Block]:
    """The feasibility section, recording the outcome in ``status``."""
    code, doc, stderr = _run_cli(cli, ["feasibility", str(head_root), "--output", "json"])
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
    reason = (
        "; ".join(str(p.get("message", p)) for p in problems)
        if isinstance(problems, list) and problems
        else stderr.strip()
    )
    status.notes.append(f"gang feasibility failed (exit {code}): {reason}")
    return feasibility_note(f"⚠️ Not checked: `grove-gitops feasibility` failed (exit {code}): {reason[:2000]}")


def _header_for(title: str, key: str, base: str, head: str) -> Callable[[int, int], str]:
    def header(i: int, n: int) -> str:
        label = f"{title} (base `{base}` → head `{head}`)" + (f" · part {i}/{n}" if n > 1 else "")
        return f"{MARKER}\n{part_marker(key, i, n)}\n## {label}\n\n"

    return header


def compose(opts: Options) -> Result:
    """Run every check and return the comment parts, the status and the annotations."""
    if not KEY_RE.match(opts.key):
        raise PrCheckError(f"key: {opts.key!r}: letters, digits, '.', '_' and '-' only (at most 64)")
    if opts.fmt not in ("markdown", "text"):
        raise PrCheckError(f"format: {opts.fmt!r}: expected markdown or text")
    repo = open_repo(opts.repo)
    status = Status()
    base_sha = merge_base(repo, opts.base, opts.head)
    head_sha = str(resolve(repo, opts.head).hexsha)
    status.merge_base, status.head = base_sha, head_sha
    source_path = opts.source_path.strip() or "."
    sp = None if source_path in (".", "") else source_path
    header = _header_for(opts.title, opts.key, base_sha[:7], head_sha[:7])
    with tempfile.TemporaryDirectory(prefix="grove-gitops-pr-") as tmp:
        head_root = Path(tmp) / "head"
        write_source(extract(repo, head_sha, source_path).source, head_root)
        code, doc, stderr = _run_cli(opts.cli, ["validate", str(head_root), "--output", "json"])
        if code not in (0, 1) or not isinstance(doc, dict):
            raise PrCheckError(f"grove-gitops validate failed (exit {code}): {stderr.strip() or 'no JSON answer'}")
        problems = [p for p in doc.get("problems") or [] if isinstance(p, dict)]
        notes = to_annotations(problems, head_root, source_path)
        status.errors = sum(1 for p in problems if p.get("severity") != "warning")
        status.warnings = len(problems) - status.errors
        if status.errors:
            status.feasibility = "skipped"
            feas: list[Block] = []
        else:
            feas = check_feasibility(opts.cli, head_root, status)
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
        parts = pack([*blocks, *feas], opts.max_chars, header)
        return Result(parts, _counted(status, parts), notes)
    report = build_report(base_side, head_side)
    hint = f"grove-gitops diff {args} --format text"
    if opts.fmt == "markdown":
        parts = render_markdown(
            report,
            title=opts.title,
            key=opts.key,
            max_chars=opts.max_chars,
            rerun_hint=hint,
            plan_blocks=plan_blocks(report),
            lead_blocks=feas,
        )
    else:
        body = text_blocks(render_text(report, opts.title))
        parts = pack(
            [*body[:1], *feas, *plan_blocks(report), *body[1:]],
            opts.max_chars,
            lambda i, n: part_header(report, opts.title, opts.key, i, n),
        )
    return Result(parts, _counted(status, parts), notes)


def _counted(status: Status, parts: list[str]) -> Status:
    status.parts = len(parts)
    return status


def failure_parts(title: str, key: str, message: str, max_chars: int = 60_000) -> list[str]:
    """The comment when the check itself could not run: say so instead of leaving a stale report."""
    header = _header_for(title, key, "?", "?")
    return pack([Block(f"❌ The grove-gitops PR check failed: {message}\n")], max_chars, header)


def write_results(out_dir: Path, parts: Sequence[str], status: Status) -> list[Path]:
    """``comment.<i>.md`` per part (older, higher-numbered ones removed) and ``status.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.iterdir():
        if PART_FILE.match(old.name):
            old.unlink()
    paths = []
    for i, text in enumerate(parts, start=1):
        path = out_dir / f"comment.{i}.md"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
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
    path = out_dir / STATUS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Status(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise PrCheckError(f"{path}: cannot read the check's status: {exc}") from exc
