"""Cluster fields copied into the generated wiring or the images are checked (issue 21, item 4).

``repoURL: "ext::sh -c ..."``, URLs with credentials (copied into the output branch),
``targetRevision: --upload-pack=...``, a 5,000-character or ``../`` image registry: each is
``file: field: message``, exit 1, no traceback, nothing written, a credential never printed.
The checks of :mod:`grove_gitops.fields.externalrefs` are fuzzed with hypothesis, the git ref rules
against ``git check-ref-format`` itself.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.cli import main
from grove_gitops.fields import externalrefs as refs
from grove_gitops.fleet.plan import rewrite_image
from grove_gitops.fleet.wiring import shard_name
from grove_gitops.load.patterns import gitignore_spec
from tests.support import PROJECT

FLEET = PROJECT / "examples-fleet"
SECRET = "s3cr3t-T0KEN-value"


def _source(tmp_path: Path, gitops: dict[str, Any] | None = None, overrides: dict[str, Any] | None = None, **spec: Any) -> Path:
    """examples-fleet with the prod-kai Cluster's ``spec.gitops`` / ``spec.overrides`` changed."""
    src = tmp_path / "src"
    shutil.copytree(FLEET, src)
    path = src / "clusters" / "prod-kai.yaml"
    cluster = yaml.safe_load(path.read_text())
    cluster["spec"]["gitops"].update(gitops or {})
    cluster["spec"]["overrides"].update(overrides or {})
    cluster["spec"].update(spec)
    path.write_text(yaml.safe_dump(cluster))
    return src


HOSTILE: list[tuple[dict[str, Any], str, str]] = [
    # (a field of the Cluster, the field path, a part of the message)
    ({"gitops": {"repoURL": "ext::sh -c touch% /tmp/pwned"}}, "spec.gitops.repoURL", "printable ASCII without spaces"),
    ({"gitops": {"repoURL": "ext::sh"}}, "spec.gitops.repoURL", "no other transport"),
    ({"gitops": {"repoURL": f"https://ci:{SECRET}@git.example.com/x.git"}}, "spec.gitops.repoURL", "credentials"),
    ({"gitops": {"repoURL": f"https://{SECRET}@github.com/x.git"}}, "spec.gitops.repoURL", "credentials"),
    ({"gitops": {"repoURL": f"http://u:{SECRET}@github.com/x.git"}}, "spec.gitops.repoURL", "credentials"),
    ({"gitops": {"repoURL": f"ssh://git:{SECRET}@github.com/x.git"}}, "spec.gitops.repoURL", "password"),
    ({"gitops": {"repoURL": f"git:{SECRET}@github.com:x.git"}}, "spec.gitops.repoURL", "password"),
    ({"gitops": {"repoURL": "file:///srv/git/x.git"}}, "spec.gitops.repoURL", "no local path"),
    ({"gitops": {"repoURL": "/srv/git/x.git"}}, "spec.gitops.repoURL", "no local path"),
    ({"gitops": {"repoURL": "../x.git"}}, "spec.gitops.repoURL", "no local path"),
    ({"gitops": {"repoURL": "--upload-pack=touch"}}, "spec.gitops.repoURL", "must not start with '-'"),
    ({"gitops": {"repoURL": "ssh://-oProxyCommand=touch%20x/y"}}, "spec.gitops.repoURL", "no other transport"),
    ({"gitops": {"repoURL": "git@github.com:-x.git"}}, "spec.gitops.repoURL", "must not start with '-'"),
    ({"gitops": {"repoURL": "http://git.example.com/x.git"}}, "spec.gitops.repoURL", "no other transport"),
    ({"gitops": {"repoURL": "https://git.example.com/x\n.git"}}, "spec.gitops.repoURL", "printable ASCII"),
    ({"gitops": {"repoURL": "https://git.example.com/" + "x" * 5000}}, "spec.gitops.repoURL", "no more than 2048"),
    ({"gitops": {"targetRevision": "--upload-pack=touch /tmp/x"}}, "spec.gitops.targetRevision", "must not start with '-'"),
    ({"gitops": {"targetRevision": "main..evil"}}, "spec.gitops.targetRevision", "not a valid git ref name"),
    ({"gitops": {"targetRevision": "a b"}}, "spec.gitops.targetRevision", "not a valid git ref name"),
    ({"gitops": {"targetRevision": "x" * 300}}, "spec.gitops.targetRevision", "no more than 255"),
    ({"gitops": {"path": "-rf/out"}}, "spec.gitops.path", "'-'"),
    ({"gitops": {"path": "a/./b"}}, "spec.gitops.path", "'.'"),
    ({"gitops": {"flux": {"sourceRef": {"name": "x", "namespace": "Bad NS"}}}}, "spec.gitops.flux.sourceRef.namespace", ""),
    ({"gitops": {"flux": {"interval": "10m\n"}}}, "spec.gitops.flux.interval", "a duration"),
    ({"gitops": {"argocd": {"destinationName": "a\u202eb"}}}, "spec.gitops.argocd.destinationName", "printable"),
    ({"overrides": {"imageRegistry": "evil.example.com/../../x"}}, "spec.overrides.imageRegistry", "Docker reference"),
    ({"overrides": {"imageRegistry": "m" * 5000 + ".example.com"}}, "spec.overrides.imageRegistry", "no more than 255"),
    ({"overrides": {"imageRegistry": "mirror.example.com/AI"}}, "spec.overrides.imageRegistry", "lowercase"),
    ({"overrides": {"imageRegistry": "mirror"}}, "spec.overrides.imageRegistry", "not a registry host"),
    ({"overrides": {"imageRegistry": "mirror.example.com:5000@sha256"}}, "spec.overrides.imageRegistry", "Docker"),
    ({"workloads": {"paths": [f"w{i}/" for i in range(300)]}}, "spec.workloads.paths", "at most 256"),
    ({"workloads": {"paths": ["w/" * 600]}}, "spec.workloads.paths[0]", "no more than 1024"),
]


@pytest.mark.parametrize(("change", "field", "message"), HOSTILE, ids=[f"{h[1]}-{i}" for i, h in enumerate(HOSTILE)])
def test_hostile_wiring_fields_are_refused_before_anything_is_written(
    tmp_path: Path, change: dict[str, Any], field: str, message: str
) -> None:
    src = _source(tmp_path, change.get("gitops"), change.get("overrides"), **{k: v for k, v in change.items() if k not in ("gitops", "overrides")})
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("previous output")
    for command in (["validate", str(src)], ["render", str(src), "--out", str(out)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1, result.output
        lines = [line for line in result.output.splitlines() if line.startswith(f"error: clusters/prod-kai.yaml: {field}: ")]
        assert lines and message in lines[0], result.output
        assert "Traceback" not in result.output and SECRET not in result.output
        assert all(len(line) < 700 for line in result.output.splitlines())  # long values are cut
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize(
    ("repo_url", "revision"),
    [
        ("https://git.example.com/platform/grove-rendered.git", "rendered"),
        ("https://git.example.com:8443/platform/grove%20rendered.git", "refs/heads/release/1.2"),
        ("ssh://git@git.example.com:2222/platform/grove-rendered.git", "HEAD"),
        ("ssh://[2001:db8::1]/srv/rendered.git", "v1.2.3"),
        ("git@github.com:example/grove-rendered.git", "0123456789abcdef0123456789abcdef01234567"),
        ("https://dev.azure.com/org/project/_git/rendered", "feature/x-y_z"),
    ],
)
def test_valid_repository_urls_and_revisions_reach_the_wiring(tmp_path: Path, repo_url: str, revision: str) -> None:
    src = _source(tmp_path, {"repoURL": repo_url, "targetRevision": revision, "path": "fleet/out"})
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["render", str(src), "--out", str(out)])
    assert result.exit_code == 0, result.output
    app = yaml.safe_load((out / "prod-kai" / "_argocd" / f"{shard_name('prod-kai', '_cluster')}.yaml").read_text())
    assert app["spec"]["source"] == {"repoURL": repo_url, "targetRevision": revision, "path": "fleet/out/prod-kai/_cluster"}


@pytest.mark.parametrize("registry", ["localhost:5000", "registry.local:5000/ai/team_a", "[::1]:5000/x", "Mirror.Example.com/a"])
def test_valid_registries_are_accepted(tmp_path: Path, registry: str) -> None:
    src = _source(tmp_path, overrides={"imageRegistry": registry})
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 0, result.output


def test_an_image_the_registry_makes_too_long_is_an_error_of_the_registry(tmp_path: Path) -> None:
    """A valid image and a valid registry whose rewrite is over the 255-character name limit."""
    src = _source(tmp_path, overrides={"imageRegistry": "mirror.example.com/" + "a" * 200})
    embedder = src / "workloads" / "embedder.yaml"
    text = embedder.read_text()
    image = re.search(r"image: (\S+)", text)
    assert image is not None
    long_image = f"ghcr.io/{'b' * 60}/embedder:2.0.0"
    embedder.write_text(text.replace(image.group(1), long_image))
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 1, result.output
    assert "error: clusters/prod-kai.yaml: spec.overrides.imageRegistry: Invalid value:" in result.output
    assert "turns image 'ghcr.io/bbb" in result.output and "no more than 255 characters" in result.output


# ---------------------------------------------------------------- the checks, fuzzed

_ALNUM = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
_SEPARATOR = st.sampled_from([".", "_", "__", "-", "--"])
_PATH_COMPONENT = st.builds(
    lambda first, rest: first + "".join(s + a for s, a in rest), _ALNUM, st.lists(st.tuples(_SEPARATOR, _ALNUM), max_size=3)
)
_DOMAIN_COMPONENT = st.from_regex(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,6}[a-zA-Z0-9])?", fullmatch=True)
_DOMAIN = st.builds(
    lambda parts, tld, port: ".".join([*parts, tld]) + (f":{port}" if port is not None else ""),
    st.lists(_DOMAIN_COMPONENT, min_size=1, max_size=3),
    st.sampled_from(["com", "io", "local"]),
    st.one_of(st.none(), st.integers(1, 65535)),
)
_REGISTRY = st.builds(lambda d, p: "/".join([d, *p]), _DOMAIN, st.lists(_PATH_COMPONENT, max_size=3))
_TAG = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True)
_IMAGE = st.builds(
    lambda domain, path, tag, digest: (f"{domain}/" if domain else "") + "/".join(path) + (f":{tag}" if tag else "")
    + (f"@sha256:{digest}" if digest else ""),
    st.one_of(st.none(), _DOMAIN),
    st.lists(_PATH_COMPONENT, min_size=1, max_size=3),
    st.one_of(st.none(), _TAG),
    st.one_of(st.none(), st.from_regex(r"[0-9a-f]{64}", fullmatch=True)),
)
_ANY_TEXT = st.one_of(
    st.text(max_size=80),
    st.text(alphabet="abc.:/@-_[]%0~^ \n\\", max_size=80),
)


@given(_REGISTRY, _IMAGE)
def test_grammar_registries_are_accepted_and_rewrites_stay_references(registry: str, image: str) -> None:
    assert refs.image_registry_problems(registry) == []
    assert refs.image_reference_problems(image) == []
    rewritten = rewrite_image(image, registry)
    assert rewritten.startswith(registry + "/")
    problems = refs.image_reference_problems(rewritten)
    name = re.split(r"[@]|:(?=[^/]*$)", rewritten)[0]
    assert problems == [] or len(name) > refs.IMAGE_NAME_MAX


@given(_ANY_TEXT)
def test_an_accepted_registry_is_never_a_traversal_an_option_or_long(value: str) -> None:
    if refs.image_registry_problems(value):
        return
    assert len(value) <= refs.IMAGE_NAME_MAX
    assert ".." not in value and "//" not in value and not value.startswith(("-", "/", ".")) and not value.endswith("/")
    assert not any(c.isspace() or c in "@\\" for c in value)
    assert refs.image_reference_problems(value + "/x") == []


_USER = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,10}", fullmatch=True)
_HOST = st.builds(lambda parts: ".".join(parts), st.lists(_DOMAIN_COMPONENT, min_size=1, max_size=3))
_URL_PATH = st.lists(st.from_regex(r"[A-Za-z0-9._~-]{1,10}", fullmatch=True), min_size=1, max_size=4).map("/".join)


@given(
    st.sampled_from(["https", "ssh", "scp"]),
    _USER,
    _HOST,
    st.one_of(st.none(), st.integers(1, 65535)),
    _URL_PATH,
)
def test_https_ssh_and_scp_like_urls_are_accepted(kind: str, user: str, host: str, port: int | None, path: str) -> None:
    colon_port = f":{port}" if port is not None else ""
    url = {
        "https": f"https://{host}{colon_port}/{path}",
        "ssh": f"ssh://{user}@{host}{colon_port}/{path}",
        "scp": f"{user}@{host}:{path}",
    }[kind]
    assert refs.git_url_problems(url) == [] or path.startswith("-")


@given(_USER, st.from_regex(r"[A-Za-z0-9!$&'()*+,;=._~-]{1,20}", fullmatch=True), _HOST, _URL_PATH, st.sampled_from(["https", "ssh", "scp"]))
def test_a_url_with_a_password_is_refused_and_never_shown(user: str, password: str, host: str, path: str, kind: str) -> None:
    secret = f"PW{password}"
    url = {
        "https": f"https://{user}:{secret}@{host}/{path}",
        "ssh": f"ssh://{user}:{secret}@{host}/{path}",
        "scp": f"{user}:{secret}@{host}:{path}",
    }[kind]
    problems = refs.git_url_problems(url)
    assert problems and ("credentials" in problems[0] or "password" in problems[0])
    assert secret not in refs.shown_url(url) and secret not in " ".join(problems)


@given(st.one_of(_ANY_TEXT, st.text(alphabet="abcfilehtps:/@-.ext ", max_size=40)))
def test_an_accepted_url_is_https_ssh_or_scp_like_without_credentials(value: str) -> None:
    if refs.git_url_problems(value):
        return
    assert value.isascii() and value.isprintable() and not any(c.isspace() for c in value)
    assert not value.startswith("-") and not re.match(r"[A-Za-z0-9+.-]*::", value)  # no ext:: transport
    if value.startswith("https://"):
        assert "@" not in value[len("https://") :].split("/")[0]
    elif value.startswith("ssh://"):
        assert ":" not in value[len("ssh://") :].split("/")[0].rpartition("@")[0]
    else:
        user, at, rest = value.partition("@")
        assert at and user and ":" not in user and ":" in rest and not user.startswith("-")


_REF_ALPHABET = "ab/.-_@{}~^:?*[\\ \x01\x7fHEAD0lock"


def _git_accepts(name: str) -> bool:
    done = subprocess.run(["git", "check-ref-format", f"refs/heads/{name}"], capture_output=True, check=False)
    return done.returncode == 0


@given(st.text(alphabet=_REF_ALPHABET, min_size=1, max_size=24))
def test_revisions_follow_git_check_ref_format(value: str) -> None:
    """Ours accepts exactly what git accepts as a branch, except options, and ``@`` (git's
    HEAD shorthand) is refused while ``HEAD`` is allowed."""
    ours = refs.git_ref_problems(value) == []
    if value.startswith("-") or value == "@":
        assert not ours
    elif value == "HEAD":
        assert ours
    else:
        assert ours == _git_accepts(value), value


@given(_ANY_TEXT)
def test_an_accepted_repository_path_stays_inside_and_is_never_an_option(value: str) -> None:
    if refs.repo_path_problems(value):
        return
    parts = [p for p in value.split("/") if p]
    assert not value.startswith("/") and all(p not in (".", "..") and not p.startswith("-") for p in parts)
    assert value.isprintable() and "\\" not in value


@pytest.mark.timeout(120)
def test_a_backtracking_path_pattern_is_matched_in_linear_time(tmp_path: Path) -> None:
    """``*a*a*a*a*a*ab`` against a long file name backtracked for minutes under pathspec's
    default (Python regular expression) backend. Matched by RE2 it costs what any pattern
    costs: validate answers well inside the subprocess's guard, and the pattern still selects
    what it should (the long-named copy is out, ``workloads/`` is in)."""
    src = _source(tmp_path, workloads={"paths": ["workloads/", "*a*a*a*a*a*ab", "**/x/**/*a*a*b"]})
    long_dir = src / "workloads" / "/".join(["a" * 200] * 10)
    long_dir.mkdir(parents=True)
    (long_dir / ("a" * 200 + ".yaml")).write_text("# nothing here\n")
    done = subprocess.run(
        [sys.executable, "-m", "grove_gitops", "validate", str(src)], capture_output=True, text=True, timeout=100, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_untrusted_patterns_are_matched_by_re2() -> None:
    """The fleet's and the ignore file's patterns go through RE2, never the backtracking engine."""
    spec = gitignore_spec(["*a*a*a*a*a*ab"])
    assert spec.match_file("x" + "a" * 5000 + "b")
    assert not spec.match_file("a" * 5000)
    assert spec._backend_name == "re2"
