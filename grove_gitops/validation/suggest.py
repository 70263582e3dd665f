""" "Did you mean ...?": the closest known name to a misspelt one.

One rule for every suggestion (kinds, fields, scheduler profiles), so they read alike:
case-insensitive, difflib's ratio of at least 0.6, the best match only. The lists compared
are the project's own (field names of a model, enabled profiles), never sized by the input;
the misspelt word is cut to :data:`MAX_WORD` characters first, since difflib is quadratic.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: Longer words are not typos of a Kubernetes field or kind name; comparing them costs time.
MAX_WORD = 100
#: Suggestions tried for one document (one pod spec) at most: 100,000 unknown keys are not a
#: typo, and each try compares the word with every declared name (~0.3 ms against a pod
#: spec's 40 fields), so 300 files of 100 unknown fields each spent seconds on suggestions
#: alone. Twenty typos in one document is already far more than anyone makes.
MAX_SUGGESTIONS = 20


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name ``word`` most likely misspells, or None."""
    if not word or len(word) > MAX_WORD:
        return None
    by_lower = {k.lower(): k for k in known}
    matches = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[matches[0]] if matches else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean replicas?"``, or empty when nothing is close."""
    guess = closest(word, known)
    return f"; did you mean {guess}?" if guess is not None and guess != word else ""
