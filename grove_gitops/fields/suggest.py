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
    if not by_lower:
        return None
    matches = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[matches[0]] if matches else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean replicas?"``, or empty when nothing is close."""
    guess = closest(word, known)
    return f"; did you mean {guess}?" if guess is not None and guess != word else ""


#: Names a "known ..." list shows at most: a message is read, not scrolled.
MAX_LISTED = 10
#: Names a suggestion for a reference compares with at most: the names come from the source
#: or a cluster-facts file, so their number is the input's, and each comparison costs time.
MAX_CANDIDATES = 5_000


#: Candidates one reference is compared with at most (:func:`likely_candidates`): 60,000 Secret
#: names in a cluster-facts file cost 0.3 s per guess compared whole.
MAX_REFERENCE_CANDIDATES = 1_000


def likely_candidates(word: str, names: Iterable[str]) -> list[str]:
    """The names worth comparing ``word`` with, at most :data:`MAX_REFERENCE_CANDIDATES`: only
    lengths difflib's 0.6 cutoff allows (``2*min/(a+b) >= 0.6``), those with ``word``'s first
    letter first (a typo seldom changes it)."""
    low, high = len(word) * 3 / 7, len(word) * 7 / 3
    fitting = [n for n in names if low <= len(n) <= high]
    first = word[:1].lower()
    fitting.sort(key=lambda n: (n[:1].lower() != first, n))
    return fitting[:MAX_REFERENCE_CANDIDATES]


def known_listing(word: str, known: Iterable[str], what: str) -> str:
    """``"; known bindings: a, b; did you mean a?"`` for a reference ``word`` that names none of
    ``known`` (``what`` is their plural, e.g. ``ClusterTopologyBindings``); ``"; the source has
    no <what>"`` when there are none. The listing is cut at :data:`MAX_LISTED` names."""
    names = sorted(set(known))
    if not names:
        return f"; there are no {what}"
    shown = ", ".join(names[:MAX_LISTED]) + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")
    return f"; known {what}: {shown}" + did_you_mean(word, names[:MAX_CANDIDATES])
