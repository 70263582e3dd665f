"""Parse many source files, in worker processes when there is enough YAML to pay for them.

Why: PyYAML's C parser is fast, but building Python objects from its nodes (and our strict
checks on them: duplicate keys, alias bombs, JSON-only values) runs in Python and was the
largest serial stage of a big render once expansion and emission ran in parallel (issue 10).
Files are independent, so they parse anywhere; results come back in file order, so what the
caller sees does not depend on ``jobs``. Cached parses are looked up and stored in the
calling process only: workers never see the cache.

A file is a path on disk or the bytes themselves (a git ref's tree held in memory by
``diff --repo``, ``grove_gitops.load.memory``); both take the same checks and cache keys.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from grove_gitops.errors import InputProblem
from grove_gitops.procs import start_method
from grove_gitops.yamlfiles.yamlio import MAX_FILE_BYTES, Document, load_bytes, load_documents

if TYPE_CHECKING:
    from grove_gitops.cache import RenderCache

Parsed = tuple[list[Document], list[InputProblem]]
#: Where a file's bytes are: a path on disk, or the bytes.
FileData = Path | bytes

#: Below this much YAML to parse, starting workers costs more than it saves (a fork is a few
#: milliseconds; parsing runs at about 3 MB/s of CPU). Measured on the mid-size tree (issue
#: 35.4, 496 KB of YAML, 2 cores): serial, the parent spent 0.20-0.24 s of CPU loading it; with
#: two workers 0.05 s (scanning, classifying and receiving the documents), the workers about
#: 0.2 s between them, so the pool saves about 0.07 s of wall time there and about breaks even
#: at a quarter of a MB. It was 1 MB, which left every mid-size tree serial.
MIN_PARALLEL_BYTES = 256 * 1024


def _parse(task: tuple[str | bytes, str]) -> Parsed:
    where, display = task
    return load_bytes(where, display) if isinstance(where, bytes) else load_documents(Path(where), display)


def _size(where: FileData) -> int:
    if isinstance(where, bytes):
        return len(where)
    try:
        return where.stat().st_size
    except OSError:
        return 0


def _read(where: FileData) -> bytes:
    return where if isinstance(where, bytes) else where.read_bytes()


def parse_files(
    files: Sequence[tuple[FileData, str]],
    jobs: int = 1,
    cache: RenderCache | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> list[Parsed]:
    """``load_documents(path, display)`` (``load_bytes`` for bytes) of every ``(file, display)``, in order.

    ``meanwhile`` runs in this process while workers parse, when they do: the caller's start on
    what comes next, in time this process would otherwise spend waiting (issue 35.4)."""
    results: list[Parsed | None] = [None] * len(files)
    keys: dict[int, str] = {}
    todo: list[int] = []
    size = 0
    for i, (where, display) in enumerate(files):
        st_size = _size(where)
        if cache is not None and 0 < st_size <= MAX_FILE_BYTES:
            try:
                keys[i] = cache.file_key(display, _read(where))
            except OSError:
                pass
            else:
                found = cache.get_parsed(keys[i])
                if found is not None:
                    results[i] = found
                    continue
        todo.append(i)
        size += st_size
    tasks = [(w if isinstance(w, bytes) else str(w), d) for w, d in (files[i] for i in todo)]
    for i, parsed in zip(todo, _run(tasks, jobs, size, meanwhile), strict=True):
        results[i] = parsed
        if i in keys and cache is not None:
            cache.put_parsed(keys[i], parsed)
    return [r for r in results if r is not None]


def _run(
    tasks: list[tuple[str | bytes, str]], jobs: int, size: int, meanwhile: Callable[[], object] | None
) -> list[Parsed]:
    workers = min(jobs, len(tasks))
    if workers <= 1 or size < MIN_PARALLEL_BYTES:
        return [_parse(t) for t in tasks]
    ctx = multiprocessing.get_context(start_method())
    try:
        pool = ctx.Pool(workers)
    except OSError:  # no processes here (a sandbox without /dev/shm or fork)
        return [_parse(t) for t in tasks]
    with pool:
        pending = pool.map_async(_parse, tasks, chunksize=max(1, min(16, len(tasks) // (workers * 8))))
        if meanwhile is not None:
            meanwhile()
        return pending.get()
