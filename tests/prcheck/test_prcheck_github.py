"""The GitHub token goes only to GITHUB_API_URL's origin and is never printed; GitHub's
replies of an unexpected shape are clean errors. Two fake GitHubs over real HTTP: ``api``
(the configured one) and ``elsewhere`` (another port: another origin), and what each received."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from http.client import HTTPMessage
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from grove_gitops.cli.prcheck import pr_check
from grove_gitops.diff.markdown import MARKER, part_marker
from grove_gitops.prcheck import github as github_module
from grove_gitops.prcheck.github import GitHub, GitHubError
from tests.prcheck.fakegithub import FakeGitHub
from tests.prcheck.fakejson import running

PR = 7
TOKEN = "ghs_0123456789abcdefSECRET"


@pytest.fixture
def api() -> Iterator[FakeGitHub]:
    with running(FakeGitHub(token=TOKEN).start()) as fake:
        yield fake


@pytest.fixture
def elsewhere() -> Iterator[FakeGitHub]:
    with running(FakeGitHub(token=TOKEN).start()) as fake:
        yield fake


def client(fake: FakeGitHub, token: str = TOKEN) -> GitHub:
    return GitHub(fake.repo, token, fake.url, timeout=10)


def post(tmp_path: Path, api_url: str, token: str = TOKEN) -> tuple[int, str]:
    out = tmp_path / "report"
    out.mkdir(exist_ok=True)
    (out / "comment.1.md").write_text(f"{MARKER}\n{part_marker('default', 1, 1)}\nreport")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}))
    env = {
        "GITHUB_TOKEN": token,
        "GITHUB_API_URL": api_url,
        "GITHUB_REPOSITORY": "acme/workloads",
        "GITHUB_EVENT_PATH": str(event),
    }
    result = CliRunner().invoke(pr_check, ["post", "--out-dir", str(out)], env=env, catch_exceptions=False)
    return result.exit_code, result.output


def test_a_redirect_to_another_host_never_gets_the_token(
    tmp_path: Path, api: FakeGitHub, elsewhere: FakeGitHub
) -> None:
    api.redirect_to = elsewhere.url
    with pytest.raises(GitHubError, match=r"a 302 redirect to another host \(127\.0\.0\.1\) is refused"):
        client(api).list_comments(PR)
    assert elsewhere.requests == []
    code, output = post(tmp_path, api.url)
    assert code == 1 and "redirect to another host" in output and "Traceback" not in output
    assert elsewhere.requests == []
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in api.requests)


def test_a_redirect_within_the_api_keeps_the_token() -> None:
    """GitHub answers 301 for a renamed repository: that redirect is still followed."""
    handler = github_module._SameOriginRedirects(("https", "api.github.com", 443))
    req = urllib.request.Request("https://api.github.com/repos/a/b/issues/1/comments")
    req.add_header("Authorization", "Bearer t")
    new = handler.redirect_request(
        req, BytesIO(), 301, "Moved", HTTPMessage(), "https://api.github.com/repositories/9/issues/1/comments"
    )
    assert new is not None and new.get_header("Authorization") == "Bearer t"
    for other in ("https://evil.example/x", "http://api.github.com/x", "https://api.github.com:8443/x"):
        with pytest.raises(GitHubError, match="redirect to another host"):
            handler.redirect_request(req, BytesIO(), 302, "Found", HTTPMessage(), other)


def test_a_next_page_link_to_another_host_is_refused(api: FakeGitHub, elsewhere: FakeGitHub) -> None:
    for n in range(3):
        api.add(PR, f"c{n}")
    api.link_base = elsewhere.url
    with pytest.raises(GitHubError, match=r"refusing a next-page link to another host \(127\.0\.0\.1\)"):
        client(api).list_comments(PR)
    assert elsewhere.requests == []
    assert len(api.requests) == 1


def test_a_next_page_loop_ends(api: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    gh = client(api)

    def same_page(method: str, url: str, body: Any = None) -> tuple[Any, dict[str, str]]:
        calls.append(url)
        assert len(calls) < 500, "the listing never ends"
        return [], {"link": f'<{gh.api}/repos/{gh.repo}/issues/{PR}/comments?page={len(calls) % 2}>; rel="next"'}

    monkeypatch.setattr(gh, "_request", same_page)
    with pytest.raises(GitHubError, match="a page repeats"):
        gh.list_comments(PR)
    assert len(calls) == 3


@pytest.mark.parametrize("where", ["message", "body"])
def test_a_401_that_echoes_the_token_never_prints_it(tmp_path: Path, api: FakeGitHub, where: str) -> None:
    wrong = "ghp_WRONGtoken0123456789"
    if where == "message":
        api.echo_auth = True
        token = wrong
    else:  # not JSON at all: an HTML error page quoting the headers
        api.replies["GET"] = (401, f"<html>Authorization: Bearer {TOKEN}</html>".encode())
        token = TOKEN
    with pytest.raises(GitHubError) as exc:
        client(api, token).list_comments(PR)
    assert exc.value.status == 401 and token not in str(exc.value)
    assert "401" in str(exc.value)
    code, output = post(tmp_path, api.url, token)
    assert code == 1 and token not in output and "Traceback" not in output


def test_credentials_in_the_api_url_are_refused_and_never_printed(tmp_path: Path) -> None:
    for url in ("http://x-access-token:ghp_INURL12345@127.0.0.1:9", "https://ghp_INURL12345@api.github.com"):
        with pytest.raises(GitHubError, match="credentials in the URL are refused") as exc:
            GitHub("a/b", "t", url).list_comments(1)
        assert "ghp_INURL12345" not in str(exc.value)
        code, output = post(tmp_path, url)
        assert code == 1 and "ghp_INURL12345" not in output and "Traceback" not in output
    for url, why in (
        ("http://api.example.com", "plain http only to this machine"),
        ("ftp://api.example.com", "expected an http"),
        ("https://api.example.com/?x=ghp_Q", "without a query"),
        ("https://:99999999/", "not a URL"),
        ("https:///path", "expected an http"),
    ):
        with pytest.raises(GitHubError, match=why) as exc:
            GitHub("a/b", "t", url)
        assert "ghp_Q" not in str(exc.value)


def test_a_connection_error_names_no_token(api: FakeGitHub) -> None:
    gh = GitHub("a/b", TOKEN, "http://127.0.0.1:9", timeout=2)
    with pytest.raises(GitHubError) as exc:
        gh.list_comments(1)
    assert TOKEN not in str(exc.value) and "http://127.0.0.1:9" in str(exc.value)


@pytest.mark.parametrize(
    ("method", "status", "raw", "why"),
    [
        ("GET", 200, b'{"id": 1, "body": "x"}', "expected a list of comments"),
        ("GET", 200, b'[{"body": "x"}]', "a comment without a numeric id"),
        ("GET", 200, b'[{"id": "12", "body": "x"}]', "a comment without a numeric id"),
        ("GET", 200, b'[{"id": 1, "body": 5}]', "body is not a string"),
        ("GET", 200, b'[{"id": 1, "body": "x", "user": "bot"}]', "user is not an object"),
        ("GET", 200, b"[1, 2]", "a comment is not an object"),
        ("GET", 200, b"<html>not json</html>", "the reply is not JSON"),
        ("POST", 201, b"[]", "a comment is not an object"),
        ("POST", 201, b'{"body": "x"}', "a comment without a numeric id"),
    ],
)
def test_replies_of_an_unexpected_shape_are_clean_errors(
    tmp_path: Path, api: FakeGitHub, method: str, status: int, raw: bytes, why: str
) -> None:
    api.replies[method] = (status, raw)
    code, output = post(tmp_path, api.url)
    assert code == 1, output
    assert why in output and "Traceback" not in output
    assert output.startswith("error: GitHub API: ")


def test_an_oversized_reply_is_refused(api: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(github_module, "MAX_REPLY_BYTES", 1000)
    api.replies["GET"] = (200, b"[" + b",".join(b'{"id": 1, "body": "x"}' for _ in range(100)) + b"]")
    with pytest.raises(GitHubError, match="larger than 1000 bytes"):
        client(api).list_comments(PR)


def test_the_token_goes_only_to_the_api(api: FakeGitHub, elsewhere: FakeGitHub) -> None:
    """A normal sync: every request went to the configured API, with the token."""
    from grove_gitops.prcheck.sticky import sync

    for n in range(5):
        api.add(PR, f"c{n}")
    sync(client(api), PR, "default", [f"{MARKER}\n{part_marker('default', 1, 1)}\nx"])
    assert api.requests and all(auth == f"Bearer {TOKEN}" for _, _, auth in api.requests)
    assert elsewhere.requests == []
