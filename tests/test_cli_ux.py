"""Issue 9 §9: apply order, warnings, ``--output json``, help text, watch log lines."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from grove_gitops.output.layout import build_tree_from_plan
from grove_gitops.render import plan_source
from tests.support import PROJECT


def _token_secret_pairs(docs: list[dict]) -> list[tuple[int, int]]:  # type: ignore[type-arg]
    """(index of the ServiceAccount, index of its token Secret) for every token Secret."""
    pairs = []
    for i, doc in enumerate(docs):
        if doc.get("kind") == "Secret" and doc.get("type") == "kubernetes.io/service-account-token":
            sa = doc["metadata"]["annotations"]["kubernetes.io/service-account.name"]
            ns = doc["metadata"].get("namespace")
            j = next(
                k
                for k, d in enumerate(docs)
                if d.get("kind") == "ServiceAccount" and d["metadata"]["name"] == sa and d["metadata"].get("namespace") == ns
            )
            pairs.append((j, i))
    return pairs


def test_service_account_precedes_its_token_secret(tmp_path: Path) -> None:
    """The token controller deletes a token Secret applied before its ServiceAccount."""
    tree = build_tree_from_plan(plan_source(PROJECT / "examples"))
    checked = 0
    for shard in tree.shards:
        listed = yaml.safe_load(tree.files[f"{shard}/kustomization.yaml"])["resources"]
        assert listed == sorted(listed)  # file names sort in apply order
        docs = [yaml.safe_load(tree.files[f"{shard}/{n}"]) for n in listed]
        for sa, secret in _token_secret_pairs(docs):
            assert sa < secret, (shard, listed)
            checked += 1
    assert checked >= 1
    readme = tree.files["README.md"].decode()
    assert "## Apply order" in readme and "`15-`" in readme

    out = tmp_path / "out"
    for rel, data in tree.files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: cannot check kustomize's build order")
    built = subprocess.run([kubectl, "kustomize", str(out)], capture_output=True, text=True, check=True).stdout
    docs = [d for d in yaml.safe_load_all(built) if d]
    pairs = _token_secret_pairs(docs)
    assert pairs and all(sa < secret for sa, secret in pairs)
    kinds = [d["kind"] for d in docs]
    assert kinds[0] == "Namespace"
