"""GitHub Actions workflow commands and files, with GitHub's escaping rules.

A message or a property value that contains a newline, a ``%`` or (in a property) a ``:``
or ``,`` would otherwise end the command early or be read as another property: the runner
decodes ``%25``, ``%0D``, ``%0A`` (and ``%3A``, ``%2C`` in properties), the same escaping
``@actions/core`` applies (``escapeData`` / ``escapeProperty``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path


def escape_data(text: str) -> str:
    """A command's message: ``%``, CR and LF escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (``file=``, ``title=``): also ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, properties: Mapping[str, str | int | None] | None = None) -> str:
    """``::name k=v,k=v::message``; properties whose value is None or empty are left out."""
    props = ",".join(
        f"{k}={escape_property(str(v))}" for k, v in (properties or {}).items() if v is not None and str(v) != ""
    )
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


_COMMAND = re.compile(r"^::([a-z-]+)(?: ([^:]*))?::(.*)$", re.DOTALL)


def _unescape(text: str) -> str:
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def reads_workflow_commands() -> bool:
    """Whether this process runs where ``::error …`` lines are read: a GitHub Actions runner
    (``GITHUB_ACTIONS=true``; Forgejo and Gitea runners set it too). Elsewhere (a terminal,
    GitLab CI, whose job log shows every line as it is) they are noise."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


def for_this_ci(line: str) -> str:
    """A workflow command as is inside GitHub Actions; elsewhere the same finding as a plain
    line, ``error: file:line: title: message``, the form of every other command's problems."""
    match = _COMMAND.match(line)
    if match is None or reads_workflow_commands():
        return line
    name, props, message = match.groups()
    values = dict(p.split("=", 1) for p in (props or "").split(",") if "=" in p)
    where = ":".join(_unescape(values[k]) for k in ("file", "line") if values.get(k))
    title = _unescape(values.get("title", ""))
    parts = [x for x in (where, title, _unescape(message)) if x]
    return f"{name}: {': '.join(parts)}"


def _append(env_var: str, text: str) -> bool:
    """Append to the file a runner names in ``env_var``; False outside a runner."""
    target = os.environ.get(env_var)
    if not target:
        return False
    with Path(target).open("a", encoding="utf-8") as fh:
        fh.write(text)
    return True


def set_outputs(values: Mapping[str, str]) -> None:
    """Step outputs through ``$GITHUB_OUTPUT`` (one-line values only: ours are numbers and words)."""
    lines = []
    for key, value in values.items():
        if "\n" in value or "\r" in value:
            raise ValueError(f"output {key} holds a line break")
        lines.append(f"{key}={value}\n")
    _append("GITHUB_OUTPUT", "".join(lines))


def add_summary(markdown: str) -> bool:
    """Append to the job summary (``$GITHUB_STEP_SUMMARY``): where a fork PR's report still shows."""
    return _append("GITHUB_STEP_SUMMARY", markdown if markdown.endswith("\n") else markdown + "\n")
