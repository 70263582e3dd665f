"""The command's contract (exit 0 / 1 / 3, the JSON document) and the warn / enforce hook of
validate, render and diff."""

from __future__ import annotations

import json
from pathlib import Path

from tests.feasibility.helpers import clique, inventory, pack, pcs, pool, run, source

FITS = [pcs("llm", [clique("w", 2, 8)], topology=pack("rack"))]
TOO_BIG = [pcs("llm", [clique("w", 3, 8)], topology=pack("rack"))]
TWO_NODES = inventory(pool("r1", 2))


def test_exit_codes_and_text(tmp_path: Path) -> None:
    ok = run("feasibility", str(source(tmp_path / "ok", FITS, TWO_NODES)))
    assert ok.exit_code == 0, ok.output
    assert "fits          ml/llm-0 (base): 2 pod(s)" in ok.stdout
    assert "1 of 1 gang(s) fit on 2 node(s)." in ok.stdout
    assert "heuristic" in ok.stdout
    assert "rack   z1/b1/r1       2      16 / 16         2 / 128  2Gi / 1Ti" in ok.stdout
    bad = run("feasibility", str(source(tmp_path / "bad", TOO_BIG, TWO_NODES)))
    assert bad.exit_code == 3
    assert (
        "DOES NOT FIT  ml/llm-0 (base): llm-0: the gang needs 24 nvidia.com/gpu inside one rack; "
        "the largest rack has 16 allocatable"
    ) in bad.stdout
    invalid = run("feasibility", str(tmp_path / "missing"))
    assert invalid.exit_code == 1
    assert "source path does not exist" in invalid.output


def test_no_inventory_is_nothing_to_check(tmp_path: Path) -> None:
    root = source(tmp_path, TOO_BIG, None)
    result = run("feasibility", str(root))
    assert result.exit_code == 0
    assert result.stdout == f"no NodeInventory or v1 Node list in {root}: nothing to check\n"
    result = run("feasibility", str(root), "--output", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["inventory"] is False
    # validate and render do not mention feasibility at all.
    assert "fit" not in run("validate", str(root)).output


def test_json_document(tmp_path: Path) -> None:
    result = run("feasibility", str(source(tmp_path, TOO_BIG, TWO_NODES)), "--output", "json")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert set(data) >= {"heuristic", "gangs", "domains", "fits"}
    assert data["fits"] is False
    (g,) = data["gangs"]
    assert {k: g[k] for k in ("podCliqueSet", "name", "kind", "fits")} == {
        "podCliqueSet": "llm",
        "name": "llm-0",
        "kind": "base",
        "fits": False,
    }
    assert g["reason"].startswith("the gang needs 24 nvidia.com/gpu")
    levels = {d["level"] for d in data["domains"]}
    assert levels == {"zone", "block", "rack", "host"}
    host = next(d for d in data["domains"] if d["domain"] == "z1/b1/r1/r1-0")
    assert host == {
        "level": "host",
        "key": "kubernetes.io/hostname",
        "domain": "z1/b1/r1/r1-0",
        "nodes": 1,
        "requested": {"nvidia.com/gpu": "0", "cpu": "0", "memory": "0"},
        "allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi"},
    }
    invalid = run("feasibility", str(tmp_path / "missing"), "--output", "json")
    assert invalid.exit_code == 1
    assert json.loads(invalid.stdout)["ok"] is False


def test_warn_is_the_default(tmp_path: Path) -> None:
    root = source(tmp_path / "src", TOO_BIG, TWO_NODES)
    result = run("validate", str(root))
    assert result.exit_code == 0, result.output
    assert "warning: workloads.yaml: PodGang ml/llm-0 does not fit the node inventory: the gang needs 24" in result.stderr
    out = tmp_path / "out"
    result = run("render", str(root), "--out", str(out))
    assert result.exit_code == 0
    assert "does not fit" in result.stderr
    # The warning is not written into the output (the output does not depend on the inventory).
    assert not any("does not fit" in p.read_text() for p in out.rglob("*") if p.is_file())
    assert "ml/llm-0 does not fit" in json.dumps(json.loads(run("validate", str(root), "--output", "json").stdout))


def test_enforce_makes_it_an_error(tmp_path: Path) -> None:
    root = source(tmp_path / "src", TOO_BIG, TWO_NODES, mode="enforce")
    result = run("validate", str(root))
    assert result.exit_code == 1
    assert "error: workloads.yaml: PodGang ml/llm-0 does not fit the node inventory" in result.stderr
    out = tmp_path / "out"
    result = run("render", str(root), "--out", str(out))
    assert result.exit_code == 1
    assert not out.exists()
    fits = source(tmp_path / "fits", FITS, TWO_NODES, mode="enforce")
    assert run("render", str(fits), "--out", str(out)).exit_code == 0
    assert run("feasibility", str(root)).exit_code == 3


def test_diff_checks_the_head(tmp_path: Path) -> None:
    base = source(tmp_path / "base", FITS, TWO_NODES)
    head = source(tmp_path / "head", TOO_BIG, TWO_NODES)
    result = run("diff", str(base), str(head), "--output", "text")
    assert result.exit_code == 0, result.output
    assert "warning: head: workloads.yaml: PodGang ml/llm-0 does not fit" in result.stderr
    # The base side is not checked: its gangs are what the cluster runs today.
    assert run("diff", str(head), str(base), "--output", "text").stderr.count("does not fit") == 0
    enforced = source(tmp_path / "enforced", TOO_BIG, TWO_NODES, mode="enforce")
    result = run("diff", str(base), str(enforced), "--output", "text")
    assert result.exit_code == 1
    assert "error: head: workloads.yaml: PodGang ml/llm-0 does not fit" in result.stderr


def test_the_check_sees_podcliquesets_the_cache_rendered(tmp_path: Path) -> None:
    """diff renders both sides through one cache (and --cache-dir keeps it between runs): a
    workload equal on both sides is a cache hit on the head side, and must still be placed."""
    base = source(tmp_path / "base", TOO_BIG, TWO_NODES)
    head = source(tmp_path / "head", TOO_BIG, TWO_NODES)
    (head / "note.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: note, namespace: ml}\n")
    cache = tmp_path / "cache"
    for _ in range(2):  # cold, then with every PodCliqueSet already in --cache-dir
        result = run("diff", str(base), str(head), "--output", "text", "--cache-dir", str(cache))
        assert result.exit_code == 0, result.output
        assert "warning: head: workloads.yaml: PodGang ml/llm-0 does not fit" in result.stderr
    root = source(tmp_path / "src", TOO_BIG, TWO_NODES, mode="enforce")
    for _ in range(2):
        result = run("render", str(root), "--out", str(tmp_path / "out"), "--cache-dir", str(cache))
        assert result.exit_code == 1 and "does not fit" in result.stderr
