"""``grove-gitops watch``: re-render on save while editing locally.

watchfiles batches file events and debounces them; each batch triggers one render. An
invalid edit prints its errors and leaves the previous output in place (the writer only
swaps a complete tree in), so a half-typed file never wipes what Argo CD would see.

Every line carries a local timestamp (a terminal left open shows when it last rendered), and
each distinct warning prints once per ``watch`` run, not on every save.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import watchfiles

from grove_gitops.cache import RenderCache
from grove_gitops.errors import GroveGitopsError, InvalidInputError
from grove_gitops.output.writer import write_tree
from grove_gitops.problems import WarningSink
from grove_gitops.sourcetree import render_source_tree


def timestamped(echo: Callable[[str], None]) -> Callable[[str], None]:
    """``echo`` with each line prefixed by the local time (``HH:MM:SS``)."""
    return lambda line: echo(f"{time.strftime('%H:%M:%S')} {line}")


def render_once(
    source: Path,
    out: Path,
    echo: Callable[[str], None],
    cache: RenderCache | None = None,
    sink: WarningSink | None = None,
    fsync: bool = True,
) -> bool:
    if cache is not None:
        cache.start()
    try:
        outcome = render_source_tree(source, None, 1, cache)  # a fleet renders every cluster
        tree = outcome.tree
        write_tree(tree, out, fsync=fsync)
    except InvalidInputError as exc:
        for problem in exc.problems:
            echo(f"error: {problem}")
        echo(f"{len(exc.problems)} error(s); kept the previous output in {out}")
        return False
    except GroveGitopsError as exc:
        echo(f"error: {exc}")
        return False
    finally:
        if cache is not None:
            cache.finish()
    (sink or WarningSink()).emit(tree.warnings, echo, outcome.acknowledged, codes=outcome.acknowledged_codes)
    echo(f"rendered {outcome.podcliquesets} PodCliqueSet(s), {len(tree.files)} files in {out}")
    return True


def _relevant(out: Path) -> Callable[[watchfiles.Change, str], bool]:
    out_resolved = out.resolve()

    def accept(change: watchfiles.Change, path: str) -> bool:
        p = Path(path)
        if p.suffix not in (".yaml", ".yml"):
            return False
        try:
            p.resolve().relative_to(out_resolved)
            return False  # our own output (it may live inside the source tree)
        except ValueError:
            return True

    return accept


def watch(
    source: Path,
    out: Path,
    echo: Callable[[str], None],
    debounce_ms: int = 300,
    stop: threading.Event | None = None,
    max_renders: int | None = None,
    quiet: bool = False,
    fsync: bool = True,
) -> int:
    """Render now, then after every batch of changes; returns the number of renders."""
    renders = 1
    cache = RenderCache()  # an edit re-renders only the PodCliqueSets it touched
    sink = WarningSink(quiet=quiet)
    echo = timestamped(echo)
    render_once(source, out, echo, cache, sink, fsync)
    for _changes in watchfiles.watch(
        source, watch_filter=_relevant(out), debounce=debounce_ms, stop_event=stop, raise_interrupt=False
    ):
        render_once(source, out, echo, cache, sink, fsync)
        renders += 1
        if max_renders is not None and renders >= max_renders:
            break
    return renders
