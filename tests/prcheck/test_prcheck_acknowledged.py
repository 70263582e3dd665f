"""Issue 34.10 in the PR check: a warning its workload acknowledges is no annotation and no
warning of the status; the comment lists it once, as acknowledged."""

from __future__ import annotations

from pathlib import Path

from grove_gitops.prcheck.compose import Options, compose
from tests.prcheck.prhelpers import make_repo, without_feasibility_shim


def _serving(text: str) -> str:
    """Head moves the workload into a namespace the source does not create: a warning."""
    return text.replace("  namespace: inference\n", "  namespace: serving\n", 1)


def _acknowledged(text: str) -> str:
    return _serving(text).replace(
        "  namespace: serving\n",
        "  namespace: serving\n  annotations:\n    gitops.grove.io/acknowledge: namespace-undeclared\n",
        1,
    )


def _compose(tmp_path: Path, edit: object) -> tuple[list[str], int, str]:
    repo, base, head = make_repo(tmp_path, edit)  # type: ignore[arg-type]
    opts = Options(repo=repo, base=base, head=head, source_path="deploy", cli=without_feasibility_shim(tmp_path))
    result = compose(opts)
    return result.annotations, result.status.warnings, "".join(result.parts)


def test_an_unacknowledged_warning_is_annotated_and_counted(tmp_path: Path) -> None:
    annotations, warnings, text = _compose(tmp_path, _serving)
    assert warnings == 1 and len(annotations) == 1 and annotations[0].startswith("::warning ")
    assert "1 new render warning(s) in head" in text and "acknowledged warning(s)" not in text


def test_an_acknowledged_warning_is_shown_once_as_acknowledged(tmp_path: Path) -> None:
    annotations, warnings, text = _compose(tmp_path, _acknowledged)
    assert warnings == 0 and annotations == []
    assert "new render warning(s) in head" not in text
    assert text.count('namespace "serving" is not created') == 1
    assert "✔️ 1 acknowledged warning(s) in head" in text and "- acknowledged: " in text
