"""Replace the output directory atomically: readers see the old tree or the new one.

The new tree is written into a sibling temporary directory and swapped in with two renames
on the same filesystem. A failure before the swap leaves the previous output untouched. The
writer refuses to replace a non-empty directory that is not a previous grove-gitops output,
so a mistyped ``--out`` cannot wipe someone's files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from grove_gitops.errors import OutputError
from grove_gitops.output.layout import Tree, build_tree_from_plan
from grove_gitops.output.marker import META_FILE, is_output_dir
from grove_gitops.render import RenderPlan

__all__ = ["TreeWriter", "is_output_dir", "render_to", "write_tree"]

#: Longest file name most filesystems (ext4, xfs, btrfs, APFS) accept, in bytes.
MAX_NAME_BYTES = 255


def _checked_target(root: Path, rel: str, dirs: dict[str, Path] | None = None) -> Path:
    """``root / rel``, refusing anything that would land outside ``root``.

    Defence in depth: the loader already validates every input that becomes a path, but a
    bug there must not let a source tree write outside the output (issue 9, section 1).
    ``dirs`` memoises directories already resolved: resolving every file's path cost a large
    render more than writing it (issue 10); the file name is a single checked component.
    """
    parts = rel.split("/")
    if rel.startswith("/") or "\\" in rel or "\0" in rel or any(p in ("", ".", "..") for p in parts):
        raise OutputError(f"refusing to write {rel!r}: not a plain relative path")
    for part in parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise OutputError(f"refusing to write {rel!r}: a file name is longer than {MAX_NAME_BYTES} bytes")
    parent, _, name = rel.rpartition("/")
    folder = dirs.get(parent) if dirs is not None else None
    if folder is None:
        folder = root / parent if parent else root
        if not folder.resolve().is_relative_to(root.resolve()):
            raise OutputError(f"refusing to write {rel!r}: it resolves outside the output directory")
        if dirs is not None:
            dirs[parent] = folder
    target = folder / name
    if dirs is None and not target.resolve().is_relative_to(root.resolve()):
        raise OutputError(f"refusing to write {rel!r}: it resolves outside the output directory")
    return target


def render_to(plan: RenderPlan, out: Path | None, jobs: int = 1) -> Tree:
    """Build the output tree of ``plan`` and, when ``out`` is given, write it there: what
    ``grove-gitops render`` does. Each PodCliqueSet's files are written as soon as they are
    merged, so with ``jobs`` > 1 the writes overlap the workers' rendering."""
    if out is None:
        return build_tree_from_plan(plan, jobs=jobs)
    writer = TreeWriter(out)
    try:
        tree = build_tree_from_plan(plan, jobs=jobs, on_files=writer.write)
        writer.write(tree.files)  # kustomizations, READMEs, metadata, pass-through objects
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return tree


def write_tree(tree: Tree, out: Path) -> None:
    writer = TreeWriter(out)
    writer.write(tree.files)
    writer.commit()


class TreeWriter:
    """:func:`write_tree` in steps, so files can be written while the rest is still being
    rendered (``render --jobs``: the parent writes while workers expand, issue 10).

    ``write`` may be called many times (each path once); ``commit`` swaps the new tree in;
    any error removes the temporary directory and leaves the previous output untouched.
    """

    def __init__(self, out: Path) -> None:
        out = out.absolute()
        if out.exists() and not out.is_dir():
            raise OutputError(f"{out}: exists and is not a directory")
        if out.exists() and any(out.iterdir()) and not is_output_dir(out):
            raise OutputError(
                f"{out}: is not empty and is not a grove-gitops output (no {META_FILE}); refusing to replace it"
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.tmp: Path | None = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
        self.written: set[str] = set()
        self._dirs: dict[str, Path] = {}  # the directories made so far (and checked), by relative path

    def _abort(self) -> None:
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def abort(self) -> None:
        """Drop what was written (the previous output stays)."""
        self._abort()

    def write(self, files: Mapping[str, bytes]) -> None:
        tmp = self.tmp
        if tmp is None:
            raise OutputError(f"{self.out}: the output was already committed or aborted")
        try:
            for rel, data in files.items():
                if rel in self.written:
                    continue
                known = len(self._dirs)
                target = _checked_target(tmp, rel, self._dirs)
                if len(self._dirs) != known:
                    target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                self.written.add(rel)
        except OutputError:
            self._abort()
            raise
        except OSError as exc:
            self._abort()
            raise OutputError(f"{self.out}: cannot write the output: {exc}") from exc

    def commit(self) -> None:
        tmp, out = self.tmp, self.out
        if tmp is None:
            raise OutputError(f"{out}: the output was already committed or aborted")
        try:
            made = {"/".join(rel.split("/")[:i]) for rel in self._dirs if rel for i in range(1, rel.count("/") + 2)}
            for d in [tmp, *(tmp / rel for rel in sorted(made))]:
                os.chmod(d, 0o755)
        except OSError as exc:
            self._abort()
            raise OutputError(f"{out}: cannot write the output: {exc}") from exc
        self.tmp = None
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
