"""OperatorConfiguration keys Grove does not know are errors with a did-you-mean (issue 24 §4).

Grove's operator drops an unknown key silently, so ``defaultProfile: kai-scheduler`` (for
``defaultProfileName``) once rendered an 80-GPU gang with no gang objects at all: the default
profile stayed ``default-scheduler``. Every key Grove's type declares, at every level, is
accepted whether or not rendering reads it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.api.operatorconfig import GroveConfigModel, OperatorConfiguration
from grove_gitops.errors import InvalidInputError
from grove_gitops.prcheck.lines import line_in_file
from grove_gitops.render import RenderResult, render_source
from grove_gitops.validation.opcfgkeys import _field_paths, _models_of, unknown_field_errors
from tests.support import write_source

OPCFG = "config/operator-configuration.yaml"
#: The issue's reproduction: KAI is meant to be the default, the key is misspelt.
TYPO_CONFIG = """\
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
scheduler:
  defaultProfile: kai-scheduler
  profiles:
  - name: kai-scheduler
  - name: default-scheduler
"""
#: 10 pods of 8 GPUs: an 80-GPU gang that must be scheduled all together or not at all.
GANG = """\
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: train, namespace: ml, labels: {kai.scheduler/queue: training}}
spec:
  replicas: 1
  template:
    cliques:
    - name: worker
      spec:
        roleName: worker
        replicas: 10
        podSpec:
          containers:
          - {name: w, image: trainer, resources: {limits: {nvidia.com/gpu: 8}}}
"""
#: Section 7.1 of spec/grove-backends.md: every field of Grove's OperatorConfiguration, plus the
#: key Grove's Helm chart writes (authorizer.reconcilerServiceAccountUserName).
EVERY_FIELD = """\
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
metadata: {name: prod}
runtimeClientConnection: {qps: 100, burst: 120, contentType: "", acceptContentTypes: ""}
leaderElection:
  enabled: false
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
  resourceLock: leases
  resourceName: grove-operator-leader-election
  resourceNamespace: ""
server:
  webhooks:
    bindAddress: ""
    port: 9443
    serverCertDir: /etc/grove-operator/webhook-certs
    secretName: grove-webhook-server-cert
    certProvisionMode: auto
  healthProbes: {bindAddress: "", port: 9444}
  metrics: {bindAddress: "", port: 9445}
debugging: {enableProfiling: false, pprofBindHost: 127.0.0.1, pprofBindPort: 2753}
controllers:
  podCliqueSet: {concurrentSyncs: 10}
  podClique: {concurrentSyncs: 10}
  podCliqueScalingGroup: {concurrentSyncs: 5}
  podGang: {concurrentSyncs: 5}
logLevel: info
logFormat: json
authorizer:
  enabled: true
  reconcilerServiceAccountUserName: system:serviceaccount:grove-system:grove-operator
  exemptServiceAccountUserNames: [system:serviceaccount:kube-system:generic-garbage-collector]
topologyAwareScheduling: {enabled: false}
network: {autoMNNVLEnabled: false}
scheduler:
  defaultProfileName: kai-scheduler
  profiles:
  - name: default-scheduler
    config: {gangScheduling: false}
  - name: kai-scheduler
"""


def render(tmp_path: Path, config: str) -> RenderResult:
    return render_source(write_source(tmp_path / "src", {OPCFG: config, "workloads/train.yaml": GANG}))


def errors_of(tmp_path: Path, config: str) -> list[tuple[str, str, str]]:
    with pytest.raises(InvalidInputError) as caught:
        render(tmp_path, config)
    return [(p.file, p.field, p.message) for p in caught.value.problems]


def test_the_issues_typo_is_an_error_naming_file_field_and_the_field_meant(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, TYPO_CONFIG)
    assert len(errors) == 1
    file, field, message = errors[0]
    assert (file, field) == (OPCFG, "scheduler.defaultProfile")
    assert message.startswith("field not declared in schema; did you mean defaultProfileName?")
    # The field path pins the line the error output shows (line 4: "  defaultProfile: ...").
    assert line_in_file(tmp_path / "src" / OPCFG, field) == 4


def test_with_the_key_spelt_right_the_gang_gets_its_kai_podgroup(tmp_path: Path) -> None:
    """What the typo silently lost: KAI as the default profile and the gang's PodGroup."""
    result = render(tmp_path, TYPO_CONFIG.replace("defaultProfile:", "defaultProfileName:"))
    kinds = [o.obj["kind"] for o in result.objects]
    assert kinds.count("PodGroup") == 1
    pods = [o.obj for o in result.objects if o.obj["kind"] == "Pod"]
    assert len(pods) == 10
    assert {p["spec"]["schedulerName"] for p in pods} == {"kai-scheduler"}


def test_validate_reports_it_exit_1_without_traceback(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {OPCFG: TYPO_CONFIG, "workloads/train.yaml": GANG})
    done = subprocess.run(
        [sys.executable, "-m", "grove_gitops", "validate", str(src)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert f"{OPCFG}:4:3: scheduler.defaultProfile: field not declared in schema; did you mean defaultProfileName?" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


def test_every_field_grove_knows_is_accepted_even_unread(tmp_path: Path) -> None:
    result = render(tmp_path, EVERY_FIELD)
    assert [o.obj["kind"] for o in result.objects].count("PodGroup") == 1


def _declared_paths() -> list[tuple[str, type[GroveConfigModel]]]:
    """Every declared field path of the models, with the model that declares it."""
    out: list[tuple[str, type[GroveConfigModel]]] = []

    def walk(model: type[GroveConfigModel], base: str) -> None:
        for name, info in model.model_fields.items():
            path = f"{base}.{name}" if base else name
            out.append((path, model))
            for inner in _models_of(info.annotation):
                walk(inner, f"{path}[0]" if "list" in str(info.annotation) else path)

    walk(OperatorConfiguration, "")
    return out


def _with_key(path: str, key: str) -> dict[str, Any]:
    """A configuration whose object at ``path``'s parent holds the extra ``key``."""
    doc: dict[str, Any] = yaml.safe_load(TYPO_CONFIG.replace("defaultProfile:", "defaultProfileName:"))
    node: Any = doc
    parts = path.split(".")[:-1]
    for part in parts:
        name, _, index = part.partition("[")
        node = node.setdefault(name, [{"name": "kai-scheduler"}] if index else {})
        if index:
            node = node[0]
    node[key] = "x"
    return doc


@pytest.mark.parametrize(
    "path",
    [p for p, _ in _declared_paths() if p not in ("apiVersion", "kind") and not p.endswith((".name", "config"))],
)
def test_a_misspelling_of_any_field_at_any_level_is_reported_with_that_field(tmp_path: Path, path: str) -> None:
    """Each known key of Grove's type, misspelt by a doubled last letter, at its own level."""
    name = path.rpartition(".")[2]
    typo = name + name[-1]
    doc = _with_key(path, typo)
    errors = errors_of(tmp_path, yaml.safe_dump(doc))
    parent = path.rpartition(".")[0]
    where = f"{parent}.{typo}" if parent else typo
    assert [(f, m.partition(" (")[0]) for _, f, m in errors] == [
        (where, f"field not declared in schema; did you mean {name}?")
    ]


def test_a_key_at_the_wrong_level_points_to_where_it_belongs(tmp_path: Path) -> None:
    config = TYPO_CONFIG.replace("defaultProfile:", "defaultProfileName:") + "autoMNNVLEnabled: true\n"
    errors = errors_of(tmp_path, config)
    assert [(f, m.partition(" (")[0]) for _, f, m in errors] == [
        ("autoMNNVLEnabled", "field not declared in schema; did you mean network.autoMNNVLEnabled?")
    ]


def test_every_unknown_key_is_reported_in_one_run(tmp_path: Path) -> None:
    config = textwrap.dedent(
        """\
        apiVersion: operator.config.grove.io/v1alpha1
        kind: OperatorConfiguration
        clusterTopology: {enabled: true}
        network: {autoMNNVL: true}
        scheduler:
          profiles:
          - {name: kai-scheduler, nmae: kai}
        """
    )
    fields = [f for _, f, _ in errors_of(tmp_path, config)]
    assert sorted(fields) == ["clusterTopology", "network.autoMNNVL", "scheduler.profiles[0].nmae"]


def test_the_known_keys_cover_grove_types_go() -> None:
    """The field set of Grove's ``operator/api/config/v1alpha1/types.go`` (and the chart's one
    extra key), so a model change that drops a field Grove has fails here."""
    paths = set(_field_paths())
    assert paths >= {
        "runtimeClientConnection", "qps", "burst", "contentType", "acceptContentTypes",
        "leaderElection", "enabled", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
        "resourceName", "resourceNamespace", "server", "webhooks", "bindAddress", "port", "serverCertDir",
        "secretName", "certProvisionMode", "healthProbes", "metrics", "debugging", "enableProfiling",
        "pprofBindHost", "pprofBindPort", "controllers", "podCliqueSet", "podClique", "podCliqueScalingGroup",
        "podGang", "concurrentSyncs", "logLevel", "logFormat", "authorizer", "exemptServiceAccountUserNames",
        "reconcilerServiceAccountUserName", "topologyAwareScheduling", "network", "autoMNNVLEnabled",
        "scheduler", "defaultProfileName", "profiles", "name", "config",
    }  # fmt: skip


def test_a_misspelt_gang_scheduling_key_is_reported_not_rendered_without_gangs(tmp_path: Path) -> None:
    """Grove's ``KubeSchedulerConfig`` has one key; a typo there would also render no gang objects."""
    config = textwrap.dedent(
        """\
        apiVersion: operator.config.grove.io/v1alpha1
        kind: OperatorConfiguration
        scheduler:
          profiles:
          - name: default-scheduler
            config: {gangSchedulng: true}
        """
    )
    errors = errors_of(tmp_path, config)
    assert [(f, fld, m.partition(" (")[0]) for f, fld, m in errors] == [
        (OPCFG, "scheduler.profiles[0].config.gangSchedulng", "field not declared in schema; did you mean gangScheduling?")
    ]
    assert line_in_file(tmp_path / "src" / OPCFG, errors[0][1]) == 6


def test_kai_takes_no_config_keys(tmp_path: Path) -> None:
    """Grove's ``KaiSchedulerConfiguration`` is empty; a backend that checks its own config
    (coscheduling, Koordinator, Volcano) is left to do so."""
    config = TYPO_CONFIG.replace("defaultProfile:", "defaultProfileName:").replace(
        "  - name: kai-scheduler\n", "  - name: kai-scheduler\n    config: {queue: training}\n"
    )
    errors = errors_of(tmp_path, config)
    assert [(fld, m.partition(" (")[0]) for _, fld, m in errors] == [
        ("scheduler.profiles[0].config.queue", "field not declared in schema; kai-scheduler takes no config keys")
    ]


_LEVELS = ["", "scheduler", "scheduler.profiles[0]", "network", "server.webhooks", "controllers.podGang"]
_KEYS = st.one_of(st.text(min_size=1, max_size=300), st.sampled_from(["metadata", "defaultProfile", "nmae", "port"]))


@given(
    extras=st.lists(
        st.tuples(st.sampled_from(_LEVELS), _KEYS), min_size=1, max_size=8
    )
)
@settings(max_examples=60, deadline=None)
def test_any_unknown_key_anywhere_is_reported_once_and_known_keys_never(extras: list[tuple[str, str]]) -> None:
    """Random keys (any text, up to 300 characters: the did-you-mean stays bounded) at several
    levels, plus the accepted ``metadata``: each key no model declares there is reported exactly
    once, at its path."""
    doc: dict[str, Any] = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "scheduler": {"profiles": [{"name": "kai-scheduler"}]},
    }
    expected: set[str] = set()
    for level, key in extras:
        node: Any = doc
        for part in level.split(".") if level else []:
            name, _, index = part.partition("[")
            node = node.setdefault(name, {})[0] if index else node.setdefault(name, {})
        model = _model_at(level)
        if key in node or key in model.model_fields:
            continue  # a declared field is typed; this test is about the others
        node[key] = 1
        if key not in model.accepted_extra:
            expected.add(f"{level}.{key}" if level else key)
    cfg = OperatorConfiguration.model_validate(doc)
    found = [e.path for e in unknown_field_errors(cfg)]
    assert sorted(found) == sorted(expected)


def _model_at(level: str) -> type[GroveConfigModel]:
    model: type[GroveConfigModel] = OperatorConfiguration
    for part in level.split(".") if level else []:
        (model,) = _models_of(model.model_fields[part.partition("[")[0]].annotation)
    return model


def test_a_negative_burst_is_placed_at_its_key_not_at_line_one(tmp_path: Path) -> None:
    """Grove names the field ``clientConnection.burst`` (its Go path) while the file's key is
    ``runtimeClientConnection``: the message keeps Grove's words, the position is the key's
    (before: ``:1:1``, the path resolved to nothing in the file)."""
    config = TYPO_CONFIG.replace("defaultProfile:", "defaultProfileName:") + "runtimeClientConnection:\n  qps: 100\n  burst: -1\n"
    src = write_source(tmp_path / "src", {OPCFG: config, "workloads/train.yaml": GANG})
    done = subprocess.run(
        [sys.executable, "-m", "grove_gitops", "validate", str(src)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert f"{OPCFG}:10:3: clientConnection.burst: Invalid value: -1: must be non-negative" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
