"""Git repositories with a base and a head commit of the example source, and a feasibility fake."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORKLOAD = "deploy/workloads/llm-inference/llama-disagg.yaml"

FEASIBILITY_DOC: dict[str, Any] = {
    "heuristic": "first-fit decreasing with per-domain search; a gang reported as not fitting may fit another way",
    "gangs": [
        {
            "podCliqueSet": "inference/llama-disagg",
            "name": "llama-disagg-0",
            "kind": "base",
            "fits": False,
            "reason": "llm-0: podgroup llm-0-pworker needs 24 nvidia.com/gpu inside one rack; the largest rack has 16 allocatable | <b>",
        },
        {
            "podCliqueSet": "inference/llama-disagg",
            "name": "llama-disagg-0-sga-0",
            "kind": "scaled",
            "fits": True,
            "reason": None,
        },
    ],
    "domains": [
        {"level": "rack", "domain": "rack-a", "gpu": "16/16", "cpu": "90/128", "memory": "1.0Ti/2Ti"},
        {"level": "rack", "domain": "rack-b", "gpu": "8/16", "cpu": "10/128", "memory": "0.1Ti/2Ti"},
    ],
    "fits": False,
}


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


def make_repo(
    root: Path, edit: Callable[[str], str], base_edit: Callable[[str], str] = lambda s: s
) -> tuple[Path, str, str]:
    """A repository with the examples under ``deploy/``: (path, base sha, head sha).

    ``main`` gets one more commit after the branch point, so the merge base differs from
    the base tip (the check must compare against the merge base).
    """
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for f in EXAMPLES.rglob("*.yaml"):
        target = repo / "deploy" / f.relative_to(EXAMPLES)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.read_text())
    wl = repo / WORKLOAD
    wl.write_text(base_edit(wl.read_text()))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "pr")
    wl.write_text(edit(wl.read_text()))
    git(repo, "commit", "-qam", "head", "--allow-empty")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    (repo / "deploy" / "NOTES.yaml").write_text("# landed on main after the PR was opened\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "later on main")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", head)
    return repo, base, head


def bump_image(text: str) -> str:
    return text.replace("image: ", "image: registry.example.com/", 1)


def break_replicas(text: str) -> str:
    lines = text.split("\n")
    top = lines.index("  replicas: 1")
    lines[top] = "  replicas: -1"
    return "\n".join(lines)


def feasibility_shim(tmp: Path, doc: dict[str, Any], code: int) -> tuple[str, ...]:
    """A grove-gitops command whose ``feasibility`` answers ``doc`` with exit ``code`` (what
    the feasibility helper's command will print) and that runs the real CLI otherwise."""
    shim = tmp / "grove_gitops_shim.py"
    shim.write_text(
        "import json, sys\n"
        "if sys.argv[1:2] == ['feasibility']:\n"
        f"    print({json.dumps(json.dumps(doc))})\n"
        f"    sys.exit({code})\n"
        "from grove_gitops.cli import main\n"
        "main(prog_name='grove-gitops')\n"
    )
    return (sys.executable, str(shim))


def without_feasibility_shim(tmp: Path) -> tuple[str, ...]:
    """A grove-gitops from before the ``feasibility`` command: click's usage error, exit 2."""
    shim = tmp / "grove_gitops_old.py"
    shim.write_text(
        "import sys\n"
        "if sys.argv[1:2] == ['feasibility']:\n"
        "    sys.stderr.write(\"Usage: grove-gitops [OPTIONS] COMMAND [ARGS]...\\nError: No such command 'feasibility'.\\n\")\n"
        "    sys.exit(2)\n"
        "from grove_gitops.cli import main\n"
        "main(prog_name='grove-gitops')\n"
    )
    return (sys.executable, str(shim))
