"""Every name and managed-resource label a render produces, against Grove's own functions.

For every Grove sample (../shared/samples/grove), the example tree (examples/) and the fleet
example (examples-fleet/, every cluster), the PodCliqueSet as the render read it (the
``spec.source`` of the rendered gitops.grove.io record) goes to the Grove API oracle, which
decodes it strictly into Grove's ``core/v1alpha1`` type and answers every name Grove's
``common/namegen.go`` generates for it and the default labels of ``common/labels.go``. Each
rendered object is then compared field by field (names.py says which fields), and the sets of
PodCliques, PodGangs and headless Services must be exactly Grove's. The counts are printed.
"""

from __future__ import annotations

import copy
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.cli import main
from grove_gitops.render import render_source
from tests.oracle import names as cmp_names
from tests.oracle.client import Oracle, grove_api_version
from tests.support import ML_NAMESPACE, PROJECT, SAMPLES

#: Backend objects named after their PodGang (spec/grove-backends.md §4: KAI, Volcano).
GANG_NAMED = {("scheduling.run.ai/v2alpha2", "PodGroup"), ("scheduling.volcano.sh/v1beta1", "PodGroup")}
PART_OF = "app.kubernetes.io/part-of"


def _tree_objects(root: Path) -> list[dict[str, Any]]:
    """Every object of a rendered output tree (wiring and kustomizations left out)."""
    out: list[dict[str, Any]] = []
    for path in sorted(root.rglob("*.yaml")):
        if path.name == "kustomization.yaml" or any(p.startswith("_") for p in path.relative_to(root).parts):
            continue
        out += [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and "kind" in d]
    return out


def _fleet_objects(tmp: Path) -> dict[str, list[dict[str, Any]]]:
    """The fleet example rendered by the CLI, one object list per cluster."""
    out = tmp / "fleet-out"
    result = CliRunner().invoke(main, ["render", str(PROJECT / "examples-fleet"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    clusters = sorted(p for p in out.iterdir() if p.is_dir())
    assert len(clusters) == 2, clusters
    return {c.name: _tree_objects(c) for c in clusters}


def _source_pcs(root: Path) -> dict[str, dict[str, Any]]:
    """The grove.io PodCliqueSets of a source tree by name, as written (Grove reads them so)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(root.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "PodCliqueSet" and doc.get("apiVersion") == "grove.io/v1alpha1":
                assert doc["metadata"]["name"] not in found, f"two PodCliqueSets {doc['metadata']['name']} in {root}"
                found[doc["metadata"]["name"]] = doc
    return found


def _fleet_replicas(label: str) -> dict[str, int]:
    """A fleet cluster's ``overrides.replicas`` (``namespace/name`` -> count); none elsewhere."""
    if not label.startswith("examples-fleet/"):
        return {}
    cluster = yaml.safe_load((PROJECT / "examples-fleet" / "clusters" / f"{label.split('/')[1]}.yaml").read_text())
    return dict(cluster["spec"].get("overrides", {}).get("replicas") or {})


SOURCES = {"samples": SAMPLES, "examples": PROJECT / "examples", "examples-fleet": PROJECT / "examples-fleet"}


def _renders(tmp: Path) -> dict[str, list[dict[str, Any]]]:
    """Each source as rendered objects: the samples and the example at their start counts
    (``at="initial"``: Git plus what the agent creates, as Grove creates everything at once)."""
    sources = {
        "samples": [o.obj for o in render_source(SAMPLES, at="initial").objects],
        "examples": [o.obj for o in render_source(PROJECT / "examples", at="initial").objects],
    }
    for cluster, objects in _fleet_objects(tmp).items():
        sources[f"examples-fleet/{cluster}"] = objects
    return sources


def compare_source(oracle: Oracle, label: str, objects: list[dict[str, Any]]) -> cmp_names.Comparison:
    """:func:`compare_objects` for one of :data:`SOURCES` (a fleet cluster's with its overrides)."""
    return compare_objects(oracle, label, objects, _source_pcs(SOURCES[label.split("/")[0]]), _fleet_replicas(label))


def compare_objects(
    oracle: Oracle,
    label: str,
    objects: list[dict[str, Any]],
    sources: dict[str, dict[str, Any]],
    replicas: dict[str, int],
) -> cmp_names.Comparison:
    """Every rendered object of every PodCliqueSet against Grove's names for its source."""
    cmp = cmp_names.Comparison()
    by_pcs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    records: dict[tuple[str, str], dict[str, Any]] = {}
    for obj in objects:
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        if obj["kind"] == "PodCliqueSet" and obj["apiVersion"].startswith("gitops.grove.io/"):
            records[(ns, meta["name"])] = obj
        part_of = (meta.get("labels") or {}).get(PART_OF)
        if part_of is not None:
            by_pcs[(ns, part_of)].append(obj)
        elif (obj["apiVersion"], obj["kind"]) in GANG_NAMED:
            by_pcs[(ns, "__gang_named__")].append(obj)
    assert records, f"{label}: no PodCliqueSet rendered"
    gang_named = by_pcs.pop((next(iter(records))[0], "__gang_named__"), [])
    for (ns, pcs_name), record in sorted(records.items()):
        source = dict(sources[pcs_name])
        source["metadata"] = {**source["metadata"], "namespace": ns}
        if f"{ns}/{pcs_name}" in replicas:  # the cluster's override is what its Grove would read
            source["spec"] = {**source["spec"], "replicas": replicas[f"{ns}/{pcs_name}"]}
        exp = cmp_names.Expected(pcs_name, ns, oracle.pcs_names(source))
        cmp.value(f"{label}: PodCliqueSet {ns}/{pcs_name} replicas", len(exp.names["replicas"]),
                  record["spec"]["replicas"])
        cmp_names.compare_record(cmp, exp, record)
        cliques_seen: set[str] = set()
        gangs: list[str] = []
        services: list[str] = []
        for obj in by_pcs.pop((ns, pcs_name), []):
            cmp.objects += 1
            kind = obj["kind"]
            if obj is record:
                continue
            if kind == "Pod":
                clique = cmp_names.compare_pod(cmp, exp, obj)
                if clique is not None:
                    cliques_seen.add(clique)
            elif kind == "PodGang":
                cmp_names.compare_podgang(cmp, exp, obj)
                gangs.append(obj["metadata"]["name"])
            else:
                cmp_names.compare_named(cmp, exp, obj)
                if kind == "Service":
                    services.append(obj["metadata"]["name"])
        where = f"{label}: PodCliqueSet {ns}/{pcs_name}"
        cmp.sets(f"{where}: PodCliques with pods", exp.cliques, cliques_seen)
        cmp.sets(f"{where}: PodGangs", exp.gangs, gangs)
        cmp.sets(f"{where}: headless Services", exp.services.values(), services)
        for obj in gang_named:
            if obj["metadata"]["name"] in exp.gangs:
                cmp.objects += 1
                cmp.name(f"{where}: {obj['kind']} {obj['metadata']['name']} names its PodGang",
                         obj["metadata"]["name"], obj["metadata"]["name"])
    leftover = {k: len(v) for k, v in by_pcs.items() if k[1] != "__gang_named__"}
    assert not leftover, f"{label}: objects labelled part-of a PodCliqueSet that was not rendered: {leftover}"
    return cmp


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    return _renders(tmp_path_factory.mktemp("oracle"))


def test_every_name_and_label_matches_groves_functions(
    oracle: Oracle, renders: dict[str, list[dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    total = cmp_names.Comparison()
    pcs_count = 0
    for label, objects in renders.items():
        cmp = compare_source(oracle, label, objects)
        pcs_count += sum(1 for o in objects if o["kind"] == "PodCliqueSet")
        total.objects += cmp.objects
        total.names += cmp.names
        total.fields += cmp.fields
        total.differences += cmp.differences
    with capsys.disabled():
        print(
            f"\nGrove API oracle (operator/api {grove_api_version()}): {pcs_count} PodCliqueSets in "
            f"{len(renders)} renders, {total.objects} objects, {total.names} names, {total.fields} label/field "
            f"values compared; {len(total.differences)} differences"
        )
    assert total.differences == [], "\n".join(total.differences[:60])
    # the comparison reached every kind it is about (a render without pods compares nothing)
    assert total.objects > 250 and total.names > 1000


def test_a_renamed_podclique_is_a_difference(oracle: Oracle, renders: dict[str, list[dict[str, Any]]]) -> None:
    """The comparison fails on a name Grove would not generate, with both values."""
    objects = [dict(o) for o in renders["examples"]]
    pod = next(i for i, o in enumerate(objects) if o["kind"] == "Pod")
    bad = copy.deepcopy(objects[pod])
    bad["metadata"]["labels"]["grove.io/podgang"] = "llama-disagg-7"
    bad["spec"]["subdomain"] = "llama-disagg-svc"
    objects[pod] = bad
    cmp = compare_source(oracle, "examples", objects)
    text = "\n".join(cmp.differences)
    assert "grove.io/podgang: Grove 'llama-disagg-0' | grove-gitops 'llama-disagg-7'" in text
    assert "spec.subdomain (headless Service): Grove 'llama-disagg-0' | grove-gitops 'llama-disagg-svc'" in text


def test_groves_strict_decoding_refuses_an_unknown_field(oracle: Oracle) -> None:
    """The oracle reads a PodCliqueSet as Grove's type does, strictly: a field Grove's type does
    not have is an error, so names are never compared for an object Grove would read otherwise."""
    doc = yaml.safe_load((SAMPLES / "simple" / "simple1.yaml").read_text())
    doc["spec"]["template"]["cliques"][0]["spec"]["replicaz"] = 2
    answer = oracle.ask("pcs", object=doc)
    assert 'unknown field "spec.template.cliques[0].spec.replicaz"' in answer["error"]


_CLIQUES = ["a", "b", "pworker", "worker", "w0"]


@st.composite
def podcliquesets(draw: st.DrawFn) -> dict[str, Any]:
    """A PodCliqueSet of random shape: replicas, cliques and scaling groups with their own
    replicas and minAvailable (absent: Grove's CRD default)."""
    cliques = draw(st.lists(st.sampled_from(_CLIQUES), min_size=1, max_size=4, unique=True))
    free = list(cliques)
    groups: list[dict[str, Any]] = []
    for g in range(draw(st.sampled_from([1, 2, 0]))):
        if not free:
            break
        members = draw(st.lists(st.sampled_from(free), min_size=1, max_size=len(free), unique=True))
        free = [c for c in free if c not in members]
        group: dict[str, Any] = {"name": f"sg{g}", "cliqueNames": members}
        reps = draw(st.sampled_from([2, 3, 1, None]))
        if reps is not None:
            group["replicas"] = reps
        top = reps if reps is not None else 1
        min_available = draw(st.sampled_from([1, None, top]))
        if min_available is not None:
            group["minAvailable"] = min_available
        groups.append(group)
    template: dict[str, Any] = {
        "cliques": [
            {
                "name": c,
                "spec": {
                    "roleName": c,
                    "replicas": draw(st.integers(1, 2)),
                    "podSpec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
                },
            }
            for c in cliques
        ]
    }
    if groups:
        template["podCliqueScalingGroups"] = groups
    name = draw(st.sampled_from(["demo", "llm-0", "x1"]))
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"replicas": draw(st.sampled_from([1, 2, 3, 0])), "template": template},
    }


@settings(max_examples=40, deadline=None)
@given(pcs=podcliquesets())
def test_fuzz_shapes_render_groves_names(oracle: Oracle, pcs: dict[str, Any]) -> None:
    """Random shapes (replicas, groups, minAvailable) render exactly Grove's names and labels."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        (src / "pcs.yaml").write_text(yaml.safe_dump(pcs) + "---\n" + ML_NAMESPACE)
        objects = [o.obj for o in render_source(src, at="initial").objects]
    cmp = compare_objects(oracle, "fuzz", objects, {pcs["metadata"]["name"]: pcs}, {})
    assert cmp.differences == [], "\n".join(cmp.differences[:40])
