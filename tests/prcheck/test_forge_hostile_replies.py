"""Issue 31.8: a forge (or whatever answers in its place) that replies with a JSON document
nested 100,000 deep, or an ``X-Next-Page`` that only looks like a number, gets a clean error
naming the forge, never a ``RecursionError`` / ``ValueError`` traceback. Against the fake
forges over real HTTP: GitHub's and GitLab's comment lists, and both forges' commit statuses.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.cli.prcheck import pr_check
from grove_gitops.diff.markdown import MARKER, part_marker
from grove_gitops.forge.gitlab import GitLab, GitLabError
from grove_gitops.forge.http import ForgeError
from grove_gitops.forge.statuses import StatusClient, StatusTarget
from grove_gitops.prcheck.github import GitHub, GitHubError
from tests.prcheck.fakegithub import FakeGitHub
from tests.prcheck.fakegitlab import FakeGitLab
from tests.prcheck.fakejson import running

TOKEN = "ghs_HOSTILE0123456789token"
#: Far deeper than Python's JSON decoder can recurse.
DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
SHA = "a" * 40


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with running(FakeGitHub(token=TOKEN).start()) as fake:
        yield fake


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with running(FakeGitLab(token=TOKEN).start()) as fake:
        yield fake


@pytest.mark.parametrize("raw", [DEEP, DEEP_OBJECT], ids=["list", "object"])
def test_a_deeply_nested_github_comment_list_is_a_clean_error(github: FakeGitHub, raw: bytes) -> None:
    github.replies["GET"] = (200, raw)
    with pytest.raises(GitHubError, match=r"^GitHub API: GET /repos/.*: the reply is nested too deeply$"):
        GitHub(github.repo, TOKEN, github.url, timeout=10).list_comments(7)


@pytest.mark.parametrize("raw", [DEEP, DEEP_OBJECT], ids=["list", "object"])
def test_a_deeply_nested_gitlab_note_list_is_a_clean_error(gitlab: FakeGitLab, raw: bytes) -> None:
    gitlab.replies["GET"] = (200, raw)
    with pytest.raises(GitLabError, match=r"^GitLab API: GET /projects/.*: the reply is nested too deeply$"):
        GitLab(gitlab.project, 12, TOKEN, gitlab.api, timeout=10).list_comments(12)


def test_a_deeply_nested_error_body_still_gives_the_status(github: FakeGitHub) -> None:
    github.replies["GET"] = (500, DEEP)
    with pytest.raises(GitHubError, match=r"^GitHub API: GET .*: 500 \(no JSON message\)$"):
        GitHub(github.repo, TOKEN, github.url, timeout=10).list_comments(7)


@pytest.mark.parametrize("forge", ["github", "gitlab"])
def test_a_deeply_nested_status_reply_is_a_clean_error(github: FakeGitHub, gitlab: FakeGitLab, forge: str) -> None:
    fake = github if forge == "github" else gitlab
    fake.replies["POST"] = (201, DEEP)
    api, repo = (github.url, github.repo) if forge == "github" else (gitlab.api, gitlab.project)
    client = StatusClient(StatusTarget(forge, api, repo), TOKEN, timeout=10)
    label = "GitHub API" if forge == "github" else "GitLab API"
    with pytest.raises(ForgeError, match=rf"^{label}: POST .*/statuses/{SHA}: the reply is nested too deeply$"):
        client.post(SHA, "success", "rendered")


@pytest.mark.parametrize("page", ["²", "¹", "1e3", "-1", "0x10", "1234567890", "2 "])
def test_an_x_next_page_that_is_not_a_page_number_is_a_clean_error(gitlab: FakeGitLab, page: str) -> None:
    """``"²".isdigit()`` is true and ``int("²")`` raises: only ASCII digits, at most nine."""
    gitlab.replies["GET"] = (200, b"[]")
    gitlab.reply_headers["X-Next-Page"] = page
    client = GitLab(gitlab.project, 12, TOKEN, gitlab.api, timeout=10)
    if page == "2 ":  # surrounding blanks are HTTP's, not the value's: page 2, then the same page
        with pytest.raises(GitLabError, match="more than 100 pages, or a page repeats"):
            client.list_comments(12)
        return
    with pytest.raises(GitLabError, match=r"^GitLab API: GET /projects/.*: X-Next-Page '.*' is not a page number$"):
        client.list_comments(12)


def test_an_empty_x_next_page_ends_the_listing(gitlab: FakeGitLab) -> None:
    """GitLab sends an empty ``X-Next-Page`` on the last page."""
    gitlab.replies["GET"] = (200, b'[{"id": 1, "body": "x", "author": {"username": "bot"}}]')
    gitlab.reply_headers["X-Next-Page"] = ""
    assert [c.body for c in GitLab(gitlab.project, 12, TOKEN, gitlab.api, timeout=10).list_comments(12)] == ["x"]


def test_the_pr_check_reports_a_deep_reply_as_an_error_naming_github(tmp_path: Path, github: FakeGitHub) -> None:
    github.replies["GET"] = (200, DEEP)
    out = tmp_path / "report"
    out.mkdir()
    (out / "comment.1.md").write_text(f"{MARKER}\n{part_marker('default', 1, 1)}\nreport")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    env = {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": github.url,
        "GITHUB_REPOSITORY": github.repo,
        "GITHUB_EVENT_PATH": str(event),
    }
    result = CliRunner().invoke(pr_check, ["post", "--out-dir", str(out)], env=env, catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output.startswith("error: GitHub API: GET ") and "nested too deeply" in result.output
    assert "Traceback" not in result.output


@given(st.text(alphabet=st.characters(max_codepoint=0xFF), max_size=20))
def test_any_x_next_page_is_a_page_or_a_clean_error(page: str) -> None:
    """Whatever the header holds (latin-1, as HTTP carries it): the next page of this API, or
    a GitLabError; never a ValueError."""
    client = GitLab("acme/workloads", 12, TOKEN, "http://127.0.0.1:9/api/v4", timeout=1)
    url = f"{client.api}/projects/acme%2Fworkloads/merge_requests/12/notes?per_page=100"
    try:
        nxt = client._next(url, {"x-next-page": page})
    except GitLabError as exc:
        assert str(exc).startswith("GitLab API: GET ")
        return
    if page.strip():
        assert nxt == f"{url}&page={int(page.strip())}" and page.strip().isascii()
    else:
        assert nxt is None
