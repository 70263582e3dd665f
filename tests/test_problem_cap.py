"""Issue 31.1: thousands of unknown fields cost linear time and print a bounded report.

One crafted file used to hold every command that validates (validate, render, pr-check, the
controller and the agent) for minutes: one error per unknown key, each placed by a scan of
its mapping's keys, and a did-you-mean tried for every one. Now a document reports at most
``MAX_PROBLEMS_PER_DOCUMENT`` problems and one ``and N more`` line, suggestions are tried a
bounded number of times, and positions come from an index built once per mapping. Linearity
is asserted by counting work (keys visited, suggestions tried), never by the clock; the
timing figure lives in ``bench/unknown_fields_bench.py``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.errors import InputProblem
from grove_gitops.fields import suggest
from grove_gitops.problems import MAX_PROBLEMS_PER_DOCUMENT, cap_document
from grove_gitops.yamlfiles import positions

CAP = MAX_PROBLEMS_PER_DOCUMENT


def pcs(name: str, template_keys: int = 0, pod_keys: int = 0, key: str = "unknownKey") -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    pod.update({f"podField{name}x{k}": 1 for k in range(pod_keys)})
    template: dict[str, Any] = {
        "terminationDelay": "30s",
        "cliques": [{"name": "a", "spec": {"roleName": "a", "replicas": 1, "podSpec": pod}}],
    }
    template.update({f"{key}{k}": 1 for k in range(template_keys)})
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"replicas": 1, "template": template},
    }


def write(path: Path, *docs: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def validate(src: Path, *args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["validate", str(src), *args])
    return result.exit_code, result.output.splitlines()


def test_a_template_with_thousands_of_unknown_keys_lists_the_cap_and_one_more_line(tmp_path: Path) -> None:
    write(tmp_path / "src" / "pcs.yaml", pcs("w", template_keys=3000))
    code, lines = validate(tmp_path / "src")
    assert code == 1
    errors = [line for line in lines if line.startswith("error: pcs.yaml")]
    assert len(errors) == CAP + 1
    assert errors[0] == "error: pcs.yaml:19:5: spec.template.unknownKey0: field not declared in schema"
    assert errors[-1] == f"error: pcs.yaml: and {3000 - CAP} more problems in PodCliqueSet ns/w (only the first {CAP} are listed)"
    assert lines[-1] == f"3000 errors ({CAP} listed); nothing was written"


def test_the_json_output_carries_the_cap(tmp_path: Path) -> None:
    write(tmp_path / "src" / "pcs.yaml", pcs("w", template_keys=500))
    code, lines = validate(tmp_path / "src", "--output", "json")
    assert code == 1
    found = json.loads("\n".join(lines))["problems"]
    assert len(found) == CAP + 1
    assert all(p["file"] == "pcs.yaml" for p in found)
    assert found[-1]["message"].startswith(f"and {500 - CAP} more problems in PodCliqueSet ns/w")
    assert found[0]["line"] == 19


def test_the_cap_is_per_document(tmp_path: Path) -> None:
    """Two documents of one file and a second file each get their own budget."""
    write(tmp_path / "src" / "a.yaml", pcs("a", template_keys=150), pcs("b", template_keys=150, key="otherKey"))
    write(tmp_path / "src" / "c.yaml", pcs("c", pod_keys=150))
    _, lines = validate(tmp_path / "src")
    more = [line for line in lines if "more problems in" in line]
    assert more == [
        "error: a.yaml: and 50 more problems in PodCliqueSet ns/a (only the first 100 are listed)",
        "error: a.yaml: and 50 more problems in PodCliqueSet ns/b (only the first 100 are listed)",
        "error: c.yaml: and 50 more problems in PodCliqueSet ns/c (only the first 100 are listed)",
    ]
    assert sum(line.startswith("error: a.yaml") for line in lines) == 2 * (CAP + 1)
    assert sum(line.startswith("error: c.yaml") for line in lines) == CAP + 1


def test_an_operator_configuration_with_thousands_of_unknown_keys_is_capped(tmp_path: Path) -> None:
    cfg = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "scheduler": {
            "defaultProfileName": "default-scheduler",
            "profiles": [{"name": "default-scheduler", **{f"unk{k}": 1 for k in range(2000)}}],
        },
    }
    write(tmp_path / "src" / "opcfg.yaml", cfg)
    write(tmp_path / "src" / "pcs.yaml", pcs("w"))
    _, lines = validate(tmp_path / "src")
    errors = [line for line in lines if line.startswith("error: opcfg.yaml")]
    assert len(errors) == CAP + 1
    assert errors[0].startswith("error: opcfg.yaml:7:5: scheduler.profiles[0].unk0: field not declared in schema")
    assert errors[-1].startswith(f"error: opcfg.yaml: and {2000 - CAP} more problems in the OperatorConfiguration")


def test_a_document_under_the_cap_is_listed_whole(tmp_path: Path) -> None:
    write(tmp_path / "src" / "pcs.yaml", pcs("w", template_keys=CAP))
    _, lines = validate(tmp_path / "src")
    assert sum(line.startswith("error: pcs.yaml") for line in lines) == CAP
    assert not any("more problems" in line for line in lines)
    assert lines[-1] == f"{CAP} errors; nothing was written"


def test_cap_document_consumes_lazily_and_counts_the_rest() -> None:
    made: list[int] = []

    def producer() -> Iterator[InputProblem]:
        for i in range(1000):
            made.append(i)
            yield InputProblem("f.yaml", f"spec.k{i}", "bad")

    capped = cap_document("f.yaml", producer())
    assert [p.field for p in capped[:CAP]] == [f"spec.k{i}" for i in range(CAP)]
    more = f"and {1000 - CAP} more problems in this document (only the first {CAP} are listed)"
    assert capped[CAP] == InputProblem("f.yaml", "", more)
    assert len(capped) == CAP + 1 and len(made) == 1000
    assert cap_document("f.yaml", []) == []


def _suggestion_tries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    tried: list[str] = []
    real = difflib.get_close_matches

    def counting(word: str, *args: Any, **kwargs: Any) -> list[str]:
        tried.append(word)
        return real(word, *args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", counting)
    return tried


@pytest.mark.parametrize(
    "docs",
    [
        pytest.param([pcs("w", template_keys=2000)], id="schema"),
        pytest.param([pcs("w", pod_keys=2000)], id="podSpec"),
    ],
)
def test_suggestions_are_tried_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[dict[str, Any]]
) -> None:
    """A did-you-mean compares the word with every declared name: tried for every one of
    2,000 unknown keys it dominated the run (each try is counted whether or not it matches)."""
    tried = _suggestion_tries(monkeypatch)
    write(tmp_path / "src" / "pcs.yaml", *docs)
    validate(tmp_path / "src")
    assert 0 < len(tried) <= suggest.MAX_SUGGESTIONS


def test_operator_configuration_suggestions_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tried = _suggestion_tries(monkeypatch)
    cfg = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "scheduler": {"profiles": [{"name": "default-scheduler", **{f"unk{k}": 1 for k in range(2000)}}]},
    }
    write(tmp_path / "src" / "opcfg.yaml", cfg)
    write(tmp_path / "src" / "pcs.yaml", pcs("w"))
    validate(tmp_path / "src")
    assert 0 < len(tried) <= suggest.MAX_SUGGESTIONS


class _CountingList(list[Any]):
    """A node's children that count how many times they are visited."""

    visits = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            _CountingList.visits += 1
            yield item


def _count_visits(node: yaml.Node) -> None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            _count_visits(k)
            _count_visits(v)
        node.value = _CountingList(node.value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _count_visits(item)
        node.value = _CountingList(node.value)


def _visits_to_place_every_key(keys: int) -> int:
    text = yaml.safe_dump(pcs("w", template_keys=keys), sort_keys=False)
    documents = positions.compose(text)
    assert isinstance(documents, list)
    for document in documents:
        _count_visits(document)
    _CountingList.visits = 0
    seen = set()
    for k in range(keys):
        seen.add(positions.position_in_documents(documents, f"spec.template.unknownKey{k}"))
        positions.position_in_documents(documents, "spec.template.cliques[a].spec.replicas")
    assert len(seen) == keys  # every key found at its own line
    return _CountingList.visits


def test_placing_n_problems_in_one_mapping_visits_its_keys_a_linear_number_of_times() -> None:
    """Four times the keys, each with a problem, cost about four times the key visits (a scan
    per problem cost sixteen times)."""
    small, large = _visits_to_place_every_key(500), _visits_to_place_every_key(2000)
    assert large <= 2000 * 3
    assert large / small < 5


def test_the_pod_spec_memo_keeps_a_page_of_errors_per_template_and_counts_the_rest() -> None:
    """A long-running agent memoises up to 4,096 templates: each holds at most one page of
    errors, while the document's cap still counts every one."""
    from grove_gitops.validation import podspec

    podspec._MEMO.clear()
    pod = {"containers": [{"name": "c", "image": "x"}], **{f"field{k}": 1 for k in range(1000)}}
    found = podspec.pod_spec_errors(pod, "1.35", "p")
    ((kept, more),) = podspec._MEMO.values()
    assert len(kept) == CAP and more == 1000 - CAP
    assert len(found) == 1000 and found[0].path == "p.field0"
    capped = cap_document("f.yaml", (InputProblem("f.yaml", e.path, e.message()) for e in found))
    assert [p.field for p in capped[:CAP]] == [e.path for e in found[:CAP]]
    assert capped[CAP].message.startswith(f"and {1000 - CAP} more problems")


def test_a_node_inventory_file_is_capped_too(tmp_path: Path) -> None:
    pools = [{"name": f"Bad_{k}", "count": 1, "allocatable": {"cpu": "1"}} for k in range(300)]
    inventory = {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "NodeInventory", "metadata": {"name": "i"},
                 "pools": pools}  # fmt: skip
    write(tmp_path / "src" / "inventory.yaml", inventory)
    write(tmp_path / "src" / "pcs.yaml", pcs("w"))
    _, lines = validate(tmp_path / "src")
    errors = [line for line in lines if line.startswith("error: inventory.yaml")]
    assert len(errors) == CAP + 1, lines[-3:]
    assert errors[-1].startswith("error: inventory.yaml: and 200 more problems in its node inventory")


def test_a_cluster_document_of_a_fleet_is_capped() -> None:
    from grove_gitops.fleet.model import parse_cluster

    data: dict[str, object] = {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "a"}}
    data.update({f"unknown{k}": 1 for k in range(300)})
    cluster, found = parse_cluster("cluster.yaml", data)
    assert cluster is None and len(found) == CAP + 1
    assert found[-1].message == f"and {300 - CAP} more problems in Cluster a (only the first {CAP} are listed)"
