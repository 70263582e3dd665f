"""Checks of the Cluster fields that become another tool's input: image references, git URLs,
git revisions and repository paths (issue 21, item 4).

A Cluster comes from the untrusted source tree, and its ``gitops`` fields are copied into the
generated Argo CD Applications and Flux Kustomizations of the output branch, which Argo CD and
Flux then hand to git: ``repoURL: "ext::sh -c ..."`` is a command, ``targetRevision:
--upload-pack=...`` an option, ``https://user:token@host/...`` a credential published in the
output branch. ``imageRegistry`` becomes part of every container image. So each is checked
against the grammar of what reads it, and refused otherwise:

* an image reference or registry: the Docker/OCI reference grammar of
  ``github.com/distribution/reference`` (``regexp.go``: a ``host[:port]`` domain, lowercase
  path components joined by ``.``, ``_``, ``__`` or dashes, a tag of at most 128 word
  characters, a digest), at most 255 characters of name (``NameTotalLengthMax``);
* a git URL: ``https://host[:port]/path``, ``ssh://[user@]host[:port]/path`` or scp-like
  ``user@host:path``, printable ASCII, nothing option-like (``-...``) where git or ssh would
  read an option, no credentials (no userinfo at all in https: a token is often the user
  name; no ``user:password@`` in ssh) -- and the value is never echoed with its userinfo;
* a revision: ``HEAD`` or a name ``git check-ref-format`` accepts (``refs/heads/<name>``
  valid), not option-like;
* a repository path: relative, ``/``-separated, no ``.``/``..`` or option-like component.

Every check returns the list of reasons (empty: valid), like :mod:`grove_gitops.fields.k8snames`.
Owns these grammars only; it lives with validation (not in ``fleet/``) because the API models of
both a fleet's Cluster and a single cluster's RenderConfiguration wiring check with it.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

#: ``NameTotalLengthMax`` of distribution/reference: a repository name (domain and path).
IMAGE_NAME_MAX = 255
#: A whole reference: name, ``:`` tag (128), ``@`` digest (sha512: 7 + 128). Checked before any
#: regular expression runs, so none ever sees a long string.
IMAGE_REFERENCE_MAX = IMAGE_NAME_MAX + 1 + 128 + 1 + 136
#: Git URLs: longer than any real one, short enough for every tool that reads them.
GIT_URL_MAX = 2048
#: A revision: Argo CD's ``targetRevision``; git allows longer ref names, no server needs them.
GIT_REF_MAX = 255
#: A path inside the output repository.
REPO_PATH_MAX = 1024
#: Values are echoed in messages up to this many characters.
_SHOWN_MAX = 100

# distribution/reference, regexp.go (the same construction, the same names).
_ALPHANUMERIC = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALPHANUMERIC}(?:{_SEPARATOR}{_ALPHANUMERIC})*"
_DOMAIN_NAME_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_IPV6 = r"\[(?:[a-fA-F0-9:]+)\]"
_DOMAIN_NAME = rf"{_DOMAIN_NAME_COMPONENT}(?:\.{_DOMAIN_NAME_COMPONENT})*"
_HOST = rf"(?:{_DOMAIN_NAME}|{_IPV6})"
_DOMAIN_AND_PORT = rf"{_HOST}(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REMOTE_NAME = rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_NAME = rf"(?:{_DOMAIN_AND_PORT}/)?{_REMOTE_NAME}"
# The grammars below are pattern strings, compiled by ``re``'s own cache on first use: compiled
# at import they cost ~2.7 ms of every render's start-up (issue 35.4), which rarely checks one.
_REFERENCE = rf"({_NAME})(?::({_TAG}))?(?:@({_DIGEST}))?"
_REGISTRY = rf"{_DOMAIN_AND_PORT}(?:/{_REMOTE_NAME})?"

REGISTRY_MSG = (
    "a registry host with an optional port and path, e.g. mirror.example.com/ai or registry.local:5000 "
    "(Docker reference grammar: lowercase path components of [a-z0-9] joined by '.', '_', '__' or '-')"
)

# Git URLs. A host is an RFC 1123 name, an IPv4 address (a name too) or a bracketed IPv6 one.
_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_GIT_HOST = rf"(?:{_HOST_LABEL}(?:\.{_HOST_LABEL})*|\[[0-9A-Fa-f:.]+\])"
_PORT = r"(?::(?P<port>[0-9]{1,5}))?"
_SSH_USER = r"[A-Za-z0-9_][A-Za-z0-9._-]*"
#: RFC 3986 ``pchar`` and ``/`` (no ``?`` query, no ``#`` fragment); a ``%`` must encode a byte.
_URL_PATH = r"(?:[A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*"
_HTTPS = rf"https://(?P<host>{_GIT_HOST}){_PORT}/(?P<path>{_URL_PATH})"
_SSH = rf"ssh://(?:(?P<user>{_SSH_USER})@)?(?P<host>{_GIT_HOST}){_PORT}/(?P<path>{_URL_PATH})"
_SCP = rf"(?P<user>{_SSH_USER})@(?P<host>{_GIT_HOST}):(?P<path>{_URL_PATH})"
#: What may carry credentials, for messages: everything between ``scheme://`` (or the start)
#: and the last ``@`` (more than the userinfo when a path holds an ``@``: never less).
_REDACT = r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)?.*@"
_PERCENT_CONTROL = r"%(?:[01][0-9A-Fa-f]|7[Ff])"

GIT_URL_MSG = (
    "a git repository URL: https://host[:port]/path, ssh://[user@]host[:port]/path or user@host:path "
    "(no other transport, no local path)"
)


def _git_url_match(value: str) -> re.Match[str] | None:
    """The https, ssh or scp-like form ``value`` has, if any."""
    return (
        re.fullmatch(_HTTPS, value, re.ASCII) or re.fullmatch(_SSH, value, re.ASCII) or re.fullmatch(_SCP, value, re.ASCII)
    )


def shown(value: str) -> str:
    """``value`` for a message: quoted, cut to a readable length."""
    if len(value) > _SHOWN_MAX:
        return f"{value[:_SHOWN_MAX]!r}... ({len(value)} characters)"
    return repr(value)


def shown_url(value: str) -> str:
    """A URL for a message, its userinfo (a user name, a password, a token) replaced by ``***``."""
    return shown(re.sub(_REDACT, lambda m: f"{m.group('scheme') or ''}***@", value, count=1, flags=re.DOTALL))


def _unprintable(value: str) -> bool:
    return any(not c.isprintable() or c.isspace() for c in value)


def image_reference_problems(value: str) -> list[str]:
    """Why ``value`` is not an image reference (``[domain[:port]/]path[:tag][@digest]``)."""
    if not value:
        return ["must not be empty"]
    if len(value) > IMAGE_REFERENCE_MAX:
        return [f"must be no more than {IMAGE_REFERENCE_MAX} characters"]
    match = re.fullmatch(_REFERENCE, value, re.ASCII)
    if match is None:
        return ["not an image reference ([registry[:port]/]path[:tag][@digest], lowercase path)"]
    if len(match.group(1)) > IMAGE_NAME_MAX:
        return [f"the repository name must be no more than {IMAGE_NAME_MAX} characters"]
    return []


def image_registry_problems(value: str) -> list[str]:
    """Why ``value`` cannot replace the registry of an image (``spec.overrides.imageRegistry``).

    It must parse as the domain and optional path of a reference, and its first component must
    be a registry by Docker's rule (a ``.`` or a ``:port``, or ``localhost``): otherwise the
    rewritten images would name a Docker Hub repository instead.
    """
    if not value:
        return ["must not be empty"]
    if len(value) > IMAGE_NAME_MAX:
        return [f"must be no more than {IMAGE_NAME_MAX} characters"]
    if re.fullmatch(_REGISTRY, value, re.ASCII) is None:
        return [REGISTRY_MSG]
    first = value.partition("/")[0]
    if not is_registry_host(first):
        return [f"{first!r} is not a registry host (it needs a '.' or a ':port', or is localhost); {REGISTRY_MSG}"]
    return []


def is_registry_host(component: str) -> bool:
    """Whether the first component of an image name is its registry (``splitDockerDomain``
    of distribution/reference: a ``.``, a ``:``, an upper-case letter, or ``localhost``);
    otherwise the name is a Docker Hub repository."""
    return "." in component or ":" in component or component == "localhost" or component.lower() != component


def git_url_problems(value: str) -> list[str]:
    """Why ``value`` may not be the repository URL written into the generated wiring.

    The messages never contain ``value`` itself: a caller shows it with :func:`shown_url`.
    """
    if not value:
        return ["must not be empty"]
    if len(value) > GIT_URL_MAX:
        return [f"must be no more than {GIT_URL_MAX} characters"]
    if _unprintable(value) or not value.isascii():
        return ["must be printable ASCII without spaces (percent-encode the rest)"]
    if value.startswith("-"):
        return ["must not start with '-' (git would read an option)"]
    userinfo = _userinfo(value)
    if userinfo is not None and value.lower().startswith(("http://", "https://")):
        return [
            "must not carry credentials (no user or token before '@' in an https URL): the URL is copied "
            "into the output branch; give Argo CD / Flux the credentials in a Secret"
        ]
    if userinfo is not None and ":" in userinfo:
        return [
            "must not carry a password (user:password@): the URL is copied into the output branch; "
            "use an SSH key in Argo CD / Flux"
        ]
    match = _git_url_match(value)
    if match is None:
        return [GIT_URL_MSG]
    port = match.groupdict().get("port")
    if port is not None and not 0 < int(port) < 65536:
        return ["the port must be 1 to 65535"]
    path = match.group("path")
    if not path.strip("/"):
        return ["must name a repository path after the host"]
    if path.startswith("-"):
        return ["the path must not start with '-' (git would read an option)"]
    if re.search(_PERCENT_CONTROL, path):
        return ["must not percent-encode control characters"]
    return []


def _userinfo(url: str) -> str | None:
    """The userinfo of ``url`` (the ``user[:password]`` before ``@``), or None: in a URL the
    authority's, in scp-like syntax what precedes the first ``@``."""
    if "://" in url:
        authority = url.split("://", 1)[1].split("/", 1)[0]
        return authority.rpartition("@")[0] if "@" in authority else None
    head = url.split("/", 1)[0]
    return head.partition("@")[0] if "@" in head else None


def git_ref_problems(value: str) -> list[str]:
    """Why ``value`` is not a revision git and Argo CD may be given: ``HEAD``, or a branch, tag,
    full ref (``refs/heads/x``) or commit id that ``git check-ref-format`` accepts, never an
    option (``-...``)."""
    if not value:
        return ["must not be empty"]
    if len(value) > GIT_REF_MAX:
        return [f"must be no more than {GIT_REF_MAX} characters"]
    if value.startswith("-"):
        return ["must not start with '-' (git would read an option)"]
    if value == "HEAD":
        return []
    reasons = _check_ref_format(value)
    return [f"not a valid git ref name: {'; '.join(reasons)}"] if reasons else []


def _check_ref_format(name: str) -> list[str]:
    """The rules of ``git check-ref-format`` (``refs.c``: ``check_refname_component``) for a
    one- or more-level name."""
    out: list[str] = []
    if any(ord(c) < 32 or ord(c) == 127 or c in " ~^:?*[\\" or not c.isprintable() for c in name):
        out.append("no control characters, spaces or any of ~^:?*[\\")
    if ".." in name:
        out.append("no '..'")
    if "@{" in name:
        out.append("no '@{'")
    if name == "@":
        out.append("not '@' alone")
    if name.startswith("/") or name.endswith("/") or "//" in name:
        out.append("no leading, trailing or double '/'")
    if name.endswith("."):
        out.append("must not end with '.'")
    parts = name.split("/")
    if any(p.startswith(".") for p in parts):
        out.append("no component may start with '.'")
    if any(p.endswith(".lock") for p in parts):
        out.append("no component may end with '.lock'")
    return out


def repo_path_problems(value: str) -> list[str]:
    """Why ``value`` may not be a directory inside the output repository (``spec.gitops.path``):
    relative, ``/``-separated, printable, no ``.``, ``..`` or option-like (``-...``) component."""
    if len(value) > REPO_PATH_MAX:
        return [f"must be no more than {REPO_PATH_MAX} characters"]
    if value.startswith("/") or "\\" in value or any(not c.isprintable() for c in value):
        return ["must be a relative path ('/'-separated, printable, no '\\')"]
    parts = [p for p in value.split("/") if p]
    if any(p in (".", "..") for p in parts):
        return ["must not contain '.' or '..' components"]
    if any(p.startswith("-") for p in parts):
        return ["no component may start with '-' (a tool would read an option)"]
    return []


#: The longest path or pattern inside the source tree.
MAX_PATH = 1024


def path_problems(value: str) -> list[str]:
    """A path (or pattern) inside the source tree: relative, ``/``-separated, no ``..``."""
    if not value:
        return ["must not be empty"]
    if len(value) > MAX_PATH:
        return [f"must be no more than {MAX_PATH} characters"]
    if value.startswith("/") or "\\" in value or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return ["must be a relative path inside the source tree ('/'-separated, no control characters)"]
    if ".." in PurePosixPath(value).parts:
        return ["must stay inside the source tree (no '..')"]
    return []
