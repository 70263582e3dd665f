"""The sticky note set on a GitLab merge request, against a fake GitLab over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.cli.prcheck import pr_check
from grove_gitops.diff.markdown import MARKER, part_marker
from grove_gitops.diff.mdescape import ZWSP, md_text
from grove_gitops.forge.gitlab import GitLab, GitLabError, project_ref
from grove_gitops.prcheck.gitlab import gitlab_notes, inert_for_gitlab
from grove_gitops.prcheck.sticky import sync
from tests.prcheck.fakegitlab import BOT, HUMAN, FakeGitLab
from tests.prcheck.fakejson import running

MR = 12


@pytest.fixture
def fake() -> Iterator[FakeGitLab]:
    with running(FakeGitLab().start()) as server:
        yield server


@pytest.fixture
def elsewhere() -> Iterator[FakeGitLab]:
    with running(FakeGitLab().start()) as server:
        yield server


def part(i: int, n: int, text: str, key: str = "default") -> str:
    return f"{MARKER}\n{part_marker(key, i, n)}\n{text}"


def client(fake: FakeGitLab, project: str = "") -> GitLab:
    return GitLab(project or fake.project, MR, fake.token, fake.api, timeout=10)


def post(fake: FakeGitLab, parts: list[str], limit: int = 1_000_000) -> list[str]:
    gl = client(fake)
    notes = gitlab_notes(parts, "default", limit)
    sync(gl, MR, "default", notes, gl.current_user())
    return notes


def test_the_report_becomes_one_note_then_is_updated_in_place(fake: FakeGitLab) -> None:
    parts = [part(i, 3, f"## report · part {i}/3\n\nblock {i}") for i in (1, 2, 3)]
    notes = post(fake, parts)
    assert len(notes) == 1 and fake.bodies(MR) == notes
    assert all(f"block {i}" in notes[0] for i in (1, 2, 3))
    assert notes[0].startswith(f"{MARKER}\n{part_marker('default', 1, 1)}\n")
    (note_id,) = fake.notes
    again = post(fake, [part(1, 1, "## report\n\nfixed")])
    assert list(fake.notes) == [note_id] and fake.bodies(MR) == again  # edited, not re-created
    assert ("PUT", f"/api/v4/projects/acme%2Fworkloads/merge_requests/{MR}/notes/{note_id}") in [
        (m, p) for m, p, _ in fake.requests
    ]
    writes = len(fake.writes())
    post(fake, [part(1, 1, "## report\n\nfixed")])
    assert len(fake.writes()) == writes  # unchanged: no write at all


def test_split_below_the_limit_then_extras_deleted(fake: FakeGitLab) -> None:
    body = "intro\n```diff\n" + "".join(f"+ line {i} {'x' * 60}\n" for i in range(60)) + "```\nend\n"
    notes = post(fake, [part(1, 1, body)], limit=1000)
    assert len(notes) > 3 and all(len(n) <= 1000 for n in notes)
    assert fake.bodies(MR) == notes
    for i, note in enumerate(notes, start=1):
        assert note.startswith(f"{MARKER}\n{part_marker('default', i, len(notes))}\n")
        assert note.count("```") % 2 == 0  # every note closes the fence it opens
    joined = "".join(notes)
    assert all(f"+ line {i} " in joined for i in range(60))
    short = post(fake, [part(1, 1, "short now")], limit=1000)
    assert fake.bodies(MR) == short and len(short) == 1


def test_other_authors_system_notes_and_other_keys_are_untouched(fake: FakeGitLab) -> None:
    human = fake.add(MR, part(1, 1, "a human pasting our marker"), HUMAN)
    system = fake.add(MR, part(1, 1, "system"), BOT, system=True)
    other_key = fake.add(MR, part(1, 1, "another cluster", key="eu-1"))
    stale = fake.add(MR, part(2, 2, "stale second note"))
    dup_a = fake.add(MR, part(1, 2, "first"))
    dup_b = fake.add(MR, part(1, 2, "duplicate"))
    for n in range(5):
        fake.add(MR, f"chatter {n}", HUMAN)  # several pages of 2
    fake.add(MR + 1, part(1, 1, "another MR"))
    post(fake, [part(1, 1, "ours")])
    assert {human, system, other_key, dup_a} <= set(fake.notes)
    assert stale not in fake.notes and dup_b not in fake.notes
    assert "ours" in fake.notes[dup_a]["body"]
    assert fake.notes[human]["body"] == part(1, 1, "a human pasting our marker")
    assert fake.bodies(MR + 1) == [part(1, 1, "another MR")]
    assert all(r[2] == f"PRIVATE-TOKEN: {fake.token}" for r in fake.requests)


def test_job_token_goes_in_its_own_header(fake: FakeGitLab) -> None:
    fake.job_token = "ci-job-token-123"
    gl = GitLab(str(fake.project_id), MR, fake.job_token, fake.api, job_token=True, timeout=10)
    gl.create_comment(MR, part(1, 1, "x"))
    assert fake.requests[-1][2] == "JOB-TOKEN: ci-job-token-123"
    assert fake.requests[-1][1] == f"/api/v4/projects/42/merge_requests/{MR}/notes"


def test_errors_name_the_call_and_never_the_token(fake: FakeGitLab, elsewhere: FakeGitLab) -> None:
    with pytest.raises(GitLabError, match=r"GET /projects/acme%2Fworkloads/merge_requests/12/notes.*401 Unauthorized"):
        GitLab(fake.project, MR, "glpat-WRONG-0123", fake.api).list_comments(MR)
    fake.redirect_to = elsewhere.url
    with pytest.raises(GitLabError, match="redirect to another host") as exc:
        client(fake).list_comments(MR)
    assert fake.token not in str(exc.value) and elsewhere.requests == []
    fake.redirect_to = ""
    fake.replies["PUT"] = (400, b'{"message": {"note": ["is too long"]}}')
    note = fake.add(MR, part(1, 1, "x"))
    with pytest.raises(GitLabError, match=r'400 \{"note": \["is too long"\]\}'):
        client(fake).update_comment(note, "y")
    with pytest.raises(GitLabError, match="plain http only to this machine"):
        GitLab("a/b", MR, "t", "http://gitlab.example.com/api/v4")
    with pytest.raises(GitLabError, match="credentials in the URL are refused") as exc:
        GitLab("a/b", MR, "t", "https://u:glpat-INURL@gitlab.example.com/api/v4")
    assert "glpat-INURL" not in str(exc.value)


@pytest.mark.parametrize("project", ["../../user", "a/b?x=1", "a b/c", "a//b", "", "a/b/../c", "/a/b"])
def test_a_project_that_is_not_an_id_or_path_is_refused(project: str) -> None:
    with pytest.raises(GitLabError, match="is not a project id or group/project path"):
        project_ref(project)


def test_project_paths_are_url_encoded() -> None:
    assert project_ref("group/sub.grp/my-project") == "group%2Fsub.grp%2Fmy-project"
    assert project_ref("12345") == "12345"


def test_quick_actions_and_references_are_defeated_outside_code() -> None:
    text = (
        "/merge\n  /approve now\nsee /merge mid-line\n"
        + md_text("!12 ~bug %v1.0 $3 &4 *iteration:x [vulnerability:1]")
        + "\n```diff\n/merge\n!12 %v1\n```\n"
    )
    out = inert_for_gitlab(text)
    lines = out.splitlines()
    assert lines[0] == "&#47;merge" and lines[1] == "  &#47;approve now" and lines[2] == "see /merge mid-line"
    for entity in ("&#33;", "&#126;", "&#36;", "&#38;", "&#42;", "&#91;"):
        assert entity + ZWSP in lines[3]
    assert f"%{ZWSP}v1.0" in lines[3]
    assert lines[4:] == ["```diff", "/merge", "!12 %v1", "```"]  # code is shown as it is


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_no_line_of_untrusted_text_can_run_a_quick_action(text: str) -> None:
    """Whatever the text, no line of the note outside a fence starts with ``/``."""
    out = inert_for_gitlab(f"- {md_text(text)}\n{text}\n")
    fence = False
    for line in out.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fence = not fence
        elif not fence:
            assert not stripped.startswith("/")


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="expected 400"):
        gitlab_notes([part(1, 1, "x")], "default", 10)


def _post_cli(tmp_path: Path, fake: FakeGitLab, parts: list[str], *extra: str, **env: str) -> tuple[int, str]:
    out = tmp_path / "report"
    out.mkdir(exist_ok=True)
    for old in out.glob("comment.*.md"):
        old.unlink()
    for i, text in enumerate(parts, start=1):
        (out / f"comment.{i}.md").write_text(text)
    variables = {
        "GITLAB_CI": "true",
        "CI_PROJECT_ID": str(fake.project_id),
        "CI_MERGE_REQUEST_IID": str(MR),
        "CI_API_V4_URL": fake.api,
        "GITLAB_TOKEN": fake.token,
        "CI_JOB_TOKEN": "",
        "GITHUB_TOKEN": "",
        **env,
    }
    result = CliRunner().invoke(pr_check, ["post", "--out-dir", str(out), *extra], env=variables, catch_exceptions=False)
    return result.exit_code, result.output


def test_post_in_gitlab_ci_keeps_one_note(tmp_path: Path, fake: FakeGitLab) -> None:
    parts = [part(i, 2, f"## report · part {i}/2\n\nblock {i} {'x' * 200}") for i in (1, 2)]
    code, output = _post_cli(tmp_path, fake, parts)
    assert code == 0, output
    assert len(fake.bodies(MR)) == 1 and "block 2" in fake.bodies(MR)[0]
    code, output = _post_cli(tmp_path, fake, parts, "--max-note-chars", "400")
    assert code == 0, output
    assert len(fake.bodies(MR)) == 2 and all(len(b) <= 400 for b in fake.bodies(MR))
    code, output = _post_cli(tmp_path, fake, parts[:1])
    assert code == 0 and "deleted stale part 2" in output
    assert len(fake.bodies(MR)) == 1
    assert all(r[1].startswith("/api/v4/projects/42/") or r[1] == "/api/v4/user" for r in fake.requests)


def test_post_to_gitlab_failures_are_clean(tmp_path: Path, fake: FakeGitLab) -> None:
    parts = [part(1, 1, "x")]
    code, output = _post_cli(tmp_path, fake, parts, GITLAB_TOKEN="glpat-EXPIRED-000")
    assert code == 1 and "error: GitLab API: GET /user: 401 Unauthorized" in output
    assert "glpat-EXPIRED-000" not in output and "Traceback" not in output
    code, output = _post_cli(tmp_path, fake, parts, GITLAB_TOKEN="")
    assert code == 1 and "no token: set GITLAB_TOKEN" in output
    code, output = _post_cli(tmp_path, fake, parts, CI_MERGE_REQUEST_IID="")
    assert code == 1 and "no merge request IID" in output
    code, output = _post_cli(tmp_path, fake, parts, CI_PROJECT_ID="../../admin")
    assert code == 1 and "is not a project id or group/project path" in output
    code, output = _post_cli(tmp_path, fake, parts, CI_API_V4_URL="http://gitlab.example.com/api/v4")
    assert code == 1 and "plain http only to this machine" in output
    # The job token goes in JOB-TOKEN; with --author nothing asks GET /user.
    fake.job_token = "ci-job-0123"
    code, output = _post_cli(tmp_path, fake, parts, "--author", BOT, GITLAB_TOKEN="", CI_JOB_TOKEN="ci-job-0123")
    assert code == 0, output
    assert fake.requests[-1][2] == "JOB-TOKEN: ci-job-0123"


def test_a_note_someone_else_wrote_is_never_edited(tmp_path: Path, fake: FakeGitLab) -> None:
    human = fake.add(MR, part(1, 1, "forged by a human"), HUMAN)
    code, output = _post_cli(tmp_path, fake, [part(1, 1, "ours")])
    assert code == 0, output
    assert fake.notes[human]["body"] == part(1, 1, "forged by a human")
    assert [b for b in fake.bodies(MR) if "ours" in b]
