"""Replace the output directory atomically: readers see the old tree or the new one.

The new tree is written into a sibling temporary directory and swapped in with two renames
on the same filesystem. A failure before the swap leaves the previous output untouched. The
writer refuses to replace a non-empty directory that is not a previous grove-gitops output,
so a mistyped ``--out`` cannot wipe someone's files.

Durability (issue 14): unless ``fsync=False`` (``--no-fsync``, for tmpfs and CI), every file
and directory of the new tree is fsynced before the swap and the parent directory after it,
so after a power loss OUT is the old tree or the complete new one, never a tree of empty
files. File fsyncs run in a small thread pool while the render goes on (``os.fsync`` releases
the interpreter lock, and the filesystem batches concurrent fsyncs into one journal commit).

Modes are set as each file and directory is made (files 0644, directories 0755, whatever the
umask), one ``mkdir`` per directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import cast

from grove_gitops.cache import RenderCache
from grove_gitops.errors import OutputError
from grove_gitops.load.marker import META_FILE, is_output_dir
from grove_gitops.output.layout import KUSTOMIZATION, Tree, build_tree_from_plan
from grove_gitops.output.parallel import FORK_SAFE_THREAD_PREFIX
from grove_gitops.output.staging import (
    DIR_MODE,
    FILE_MODE,
    MAX_NAME_BYTES,
    Published,
    fsync_path,
    plain_name,
    write_new,
)
from grove_gitops.render import RenderPlan

__all__ = ["TreeWriter", "is_output_dir", "render_to", "write_tree"]

#: Threads issuing fsyncs: enough for the filesystem to batch them, few enough to stay cheap.
FSYNC_THREADS = 8


def _find_syncfs() -> Callable[[int], int] | None:
    """Linux's ``syncfs(2)`` from the C library, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    func = getattr(libc, "syncfs", None)
    if func is None:
        return None
    func.argtypes = [ctypes.c_int]
    func.restype = ctypes.c_int
    return cast("Callable[[int], int]", func)


#: One ``syncfs(2)`` of the output's filesystem makes every file and directory of a new tree
#: durable at once, where the kernel batches the writeback. Per-file fsyncs (the fallback, for
#: systems without it) cost a render of 36k files more CPU than writing them: a thread hop
#: and three system calls per file (issue 14). syncfs also flushes other dirty data of that
#: filesystem; since Linux 5.8 it reports write-back errors, which fail the render.
SYNCFS = _find_syncfs()


def syncfs_path(path: Path) -> None:
    """``syncfs(2)`` of the filesystem holding ``path`` (a directory)."""
    if SYNCFS is None:  # pragma: no cover - callers check first
        raise OSError(errno.ENOSYS, "syncfs is not available")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if SYNCFS(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
    finally:
        os.close(fd)


def _current_umask() -> int | None:
    """This process's umask, read without changing it (Linux ``/proc``), or None if unknown.

    ``os.umask`` can only be read by setting it, which would race with other threads
    creating files; knowing it lets the writer skip a ``chmod`` per file when the umask
    leaves the modes alone (the usual 022)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reason(exc: OSError) -> str:
    """``Permission denied: /srv/out`` rather than ``[Errno 13] Permission denied: '/srv/out'``."""
    if exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename}"
    return exc.strerror or str(exc)


def _check_relative(rel: str) -> None:
    """``rel`` is a relative path of plain names (no ``..``, ``.``, empty part, backslash or
    NUL), each short enough for a file name."""
    parts = rel.split("/")
    if rel.startswith("/") or "\\" in rel or "\0" in rel or any(p in ("", ".", "..") for p in parts):
        raise OutputError(f"refusing to write {rel!r}: not a plain relative path")
    for part in parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise OutputError(f"refusing to write {rel!r}: a file name is longer than {MAX_NAME_BYTES} bytes")


def _checked_target(root: Path, rel: str, dirs: dict[str, Path] | None = None) -> Path:
    """``root / rel``, refusing anything that would land outside ``root``.

    Defence in depth: the loader already validates every input that becomes a path, but a
    bug there must not let a source tree write outside the output (issue 9, section 1).
    ``dirs`` memoises directories already resolved: resolving every file's path cost a large
    render more than writing it (issue 10); the file name is a single checked component.
    """
    _check_relative(rel)
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


def render_to(
    plan: RenderPlan, out: Path | None, jobs: int = 1, *, fsync: bool = True, cache: RenderCache | None = None
) -> Tree:
    """Build the output tree of ``plan`` and, when ``out`` is given, write it there: what
    ``grove-gitops render`` does. Each PodCliqueSet's files are written as soon as they are
    merged, so with ``jobs`` > 1 the writes overlap the workers' rendering. ``cache`` is the
    one ``plan`` was made with (PodCliqueSets it holds are not rendered again)."""
    if out is None:
        return build_tree_from_plan(plan, cache, jobs=jobs)
    writer = TreeWriter(out, fsync=fsync)
    try:
        tree = build_tree_from_plan(plan, cache, jobs=jobs, on_files=writer.write, staging=writer)
        writer.write(tree.files)  # kustomizations, READMEs, metadata, pass-through objects
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return tree


def write_tree(tree: Tree, out: Path, *, fsync: bool = True) -> None:
    writer = TreeWriter(out, fsync=fsync)
    writer.write(tree.files)
    writer.commit()


class TreeWriter:
    """:func:`write_tree` in steps, so files can be written while the rest is still being
    rendered (``render --jobs``: the parent writes while workers expand, issue 10).

    ``write`` may be called many times (each path once); ``commit`` swaps the new tree in;
    any error removes the temporary directory and leaves the previous output untouched.
    """

    def __init__(self, out: Path, *, fsync: bool = True) -> None:
        out = out.absolute()
        self.out = out
        #: Ancestors of ``out`` this writer created (deepest last), removed again on abort.
        self._parents: list[Path] = []
        self.tmp: Path | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []
        try:
            if out.exists() and not out.is_dir():
                raise OutputError(f"{out}: exists and is not a directory")
            if out.exists() and any(out.iterdir()) and not is_output_dir(out):
                raise OutputError(
                    f"{out}: is not empty and is not a grove-gitops output (no {META_FILE}); refusing to replace it"
                )
            self._make_parents(out.parent)
            try:
                self.tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
            except OSError as exc:  # name the folder, not the random name tried in it
                raise OSError(exc.errno, exc.strerror, str(out.parent)) from exc
            os.chmod(self.tmp, DIR_MODE)  # mkdtemp makes it 0700
        except OSError as exc:
            self._abort()
            raise OutputError(f"{out}: cannot write the output: {_reason(exc)}") from exc
        self.written: set[str] = set()
        #: Checked directories: relative path -> absolute path, a string (no Path object per file).
        self._folders: dict[str, str] = {}
        self._made: set[str] = {""}  # the directories made so far ("" = the root)
        self._fsync = fsync
        #: One syncfs at commit instead of an fsync per file and directory (where available).
        self._syncfs = fsync and SYNCFS is not None
        #: chmod after creating only when the umask would strip bits of the modes we want.
        umask = _current_umask()
        self._chmod = umask is None or bool(umask & (FILE_MODE | DIR_MODE))

    def _make_parents(self, parent: Path) -> None:
        """``mkdir -p`` of ``parent``, remembering what it made: a failed render leaves no
        trace, not even the empty folders it created for OUT."""
        missing: list[Path] = []
        while not parent.is_dir():
            if parent.exists():
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(parent))
            missing.append(parent)
            if parent.parent == parent:
                break
            parent = parent.parent
        for folder in reversed(missing):
            folder.mkdir()
            self._parents.append(folder)

    def _abort(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        for folder in reversed(self._parents):
            try:
                folder.rmdir()
            except OSError:
                break
        self._parents = []

    def abort(self) -> None:
        """Drop what was written (the previous output stays)."""
        self._abort()

    def _sync_later(self, path: Path, directory: bool = False) -> None:
        if not self._fsync or self._syncfs:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix=FORK_SAFE_THREAD_PREFIX)
        self._pending.append(self._pool.submit(fsync_path, path, directory))

    def _make_dirs(self, tmp: Path, parent: str) -> None:
        """Make ``parent`` and its missing ancestors, one ``mkdir`` each, mode set on the spot."""
        missing: list[str] = []
        while parent not in self._made:
            missing.append(parent)
            parent = parent.rpartition("/")[0]
        for rel in reversed(missing):
            path = tmp / rel
            os.mkdir(path, DIR_MODE)
            if self._chmod:
                os.chmod(path, DIR_MODE)  # mkdir's mode is filtered by the umask
            self._made.add(rel)

    def _checked_folder(self, tmp: Path, rel: str, parent: str) -> str:
        """The directory ``rel`` goes into, made if missing.

        ``rel`` is checked to be plain names only. Its directories are then made here, one
        ``mkdir`` each, which fails on any entry already there (a symlink included), so a
        folder this writer made holds nothing it did not make and needs no ``resolve``: a
        render of 150 PodCliqueSets resolved 150 new directories in the parent's output
        stage (issue 35.4). An entry found in the way is resolved, to refuse a symlink
        leading out of the output by name."""
        _check_relative(rel)
        if parent not in self._made:
            try:
                self._make_dirs(tmp, parent)
            except FileExistsError:
                _checked_target(tmp, rel)  # raises when it resolves outside
                raise
        folder = f"{tmp}/{parent}" if parent else str(tmp)
        self._folders[parent] = folder
        return folder

    def _open(self) -> Path:
        """The staging tree, while there is one."""
        if self.tmp is None:
            raise OutputError(f"{self.out}: the output was already committed or aborted")
        return self.tmp

    @contextlib.contextmanager
    def _or_abort(self) -> Iterator[None]:
        """Any error drops the staging tree (the previous output stays) and is an OutputError."""
        try:
            yield
        except OutputError:
            self._abort()
            raise
        except OSError as exc:
            self._abort()
            raise OutputError(f"{self.out}: cannot write the output: {exc}") from exc

    def write(self, files: Mapping[str, bytes]) -> None:
        tmp = self._open()
        with self._or_abort():
            for rel, data in files.items():
                if rel in self.written:
                    continue
                parent, _, name = rel.rpartition("/")
                folder = self._folders.get(parent)
                if folder is None or not plain_name(rel, name):
                    folder = self._checked_folder(tmp, rel, parent)
                target = f"{folder}/{name}"  # a checked directory: only the name is new
                write_new(target, data, self._chmod)
                self.written.add(rel)
                if self._fsync and not self._syncfs:  # the per-file fallback (no syncfs)
                    self._sync_later(Path(target))

    def open_for_workers(self, namespaces: Iterable[str]) -> Published:
        """Let the render's workers write their PodCliqueSets' directories into the staging
        tree (:func:`~grove_gitops.output.staging.spill_shard`): the namespace directories
        they go into are made here first, so a worker makes only its own directory."""
        tmp = self._open()
        with self._or_abort():
            for ns in sorted(set(namespaces)):
                self._checked_folder(tmp, f"{ns}/{KUSTOMIZATION}", ns)
        return Published(str(tmp), str(self.out), self._chmod, self._fsync and not self._syncfs)

    def adopt(self, paths: Iterable[str]) -> None:
        """Files a worker wrote into the staging tree (:meth:`open_for_workers`): their
        directory is one it made with ``mkdir`` in a namespace directory made here, so it is
        taken as made here (its entries fsynced with the rest when there is no syncfs)."""
        tmp = self._open()
        for rel in paths:
            parent = rel.rpartition("/")[0]
            if parent not in self._made:
                self._made.add(parent)
                self._folders[parent] = f"{tmp}/{parent}"
            self.written.add(rel)

    def _sync_tree(self, tmp: Path) -> None:
        """Make the new tree durable: one syncfs of its filesystem, or wait for the files'
        fsyncs and then fsync every directory (their entries)."""
        if self._syncfs:
            syncfs_path(tmp)
            return
        for rel in self._made:
            self._sync_later(tmp / rel if rel else tmp, directory=True)
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def commit(self) -> None:
        tmp, out = self.tmp, self.out
        if tmp is None:
            raise OutputError(f"{out}: the output was already committed or aborted")
        try:
            self._sync_tree(tmp)
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
        if self._fsync:
            try:
                fsync_path(out.parent, directory=True)  # the rename itself
            except OSError as exc:
                raise OutputError(f"{out}: the new output is in place but could not be made durable: {exc}") from exc
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
