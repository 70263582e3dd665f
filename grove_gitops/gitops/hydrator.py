"""Argo CD Source Hydrator files, so hydrated-branch tooling reads grove-gitops output (issue 12 §3).

Argo CD's commit server (``commitserver/commit/hydratorhelper.go`` at argoproj/argo-cd
37ee0097) writes, for every hydrated commit:

* at the root: ``hydrator.metadata`` (the dry commit: ``repoURL``, ``drySha``, ``author``,
  ``date``, ``subject``, ``body``, ``references``) and ``.gitattributes`` marking READMEs and
  metadata files as generated;
* per application path whose manifests changed: ``hydrator.metadata`` (``repoURL``,
  ``drySha``, ``commands``) and a ``README.md`` from its default template. A path whose
  manifests did not change keeps the files of the commit that last changed it, and a commit in
  which no manifest changed is not made at all.

The JSON is what Go's ``json.Encoder`` writes with ``SetIndent("", "  ")`` and
``SetEscapeHTML(false)``: fields in struct order, empty ones omitted (``omitempty``), two-space
indent, ``\\u2028``/``\\u2029`` escaped, a trailing newline. Our application paths are the
shards (every directory holding objects); grove-gitops' own shard README follows Argo CD's text.
This is our own implementation of that format, not a copy of Argo CD's code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parseaddr
from typing import Any

METADATA = "hydrator.metadata"
README = "README.md"
GITATTRIBUTES = ".gitattributes"
#: Exactly Argo CD's ``gitAttributesContents`` (no trailing newline).
GITATTRIBUTES_TEXT = "**/README.md linguist-generated=true\n**/hydrator.metadata linguist-generated=true"
_REFERENCE = "Argocd-reference-commit-"
_SHA_RE = re.compile(r"^[0-9a-f]{5,40}$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


@dataclass(frozen=True)
class DryCommit:
    """The source ("dry") commit a hydrated commit was made from."""

    sha: str
    repo_url: str
    author: str = ""  # "Name <email>"
    date: str = ""  # ISO 8601 / RFC 3339
    message: str = ""  # the whole commit message


def go_json(data: Mapping[str, Any]) -> bytes:
    """Go's ``json.Encoder`` output (two-space indent, no HTML escaping, trailing newline)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return (text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029") + "\n").encode()


def rfc3339(date: str) -> str:
    """Go's ``time.RFC3339`` spelling: seconds only, ``Z`` for UTC."""
    match = _DATE_RE.match(date)
    if match is None:
        return ""
    out = date.replace(match.group(1) or "", "", 1) if match.group(1) else date
    return out[:-6] + "Z" if out.endswith("+00:00") else out


def _go_address(value: str) -> str:
    """Go's ``mail.Address.String()`` of a parsed ``Name <email>``."""
    name, addr = parseaddr(value)
    if not addr or "@" not in addr:
        return ""
    if not name:
        return f"<{addr}>"
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + f'" <{addr}>'


def _references(body: str) -> tuple[list[dict[str, Any]], str]:
    """Argo CD's ``GetReferences``: valid ``Argocd-reference-commit-*`` trailer lines become one
    commit reference; every other line is kept (each followed by a newline)."""
    commit: dict[str, str] = {}
    kept: list[str] = []
    for line in body.splitlines():
        key, sep, value = line.partition(": ")
        field = _reference_field(key, value) if sep and key.startswith(_REFERENCE) else None
        if field is None:
            kept.append(line + "\n")
        else:
            commit[field[0]] = field[1]
    order = ("author", "date", "subject", "body", "sha", "repoUrl")
    refs = [{"commit": {k: commit[k] for k in order if commit.get(k)}}] if commit else []
    return refs, "".join(kept)


def _reference_field(key: str, value: str) -> tuple[str, str] | None:
    kind = key[len(_REFERENCE) :]
    if kind == "repourl":
        return "repoUrl", value
    if kind == "author":
        address = _go_address(value)
        return ("author", address) if address else None
    if kind == "date":
        date = rfc3339(value)
        return ("date", date) if date else None
    if kind == "subject":
        return "subject", value
    if kind == "body":
        try:
            body = json.loads(value)
        except ValueError:
            return None
        return ("body", body) if isinstance(body, str) else None
    if kind == "sha":
        return ("sha", value) if _SHA_RE.match(value) else None
    return None


def root_metadata(dry: DryCommit) -> dict[str, Any]:
    """Argo CD's ``GetCommitMetadata``: the root ``hydrator.metadata``."""
    subject, _, body = dry.message.strip("\n").partition("\n\n")
    references, body = _references(body)
    data: dict[str, Any] = {
        "repoURL": dry.repo_url,
        "drySha": dry.sha,
        "author": dry.author,
        "date": rfc3339(dry.date),
        "subject": subject,
        "body": body,
        "references": references,
    }
    return {k: v for k, v in data.items() if v}


def path_metadata(dry: DryCommit, commands: list[str]) -> dict[str, Any]:
    data: dict[str, Any] = {"repoURL": dry.repo_url, "drySha": dry.sha, "commands": commands}
    return {k: v for k, v in data.items() if v}


def readme(dry: DryCommit, commands: list[str]) -> str:
    """Argo CD's default ``sourceHydrator.readmeMessageTemplate`` rendered for one path (no
    references: the per-path metadata has none)."""
    lines = [
        "# Manifest Hydration",
        "",
        "To hydrate the manifests in this repository, run the following commands:",
        "",
        "```shell",
        f"git clone {dry.repo_url}",
        "# cd into the cloned directory",
        f"git checkout {dry.sha}",
        *commands,
        "```",
    ]
    return "\n".join(lines) + "\n"


def _application_paths(files: Mapping[str, bytes]) -> dict[str, dict[str, bytes]]:
    """Every directory holding objects (a shard), with its manifest files."""
    out: dict[str, dict[str, bytes]] = {}
    for rel in files:
        folder, _, name = rel.rpartition("/")
        if folder and name.endswith(".yaml") and name != "kustomization.yaml":
            out.setdefault(folder, {})
    for rel, data in files.items():
        folder, _, name = rel.rpartition("/")
        if folder in out and name not in (METADATA, README):
            out[folder][name] = data
    return out


def hydrate(
    files: Mapping[str, bytes], previous: Mapping[str, bytes], dry: DryCommit, commands: list[str]
) -> dict[str, bytes]:
    """``files`` plus the hydrator files, keeping those of every path whose manifests are as in
    ``previous`` (the output as last committed), and the root metadata too when nothing changed."""
    out = dict(files)
    out[GITATTRIBUTES] = GITATTRIBUTES_TEXT.encode()
    old_paths = _application_paths(previous)
    for folder, manifests in sorted(_application_paths(files).items()):
        meta, doc = f"{folder}/{METADATA}", f"{folder}/{README}"
        if old_paths.get(folder) == manifests and meta in previous and doc in previous:
            out[meta], out[doc] = previous[meta], previous[doc]
            continue
        out[meta] = go_json(path_metadata(dry, commands))
        own = files.get(doc)
        text = readme(dry, commands) + ("\n" + own.decode() if own is not None else "")
        out[doc] = text.encode()
    old_root = previous.get(METADATA)
    unchanged = old_root is not None and len(previous) == len(out) + 1 and all(previous.get(r) == d for r, d in out.items())
    out[METADATA] = old_root if old_root is not None and unchanged else go_json(root_metadata(dry))
    return out
