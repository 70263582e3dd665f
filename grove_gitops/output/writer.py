"""Replace the output directory atomically: readers see the old tree or the new one.

The new tree is written into a sibling temporary directory and swapped in with two renames
on the same filesystem. A failure before the swap leaves the previous output untouched. The
writer refuses to replace a non-empty directory that is not a previous grove-gitops output,
so a mistyped ``--out`` cannot wipe someone's files.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from grove_gitops.errors import OutputError
from grove_gitops.output.layout import META_FILE, META_MARKER, Tree


def is_output_dir(path: Path) -> bool:
    meta = path / META_FILE
    try:
        return bool(json.loads(meta.read_text()).get("generator") == META_MARKER)
    except (OSError, ValueError, AttributeError):
        return False


def write_tree(tree: Tree, out: Path) -> None:
    out = out.absolute()
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a directory")
    if out.exists() and any(out.iterdir()) and not is_output_dir(out):
        raise OutputError(
            f"{out}: is not empty and is not a grove-gitops output (no {META_FILE}); refusing to replace it"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        for rel, data in tree.files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for d in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
            os.chmod(d, 0o755)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(f"{out}: cannot write the output: {exc}") from exc
    old: Path | None = None
    try:
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.rename(out, old / "tree")
        os.rename(tmp, out)
    except OSError as exc:
        if old is not None and (old / "tree").exists() and not out.exists():
            os.rename(old / "tree", out)
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not (old / "tree").exists():
            shutil.rmtree(old, ignore_errors=True)
        raise OutputError(f"{out}: cannot replace the output: {exc}") from exc
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
