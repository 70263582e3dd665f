"""Bad input: a clear ``file: field: message`` error, exit code 1, no traceback, OUT unchanged."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from grove_gitops.cli import main
from tests.support import PROJECT, plain, write_source
from tests.support import SMALL_PCS as BASE

TAS_ON = "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\ntopologyAwareScheduling: {enabled: true}\n"
TWO_PROFILES = (
    "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
    "scheduler: {profiles: [{name: default-scheduler}, {name: kai-scheduler}]}\n"
)
CTB = """apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: fabric}
spec:
  levels:
  - {domain: zone, key: topology.kubernetes.io/zone}
  - {domain: rack, key: example.com/rack}
  - {domain: host, key: kubernetes.io/hostname}
"""


def pcs(mutate: Callable[[dict[str, Any]], None]) -> str:
    doc = copy.deepcopy(BASE)
    mutate(doc)
    return yaml.safe_dump(doc, sort_keys=False)


def tmpl(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["spec"]["template"]


def clique(doc: dict[str, Any], i: int) -> dict[str, Any]:
    return tmpl(doc)["cliques"][i]


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        node: Any = doc
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        last = parts[-1]
        if last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _group(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        group = {"name": "grp", "cliqueNames": ["worker"], **fields}
        tmpl(doc)["podCliqueScalingGroups"] = [group]

    return mutate


def _both(*mutators: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        for m in mutators:
            m(doc)

    return mutate


def _bomb() -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    prev = "a"
    for name in "bcdefghij":
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
        prev = name
    return "\n".join(lines) + "\n"


T = "spec.template"
C0, C1 = f"{T}.cliques[0]", f"{T}.cliques[1]"
CASES: list[tuple[str, dict[str, str | bytes], list[str]]] = [
    ("malformed-yaml", {"w.yaml": "a: [1, 2\n"}, ["w.yaml: malformed YAML: did not find expected"]),
    ("duplicate-key", {"w.yaml": "apiVersion: v1\nkind: ConfigMap\nkind: Secret\n"}, ['w.yaml: invalid YAML: line 3: duplicate key "kind"']),
    ("alias-bomb", {"w.yaml": _bomb()}, ["w.yaml: invalid YAML", "alias bomb"]),
    ("recursive-alias", {"w.yaml": "a: &a [*a]\n"}, ["w.yaml: invalid YAML: line 1: recursive alias is not allowed"]),
    ("oversize", {"big.yaml": "# " + "x" * (2 * 1024 * 1024) + "\n"}, ["big.yaml: file is larger than the 2097152 byte limit"]),
    ("not-utf8", {"w.yaml": b"kind: \xff\xfe\n"}, ["w.yaml: file is not valid UTF-8"]),
    ("not-a-mapping", {"w.yaml": "- a\n- b\n"}, ["w.yaml: document 1 is not a mapping"]),
    ("no-apiversion", {"w.yaml": "kind: PodCliqueSet\n"}, ["w.yaml: apiVersion: Required value"]),
    ("wrong-apiversion", {"w.yaml": pcs(_set("apiVersion", "grove.io/v1beta1"))}, ["w.yaml: apiVersion: unsupported apiVersion"]),
    ("replicas-wrong-type", {"w.yaml": pcs(_set("spec.replicas", "3"))}, ['w.yaml: spec.replicas: Invalid value: "3": must be of type integer']),
    ("unknown-field", {"w.yaml": pcs(_set("spec.template.clique", []))}, [f"w.yaml: {T}.clique: field not declared in schema"]),
    ("replicas-zero", {"w.yaml": pcs(_set(f"{C0}.spec.replicas".replace("spec.template.cliques[0]", "spec.template.cliques.0"), 0))},
     [f"w.yaml: {C0}.spec.minAvailable: Invalid value: 0: must be greater than 0"]),
    ("min-available-too-big", {"w.yaml": pcs(_set("spec.template.cliques.1.spec.minAvailable", 5))},
     [f"w.yaml: {C1}.spec.minAvailable: Invalid value: 5: minAvailable must not be greater than replicas"]),
    ("unknown-scheduler", {"w.yaml": pcs(_set("spec.template.cliques.0.spec.podSpec.schedulerName", "foo"))},
     [f'w.yaml: {T}.cliques[0].spec.podSpec.schedulerName: Invalid value: "foo": schedulerName must be an enabled scheduler backend']),
    ("mixed-schedulers", {"w.yaml": pcs(_set("spec.template.cliques.1.spec.podSpec.schedulerName", "other"))},
     [f'{T}.cliques[1].spec.podSpec.schedulerName: Invalid value: "other": schedulerName must be an enabled scheduler backend']),
    ("mixed-enabled-schedulers", {"w.yaml": pcs(_set("spec.template.cliques.1.spec.podSpec.schedulerName", "kai-scheduler")),
                                  "op.yaml": TWO_PROFILES},
     [f'{T}.cliques[1].spec.podSpec.schedulerName: Invalid value: "default-scheduler, kai-scheduler": '
      "the schedulerName for all pods have to be the same; router uses default-scheduler (no schedulerName: the "
      "OperatorConfiguration's default); worker uses kai-scheduler"]),
    ("startsafter-cycle", {"w.yaml": pcs(_both(
        _set("spec.template.cliqueStartupType", "CliqueStartupTypeExplicit"),
        _set("spec.template.cliques.0.spec.startsAfter", ["worker"]),
        _set("spec.template.cliques.1.spec.startsAfter", ["router"])))},
     [f'w.yaml: {T}.cliques: Invalid value: [["router","worker"]]: clique must not have circular dependencies']),
    ("startsafter-unknown", {"w.yaml": pcs(_both(
        _set("spec.template.cliqueStartupType", "CliqueStartupTypeExplicit"),
        _set("spec.template.cliques.1.spec.startsAfter", ["ghost"])))},
     [f'{T}.cliques.startsAfter: Invalid value: "ghost": unknown clique names found']),
    ("startsafter-self", {"w.yaml": pcs(_both(
        _set("spec.template.cliqueStartupType", "CliqueStartupTypeExplicit"),
        _set("spec.template.cliques.1.spec.startsAfter", ["worker"])))},
     [f'{C1}.spec.startsAfter: Invalid value: "worker": clique dependency cannot refer to itself']),
    ("name-too-long", {"w.yaml": pcs(_set("metadata.name", "a" * 40))},
     [f"{C1}.name: Invalid value: \"worker\": combined resource name length 46 exceeds 45-character limit"]),
    ("pcsg-name-too-long", {"w.yaml": pcs(_both(_set("metadata.name", "a" * 30), _group(name="g" * 10)))},
     [f"{T}.podCliqueScalingGroups[0].cliqueNames[0].name: Invalid value: \"worker\": combined resource name length 46"]),
    ("bad-pcs-name", {"w.yaml": pcs(_set("metadata.name", "Demo_1"))}, ['w.yaml: metadata.name: Invalid value: "Demo_1": a lowercase RFC 1123 subdomain']),
    ("duplicate-clique", {"w.yaml": pcs(_set("spec.template.cliques.1.name", "router"))}, [f'{T}.cliques.name: Duplicate value: "router"']),
    ("duplicate-role", {"w.yaml": pcs(_set("spec.template.cliques.1.spec.roleName", "router"))}, [f'{T}.cliques.roleName: Duplicate value: "router"']),
    ("pcsg-unknown-clique", {"w.yaml": pcs(_group(cliqueNames=["ghost"]))},
     [f'{T}.podCliqueScalingGroups[0].cliqueNames: Invalid value: "ghost": unidentified PodClique names found']),
    ("pcsg-min-gt-replicas", {"w.yaml": pcs(_group(replicas=1, minAvailable=2))},
     [f"{T}.podCliqueScalingGroups[0].minAvailable: Invalid value: 2: minAvailable must not be greater than replicas"]),
    ("clique-in-two-groups", {"w.yaml": pcs(lambda d: tmpl(d).update(podCliqueScalingGroups=[
        {"name": "a", "cliqueNames": ["worker"]}, {"name": "b", "cliqueNames": ["worker"]}]))},
     [f'{T}.podCliqueScalingGroups.cliqueNames: Duplicate value: "worker"']),
    ("autoscaling-in-group", {"w.yaml": pcs(_both(_group(), _set("spec.template.cliques.1.spec.autoScalingConfig", {"maxReplicas": 4})))},
     ["AutoScalingConfig is not allowed to be defined for PodClique that is part of scaling group"]),
    ("topology-without-tas", {"w.yaml": pcs(_set("spec.template.topologyConstraint", {"topologyName": "fabric", "pack": {"required": "rack"}}))},
     [f'{T}.topologyConstraint: Invalid value: ["rack"]: topology constraints are not allowed when Topology Aware Scheduling is disabled']),
    ("missing-binding", {"c.yaml": TAS_ON, "w.yaml": pcs(_set("spec.template.topologyConstraint", {"topologyName": "nope", "pack": {"required": "rack"}}))},
     [f'{T}.topologyConstraint.topologyName: Invalid value: "nope": ClusterTopologyBinding "nope" not found']),
    ("unknown-domain", {"c.yaml": TAS_ON, "t.yaml": CTB, "w.yaml": pcs(_set("spec.template.topologyConstraint", {"topologyName": "fabric", "pack": {"required": "block"}}))},
     [f"{T}.topologyConstraint.pack.required: Invalid value: \"block\": topology domain 'block' does not exist in cluster topology [zone rack host]"]),
    ("hierarchy", {"c.yaml": TAS_ON, "t.yaml": CTB, "w.yaml": pcs(_both(
        _set("spec.template.topologyConstraint", {"topologyName": "fabric", "pack": {"required": "rack"}}),
        _set("spec.template.cliques.1.topologyConstraint", {"pack": {"required": "zone"}})))},
     ["PodCliqueSet topology constraint domain 'rack' is narrower than PodClique 'worker' topology constraint domain 'zone'"]),
    ("no-topology-name", {"c.yaml": TAS_ON, "t.yaml": CTB, "w.yaml": pcs(_set("spec.template.cliques.1.topologyConstraint", {"pack": {"required": "rack"}}))},
     [f"{C1}.topologyConstraint.topologyName: Required value: topologyName is required when topologyConstraint is set and cannot be inherited"]),
    ("packdomain-on-create", {"c.yaml": TAS_ON, "t.yaml": CTB, "w.yaml": pcs(_set("spec.template.topologyConstraint", {"topologyName": "fabric", "packDomain": "rack"}))},
     [f"{T}.topologyConstraint.packDomain: Forbidden: packDomain is deprecated and cannot be used on new workloads"]),
    ("empty-pack", {"c.yaml": TAS_ON, "t.yaml": CTB, "w.yaml": pcs(_set("spec.template.topologyConstraint", {"topologyName": "fabric", "pack": {}}))},
     ["pack must specify at least one of required or preferred"]),
    ("unsupported-profile", {"c.yaml": "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\nscheduler:\n  profiles: [{name: magic}]\n", "w.yaml": pcs(lambda d: None)},
     ['c.yaml: scheduler.profiles[0].name: Unsupported value: "magic"']),
    ("bad-default-profile", {"c.yaml": "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\nscheduler:\n  defaultProfileName: kai\n  profiles: [{name: default-scheduler}]\n"},
     ['c.yaml: scheduler.defaultProfileName: Invalid value: "kai": default profile must be one of the configured profiles']),
    ("ctb-duplicate-domain", {"t.yaml": CTB.replace("domain: rack", "domain: zone")}, ['t.yaml: spec.levels[1].domain: Duplicate value: "zone"']),
    ("two-operator-configs", {"a.yaml": TAS_ON, "b.yaml": TAS_ON}, ["b.yaml: a second OperatorConfiguration (the first is in a.yaml)"]),
    ("bad-startup-type", {"w.yaml": pcs(_set("spec.template.cliqueStartupType", "Sometimes"))}, [f'{T}.cliqueStartupType: Unsupported value: "Sometimes"']),
    ("bad-env-name", {"w.yaml": pcs(_set("spec.template.cliques.0.spec.podSpec.containers.0.env", [{"name": "1BAD", "value": "x"}]))},
     [f'{C0}.spec.podSpec.containers[0].env[0].name: Invalid value: "1BAD": a valid environment variable name']),
    ("node-name", {"w.yaml": pcs(_set("spec.template.cliques.0.spec.podSpec.nodeName", "n1"))}, [f'{C0}.spec.podSpec.spec.nodeName: Invalid value: "n1": must not be set']),
    ("no-cliques", {"w.yaml": pcs(_set("spec.template.cliques", []))}, [f"{T}.cliques: Required value: at least one PodClique must be defined"]),
    ("bad-termination-delay", {"w.yaml": pcs(_set("spec.template.terminationDelay", "soon"))}, [f'{T}.terminationDelay: Invalid value: "soon"']),
    ("duplicate-pcs", {"a.yaml": pcs(lambda d: None), "b.yaml": pcs(lambda d: None)}, ["b.yaml: metadata.name: Invalid value: \"demo\": PodCliqueSet ml/demo is also defined in a.yaml"]),
    ("label-too-long", {"w.yaml": pcs(_set("metadata.labels", {"team": "x" * 64}))}, ["w.yaml: metadata.labels[team]: Invalid value:", "must be no more than 63 characters"]),
    ("bad-kube-version", {"r.yaml": "apiVersion: gitops.grove.io/v1alpha1\nkind: RenderConfiguration\nkubernetesVersion: '1.30'\n"},
     ['r.yaml: kubernetesVersion: Unsupported value: "1.30"']),
    ("unknown-claim-template", {"w.yaml": pcs(_set("spec.template.resourceSharing", [{"name": "gpus", "scope": "AllReplicas"}]))},
     [f'{T}.resourceSharing[0].name: Not found: "ml/gpus']),
    ("mnnvl-disabled", {"w.yaml": pcs(_set("metadata.annotations", {"grove.io/mnnvl-group": "g1"}))},
     ["metadata.annotations.grove.io/mnnvl-group: Invalid value: \"g1\": MNNVL is not enabled in the operator configuration"]),
    ("negative-replicas", {"w.yaml": pcs(_set("spec.replicas", -1))}, ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
    ("missing-pod-spec", {"w.yaml": pcs(lambda d: clique(d, 0)["spec"].pop("podSpec"))}, [f"{C0}.spec.podSpec: Required value"]),
]


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        path = root / rel
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
    return root


def _snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_there_are_at_least_30_cases() -> None:
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def previous_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("prev")
    src = write_source(base / "src", {"ok.yaml": pcs(lambda d: None)})
    out = base / "out"
    result = CliRunner().invoke(main, ["render", str(src), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize(("case", "files", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rejected(case: str, files: dict[str, str | bytes], expected: list[str], tmp_path: Path, previous_output: Path) -> None:
    src = _write(tmp_path / "src", files)
    before = _snapshot(previous_output)
    for command in (["validate", str(src)], ["render", str(src), "--out", str(previous_output)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1, result.output
        assert isinstance(result.exception, SystemExit)
        assert "Traceback" not in result.output
        for fragment in expected:
            assert fragment in plain(result.output), f"{fragment!r} not in:\n{result.output}"
        assert "nothing was written" in result.output
    assert _snapshot(previous_output) == before
    leftovers = [p.name for p in previous_output.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_all_errors_of_a_file_are_reported_together(tmp_path: Path) -> None:
    text = pcs(_both(_set("spec.replicas", -1), _set("spec.template.cliques.1.name", "router"), _set("metadata.name", "Bad")))
    src = _write(tmp_path / "src", {"w.yaml": text})
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 1
    lines = [line for line in plain(result.output).splitlines() if line.startswith("error: w.yaml: ")]
    assert len(lines) >= 3
    assert "3 errors" in result.output or f"{len(lines)} errors" in result.output


def test_real_process_exit_code_and_no_traceback(tmp_path: Path) -> None:
    src = _write(tmp_path / "src", {"w.yaml": "a: [1\n"})
    proc = subprocess.run(
        [sys.executable, "-m", "grove_gitops.cli", "render", str(src), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=PROJECT,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "w.yaml:2:1: malformed YAML: " in proc.stderr
    assert not (tmp_path / "out").exists()


def test_usage_error_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["render", str(tmp_path)])
    assert result.exit_code == 2
