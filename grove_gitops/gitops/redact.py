"""Keep credentials out of logs and error messages.

Users may put a token into the repository URL (``https://x-access-token:TOKEN@host/...``);
git echoes URLs in its errors. Everything that reaches a log line goes through
:func:`redact`.
"""

from __future__ import annotations

import re

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")
_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    """Also mask this literal value wherever it appears (e.g. a token read from the environment)."""
    if len(value) >= 4:
        _SECRETS.add(value)


def redact(text: str) -> str:
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", text)
    for secret in _SECRETS:
        text = text.replace(secret, "***")
    return text
