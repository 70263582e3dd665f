"""A review-only source tree (RenderConfiguration ``mode: review``) of grove.io PodCliqueSets,
and a real git repository with a base and a PR head of it (docs/adoption.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.prcheck.prhelpers import git

REVIEW_CONFIG = """apiVersion: gitops.grove.io/v1alpha1
kind: RenderConfiguration
metadata:
  name: review
mode: review
"""

#: Two PodCliqueSet replicas, each with a standalone router (2 pods) and a scaling group
#: ``prefill`` (2 replicas of a leader and two workers): two roles Grove rolls side by side.
SERVE = """apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: serve
  namespace: default
spec:
  replicas: 2
  template:
    cliques:
      - name: router
        spec:
          roleName: router
          replicas: 2
          minAvailable: 1
          podSpec:
            containers:
              - name: router
                image: ghcr.io/example/router:1.0
      - name: leader
        spec:
          roleName: leader
          replicas: 1
          podSpec:
            containers:
              - name: vllm
                image: ghcr.io/example/vllm:1.0
      - name: worker
        spec:
          roleName: worker
          replicas: 2
          podSpec:
            containers:
              - name: vllm
                image: ghcr.io/example/vllm:1.0
    podCliqueScalingGroups:
      - name: prefill
        cliqueNames: [leader, worker]
        replicas: 2
        minAvailable: 1
"""


def write_source(root: Path, serve: str = SERVE, config: str = REVIEW_CONFIG) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "render-configuration.yaml").write_text(config)
    (root / "serve.yaml").write_text(serve)
    return root


def bump_both(text: str) -> str:
    """A new router and a new vLLM image: both roles of every replica change."""
    return text.replace(":1.0", ":1.1")


def review_repo(
    tmp: Path, edit: Callable[[str], str] = bump_both, config: str = REVIEW_CONFIG
) -> tuple[Path, str, str]:
    """(repo, base sha, head sha): the source under ``deploy/``, the PR changes ``serve.yaml``."""
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write_source(repo / "deploy", config=config)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "pr")
    serve = repo / "deploy" / "serve.yaml"
    serve.write_text(edit(serve.read_text()))
    git(repo, "commit", "-qam", "head")
    head = git(repo, "rev-parse", "HEAD")
    return repo, base, head
