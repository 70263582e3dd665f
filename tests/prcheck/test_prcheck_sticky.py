"""The sticky-comment logic and the REST client against a fake GitHub over real HTTP."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli.prcheck import pr_check
from grove_gitops.diff.markdown import MARKER, part_marker
from grove_gitops.prcheck.github import GitHub, GitHubError
from grove_gitops.prcheck.sticky import sync
from tests.prcheck.fakegithub import BOT, HUMAN, FakeGitHub

PR = 7


def part(i: int, n: int, text: str, key: str = "default") -> str:
    return f"{MARKER}\n{part_marker(key, i, n)}\n{text}"


def client(fake: FakeGitHub) -> GitHub:
    return GitHub(fake.repo, fake.token, fake.url)


def test_first_run_creates_every_part(fake_github: FakeGitHub) -> None:
    parts = [part(1, 3, "a"), part(2, 3, "b"), part(3, 3, "c")]
    result = sync(client(fake_github), PR, "default", parts)
    assert len(result.created) == 3 and not result.updated and not result.deleted
    assert fake_github.bodies(PR) == parts


def test_update_in_place_keep_unchanged_delete_stale(fake_github: FakeGitHub) -> None:
    one = fake_github.add(PR, part(1, 3, "old one"))
    two = fake_github.add(PR, part(2, 2, "same two"))
    three = fake_github.add(PR, part(3, 3, "stale three"))
    result = sync(client(fake_github), PR, "default", [part(1, 2, "new one"), part(2, 2, "same two")])
    assert result.updated == [one] and result.unchanged == [two] and result.deleted == [three]
    assert fake_github.bodies(PR) == [part(1, 2, "new one"), part(2, 2, "same two")]
    assert ("PATCH", f"/repos/{fake_github.repo}/issues/comments/{two}") not in fake_github.calls  # no needless write


def test_humans_other_keys_and_other_bots_comments_are_untouched(fake_github: FakeGitHub) -> None:
    human = fake_github.add(PR, part(1, 1, "a human pasting our marker"), HUMAN)
    quote = fake_github.add(PR, "> " + part(1, 1, "quoted"), BOT)
    other_key = fake_github.add(PR, part(1, 1, "another cluster", key="eu-1"))
    plain = fake_github.add(PR, "LGTM")
    sync(client(fake_github), PR, "default", [part(1, 1, "ours")])
    assert {human, quote, other_key, plain} <= set(fake_github.comments)
    assert fake_github.comments[human]["body"] == part(1, 1, "a human pasting our marker")
    assert fake_github.bodies(PR)[-1] == part(1, 1, "ours")


def test_author_filter_trusts_only_that_login(fake_github: FakeGitHub) -> None:
    other_bot = fake_github.add(PR, part(1, 1, "someone else's bot"), {"login": "renovate[bot]", "type": "Bot"})
    pat_user = fake_github.add(PR, part(1, 1, "posted with a PAT"), {"login": "ci-user", "type": "User"})
    result = sync(client(fake_github), PR, "default", [part(1, 1, "new")], author="ci-user")
    assert result.updated == [pat_user]
    assert fake_github.comments[other_bot]["body"] == part(1, 1, "someone else's bot")


def test_duplicate_parts_are_deleted_the_first_kept(fake_github: FakeGitHub) -> None:
    first = fake_github.add(PR, part(1, 1, "x"))
    dup = fake_github.add(PR, part(1, 1, "x"))
    result = sync(client(fake_github), PR, "default", [part(1, 1, "x")])
    assert result.deleted == [dup] and result.unchanged == [first]


def test_listing_follows_every_page(fake_github: FakeGitHub) -> None:
    for n in range(7):
        fake_github.add(PR, f"chatter {n}", HUMAN)
    last = fake_github.add(PR, part(2, 2, "stale two, on the last page"))
    fake_github.add(PR + 1, part(1, 1, "another PR"))
    comments = client(fake_github).list_comments(PR)
    assert len(comments) == 8
    gets = [c for c in fake_github.calls if c[0] == "GET"]
    assert len(gets) == 4  # 8 comments, pages of 2
    result = sync(client(fake_github), PR, "default", [part(1, 1, "one")])
    assert result.deleted == [last]  # found only on page 4
    assert fake_github.bodies(PR + 1) == [part(1, 1, "another PR")]


def test_api_errors_name_the_call_and_githubs_message(fake_github: FakeGitHub) -> None:
    bad = GitHub(fake_github.repo, "wrong", fake_github.url)
    with pytest.raises(
        GitHubError, match=r"GET /repos/acme/workloads/issues/7/comments\?per_page=100: 401 Bad credentials"
    ) as exc:
        bad.list_comments(PR)
    assert exc.value.status == 401
    with pytest.raises(GitHubError, match="404 Not Found"):
        client(fake_github).update_comment(999, "x")
    with pytest.raises(GitHubError, match="not owner/name"):
        GitHub("acme", "t", fake_github.url)


def test_unreachable_api_is_an_error_not_a_traceback() -> None:
    with pytest.raises(
        GitHubError, match=re.escape("GET /repos/a/b/issues/1/comments?per_page=100: http://127.0.0.1:9: ")
    ):
        GitHub("a/b", "t", "http://127.0.0.1:9", timeout=2).list_comments(1)


def _post(tmp_path: Path, fake: FakeGitHub, parts: list[str], *extra: str, token: str = "") -> tuple[int, str]:
    out = tmp_path / "report"
    out.mkdir(exist_ok=True)
    for old in out.glob("comment.*.md"):
        old.unlink()
    for i, text in enumerate(parts, start=1):
        (out / f"comment.{i}.md").write_text(text)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}))
    env = {
        "GITHUB_TOKEN": token or fake.token,
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": fake.repo,
        "GITHUB_EVENT_PATH": str(event),
    }
    result = CliRunner().invoke(pr_check, ["post", "--out-dir", str(out), *extra], env=env, catch_exceptions=False)
    return result.exit_code, result.output


def test_post_command_shrinks_the_set_when_the_diff_shrinks(tmp_path: Path, fake_github: FakeGitHub) -> None:
    # 12 parts an uncapped earlier version posted: the capped set replaces them in place
    for i in range(1, 13):
        fake_github.add(PR, part(i, 12, f"old p{i}"))
    long = [part(i, 10, f"p{i}") for i in range(1, 11)]  # more than a page of comments
    code, output = _post(tmp_path, fake_github, long)
    assert code == 0, output
    assert fake_github.bodies(PR) == long
    assert "deleted stale part 12" in output and "deleted stale part 11" in output
    short = [part(1, 2, "p1"), part(2, 2, "p2")]
    code, output = _post(tmp_path, fake_github, short)
    assert code == 0, output
    assert fake_github.bodies(PR) == short
    assert "deleted stale part 10" in output


def test_post_never_posts_more_than_the_ceiling(tmp_path: Path, fake_github: FakeGitHub) -> None:
    code, output = _post(tmp_path, fake_github, [part(i, 11, f"p{i}") for i in range(1, 12)])
    assert code == 1 and "11 comment parts: more than 10 are never posted" in output
    assert fake_github.calls == []


def test_post_on_a_read_only_token_warns_and_passes(tmp_path: Path, fake_github: FakeGitHub) -> None:
    fake_github.deny_writes = True
    code, output = _post(tmp_path, fake_github, [part(1, 1, "x")])
    assert code == 0
    assert output.startswith("::warning::cannot comment on the PR (GitHub API: POST ")
    assert "403 Resource not accessible by integration" in output


def test_post_failures_exit_1_with_a_message(tmp_path: Path, fake_github: FakeGitHub) -> None:
    code, output = _post(tmp_path, fake_github, [part(1, 1, "x")], token="expired")
    assert code == 1 and "error: GitHub API: GET" in output and "401 Bad credentials" in output
    assert "Traceback" not in output
    code, output = _post(tmp_path, fake_github, [])
    assert code == 1 and "no comment.<i>.md parts to post" in output
    code, output = _post(tmp_path, fake_github, [part(1, 1, "x")], "--key", "../etc")
    assert code == 2 and "letters, digits" in output
