"""The marker of a grove-gitops output directory, in a module without heavy imports.

Both the writer (refuse to replace a foreign directory) and the source loader (do not read an
earlier render back in) ask the same question, so they share one answer. It lives in ``load``,
below ``output``: the loader never imports the output package.
"""

from __future__ import annotations

import json
from pathlib import Path

META_FILE = "render.meta"
META_MARKER = "grove-gitops"
#: A real ``render.meta`` is a few hundred bytes; a larger one is not ours.
_MAX_META_BYTES = 1024 * 1024


def is_output_dir(path: Path) -> bool:
    """True only when ``path`` holds a ``render.meta`` written by grove-gitops."""
    meta = path / META_FILE
    try:
        if not meta.is_file() or meta.stat().st_size > _MAX_META_BYTES:
            return False
        return is_output_meta(meta.read_bytes())
    except OSError:
        return False


def is_output_meta(data: bytes) -> bool:
    """True only when ``data`` is a ``render.meta`` written by grove-gitops (the contents
    check of :func:`is_output_dir`, shared with a source tree held in memory)."""
    if len(data) > _MAX_META_BYTES:
        return False
    try:
        return bool(json.loads(data.decode("utf-8")).get("generator") == META_MARKER)
    except (ValueError, AttributeError):
        return False
