"""Issue 34.9: references to cluster objects checked against a ClusterFacts the user
generates with kubectl (docs/authoring.md "Cluster facts")."""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.api.clusterfacts import MAX_FACTS, ClusterFacts
from grove_gitops.cli import main
from grove_gitops.errors import InvalidInputError
from grove_gitops.fields.suggest import MAX_REFERENCE_CANDIDATES, MAX_SUGGESTIONS
from grove_gitops.load.source import Sourced, load_source
from grove_gitops.render import render_source
from grove_gitops.validation.clusterfacts import read_facts
from tests.support import PROJECT
from tests.test_authoring_errors import PCS_FILE, example

FACTS = "cluster/facts.yaml"
ROUTER_POD = "          podSpec:\n            containers:\n              - name: router\n"
HEADER = "apiVersion: gitops.grove.io/v1alpha1\nkind: ClusterFacts\nmetadata: {name: prod}\nobjects:\n"
ENTRIES = [
    "v1 Namespace <none> default",
    "v1 Namespace <none> inference",
    "scheduling.k8s.io/v1 PriorityClass <none> inference-high",
    "v1 ServiceAccount inference default",
    "v1 ServiceAccount inference vllm",
    "v1 Secret inference hf-token",
    "scheduling.run.ai/v2 Queue <none> inference",
]


def facts_text(entries: list[str]) -> str:
    return HEADER + "".join(f'  - "{e}"\n' for e in entries)


def with_facts(tmp_path: Path, entries: list[str], *edits: tuple[str, str]) -> Path:
    src = example(tmp_path, *edits)
    (src / FACTS).write_text(facts_text(entries))
    return src


def reference_warnings(src: Path) -> list[str]:
    return [w for w in render_source(src).warnings if "cluster facts" in w]


def pod_with(extra: str) -> tuple[str, str]:
    return ROUTER_POD, ROUTER_POD.replace("podSpec:\n", "podSpec:\n" + extra)


def test_the_example_with_matching_facts_has_no_warning(tmp_path: Path) -> None:
    src = with_facts(tmp_path, ENTRIES)
    assert render_source(src).warnings == []


def test_a_misspelt_priority_class_is_warned_with_the_known_ones(tmp_path: Path) -> None:
    src = with_facts(tmp_path, ENTRIES, ("priorityClassName: inference-high", "priorityClassName: inference-hihg"))
    assert reference_warnings(src) == [
        f'{PCS_FILE}: spec.template.priorityClassName: PriorityClass "inference-hihg" is not in the cluster facts '
        "(ClusterFacts) nor created by the source; known PriorityClasses: inference-high; did you mean inference-high?"
    ]


def test_service_account_and_every_kind_of_secret_reference_are_checked(tmp_path: Path) -> None:
    extra = (
        "            serviceAccountName: vlm\n"
        "            imagePullSecrets: [{name: hf-tokn}]\n"
        "            volumes:\n"
        "              - {name: a, secret: {secretName: certs}}\n"
        "              - {name: b, secret: {secretName: maybe, optional: true}}\n"
        "              - {name: c, projected: {sources: [{secret: {name: proj}}]}}\n"
    )
    container = (
        "                env: [{name: T, valueFrom: {secretKeyRef: {name: envsecret, key: t}}}]\n"
        "                envFrom: [{secretRef: {name: hf-token}}, {secretRef: {name: gone}}]\n"
    )
    old, new = pod_with(extra)
    src = with_facts(tmp_path, ENTRIES, (old, new + container))
    found = [re.sub(r" is not in the cluster facts.*?(; did you mean (\S+)\?)?$", r" \2", w) for w in reference_warnings(src)]
    p = f"{PCS_FILE}: spec.template.cliques[0].spec.podSpec"
    assert found == [
        f'{p}.serviceAccountName: ServiceAccount "vlm" in namespace "inference" vllm',
        f'{p}.imagePullSecrets[0].name: Secret "hf-tokn" in namespace "inference" hf-token',
        f'{p}.volumes[0].secret.secretName: Secret "certs" in namespace "inference" ',
        f'{p}.volumes[2].projected.sources[0].secret.name: Secret "proj" in namespace "inference" ',
        f'{p}.containers[0].env[0].valueFrom.secretKeyRef.name: Secret "envsecret" in namespace "inference" ',
        f'{p}.containers[0].envFrom[1].secretRef.name: Secret "gone" in namespace "inference" ',
    ]


def test_other_secrets_are_never_listed(tmp_path: Path) -> None:
    old, new = pod_with("            imagePullSecrets: [{name: zzz}]\n")
    src = with_facts(tmp_path, [*ENTRIES, "v1 Secret inference private-key"], (old, new))
    (warning,) = reference_warnings(src)
    assert "private-key" not in warning and "hf-token" not in warning


def test_the_kai_queue_is_checked_through_its_backend(tmp_path: Path) -> None:
    src = with_facts(tmp_path, ENTRIES, ("kai.scheduler/queue: inference", "kai.scheduler/queue: inferense"))
    assert reference_warnings(src) == [
        f'{PCS_FILE}: metadata.labels[kai.scheduler/queue]: queue "inferense" (scheduling.run.ai Queue) is not in '
        "the cluster facts (ClusterFacts) nor created by the source; its gangs stay pending until it exists; "
        "known Queues: inference; did you mean inference?"
    ]


def test_a_kind_the_facts_do_not_list_is_not_checked(tmp_path: Path) -> None:
    entries = [e for e in ENTRIES if "Secret" not in e and "Queue" not in e]
    old, new = pod_with("            imagePullSecrets: [{name: anything}]\n")
    src = with_facts(tmp_path, entries, (old, new), ("kai.scheduler/queue: inference", "kai.scheduler/queue: other"))
    assert reference_warnings(src) == []


def test_an_object_the_source_creates_counts_as_existing(tmp_path: Path) -> None:
    old, new = pod_with("            serviceAccountName: router\n")
    src = with_facts(tmp_path, ENTRIES, (old, new))
    assert len(reference_warnings(src)) == 1
    (src / "workloads/llm-inference/sa.yaml").write_text(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: router, namespace: inference}\n"
    )
    assert reference_warnings(src) == []


def test_the_facts_namespaces_count_as_existing(tmp_path: Path) -> None:
    src = with_facts(tmp_path, ENTRIES)
    (src / "workloads/llm-inference/namespace.yaml").unlink()
    assert render_source(src).warnings == []
    (src / FACTS).write_text(facts_text([e for e in ENTRIES if "Namespace <none> inference" not in e]))
    (warning,) = render_source(src).warnings
    assert 'namespace "inference" is not created by the source' in warning


def test_without_facts_nothing_is_checked(tmp_path: Path) -> None:
    old, new = pod_with("            serviceAccountName: nobody\n")
    assert reference_warnings(example(tmp_path, (old, new))) == []


def test_a_bad_entry_is_an_error_at_its_line(tmp_path: Path) -> None:
    src = with_facts(tmp_path, [*ENTRIES, "v1 Secret inference", "v1 Secret Bad_NS x", "v1 secret inference x"])
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert lines[0] == (
        f'error: {FACTS}:12:5: objects[7]: Invalid value: "v1 Secret inference": must be "apiVersion kind namespace '
        'name", with <none> as the namespace of a cluster-scoped object'
    )
    assert lines[1].startswith(f'error: {FACTS}:13:5: objects[8]: Invalid value: "v1 Secret Bad_NS x": namespace "Bad_NS": ')
    assert lines[2] == f'error: {FACTS}:14:5: objects[9]: Invalid value: "v1 secret inference x": kind "secret" is not a Kubernetes kind'


def test_bad_entries_are_capped_and_the_count_is_bounded(tmp_path: Path) -> None:
    facts = ClusterFacts(objects=["x"] * 5000)
    _, problems = read_facts([Sourced("f.yaml", facts)])
    assert len(problems) == 101 and problems[-1].message.startswith("and 4900 more problems in ClusterFacts")
    src = example(tmp_path)
    (src / FACTS).write_text(HEADER + "  - x\n" * (MAX_FACTS + 1))  # within the loader's 2 MiB per file
    with pytest.raises(InvalidInputError) as info:
        render_source(src)
    (problem,) = [p for p in info.value.problems if p.file == FACTS]
    assert problem.field == "objects" and f"at most {MAX_FACTS}" in problem.message


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=300), max_size=20))
def test_any_entry_is_a_fact_or_a_clean_problem(entries: list[str]) -> None:
    facts, problems = read_facts([Sourced("f.yaml", ClusterFacts(objects=entries))])
    assert facts is not None
    assert all(p.file == "f.yaml" and re.fullmatch(r"objects\[\d+\]", p.field) for p in problems)
    assert all(len(p.message) < 700 for p in problems)
    kept = sum(len(names) for by_ns in facts.objects.values() for names in by_ns.values())
    assert kept + len(problems) >= min(1, len(set(entries)))


def test_the_documented_command_makes_a_facts_file_the_loader_reads(tmp_path: Path) -> None:
    """The shell of docs/authoring.md, run with a kubectl that prints what custom-columns does."""
    doc = (PROJECT / "docs/authoring.md").read_text()
    command = re.search(r"<!-- cluster-facts-command -->\n```sh\n(.*?)```", doc, re.S)
    assert command is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(
        "#!/bin/sh\n"
        'case "$2" in\n'
        "  queues.*) echo 'scheduling.run.ai/v2   Queue   <none>   inference' ;;\n"
        "  *) printf '%s\\n' 'v1   Namespace   <none>   inference' \\\n"
        "       'scheduling.k8s.io/v1   PriorityClass   <none>   inference-high' \\\n"
        "       'v1   ServiceAccount   inference   vllm' 'v1   Secret   inference   hf-token' ;;\n"
        "esac\n"
    )
    kubectl.chmod(0o755)
    (tmp_path / "cluster").mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", command.group(1)], cwd=tmp_path, env=env, check=True)
    source = load_source(tmp_path / "cluster")
    assert source.problems == []
    (facts,) = source.cluster_facts
    found, problems = read_facts(source.cluster_facts)
    assert problems == [] and found is not None
    assert found.names("scheduling.run.ai", "Queue") == {"inference"}
    assert found.names("", "Secret", "inference") == {"hf-token"}
    assert len(facts.obj.objects) == 5


def test_a_fleet_cluster_reads_the_facts_under_its_paths(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(PROJECT / "examples-fleet", src)
    (src / "workloads/facts.yaml").write_text(facts_text(["scheduling.run.ai/v2 Queue <none> inference-stg"]))
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 0, result.output
    # prod-kai's override puts its gangs in queue inference-prod, which the facts do not have
    assert 'queue "inference-prod" (scheduling.run.ai Queue) is not in the cluster facts' in result.output
    assert "did you mean inference-stg?" in result.output


def test_guesses_for_missing_references_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each guess compares with every candidate: 50 missing Secrets among 5,000 known ones try
    at most MAX_SUGGESTIONS guesses of at most MAX_REFERENCE_CANDIDATES names each."""
    calls: list[int] = []
    real = difflib.get_close_matches

    def counting(word: str, possibilities: list[str], *args: Any, **kwargs: Any) -> list[str]:
        calls.append(len(possibilities))
        return real(word, possibilities, *args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", counting)
    refs = ", ".join(f"{{name: missing-{i}}}" for i in range(50))
    old, new = pod_with(f"            imagePullSecrets: [{refs}]\n")
    src = with_facts(tmp_path, [*ENTRIES, *(f"v1 Secret inference secret-{i}" for i in range(5000))], (old, new))
    assert len(reference_warnings(src)) == 50
    assert 0 < len(calls) <= MAX_SUGGESTIONS and max(calls) <= MAX_REFERENCE_CANDIDATES
