"""Issue 34.8, "messages that stop short": each mistake of a new user, introduced into the
project's example, gets a message that says what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.fields.fielderrors import quote_hint
from grove_gitops.render import render_source
from tests.test_authoring_errors import PCS_FILE, example, problems

ROUTER_POD = "          podSpec:\n            containers:\n              - name: router\n"


def _messages(src: Path) -> list[str]:
    return [f"{p.field}: {p.message}" for p in problems(src)]


def test_a_number_as_a_label_value_is_told_to_be_quoted(tmp_path: Path) -> None:
    src = example(tmp_path, ("    team: serving\n", "    team: serving\n    version: 1.10\n"))
    assert _messages(src) == [
        'metadata.labels.version: Invalid value: 1.1: must be of type string; quote it (the text you meant, in quotes): '
        "unquoted, YAML reads it as the number 1.1, which drops how it was written (1.10 reads as 1.1)"
    ]


def test_a_boolean_as_an_annotation_is_told_to_be_quoted(tmp_path: Path) -> None:
    src = example(tmp_path, ("          role: router\n", "          role: router\n        annotations:\n          gpu: yes\n"))
    (message,) = _messages(src)
    assert message.endswith(
        'Invalid value: true: must be of type string; quote it ("true"): unquoted, YAML reads true as a boolean '
        "(so are yes, no, on and off)"
    )


def test_a_toleration_value_true_reads_like_kubernetes_not_python(tmp_path: Path) -> None:
    tolerations = (
        "          podSpec:\n            tolerations:\n              - {key: gpu, operator: Equal, value: true}\n"
        "            containers:\n              - name: router\n"
    )
    src = example(tmp_path, (ROUTER_POD, tolerations))
    (message,) = _messages(src)
    assert message == (
        "spec.template.cliques[0].spec.podSpec.tolerations[0].value: Invalid value: true: must be of type string; "
        'quote it ("true"): unquoted, YAML reads true as a boolean (so are yes, no, on and off)'
    )
    assert "True" not in message and "'string'" not in message


def test_an_env_value_given_a_number_gets_the_hint(tmp_path: Path) -> None:
    env = ROUTER_POD + "                env: [{name: WORKERS, value: 8}]\n"
    src = example(tmp_path, (ROUTER_POD, env))
    (message,) = _messages(src)
    assert message.startswith("spec.template.cliques[0].spec.podSpec.containers[0].env[0].value: Invalid value: 8: ")
    assert 'must be of type string; quote it (the text you meant, in quotes): unquoted, YAML reads it as the number 8' in message


def test_the_hint_is_only_for_numbers_and_booleans() -> None:
    assert quote_hint(["a"]) == "" and quote_hint({"a": 1}) == "" and quote_hint(None) == ""


def test_a_misspelt_topology_name_lists_the_known_bindings(tmp_path: Path) -> None:
    src = example(tmp_path, ("topologyName: gpu-fabric", "topologyName: gpu-fabirc"))
    assert _messages(src) == [
        'spec.template.topologyConstraint.topologyName: Invalid value: "gpu-fabirc": ClusterTopologyBinding '
        '"gpu-fabirc" not found; known ClusterTopologyBindings: gpu-fabric; did you mean gpu-fabric?'
    ]


def test_a_topology_name_without_any_binding_says_there_is_none(tmp_path: Path) -> None:
    src = example(tmp_path)
    (src / "topology/gpu-fabric.yaml").unlink()
    messages = _messages(src)
    assert any('ClusterTopologyBinding "gpu-fabric" not found; there are no ClusterTopologyBindings' in m for m in messages)


def test_a_misspelt_topology_domain_gets_a_did_you_mean(tmp_path: Path) -> None:
    src = example(tmp_path, ("required: zone", "required: zome"))
    assert _messages(src) == [
        "spec.template.topologyConstraint.pack.required: Invalid value: \"zome\": topology domain 'zome' does not "
        "exist in cluster topology [zone block rack host]; did you mean zone?"
    ]


def test_a_misspelt_namespace_gets_a_did_you_mean(tmp_path: Path) -> None:
    src = example(tmp_path, ("  namespace: inference\n", "  namespace: inferense\n"))
    (warning,) = render_source(src).warnings
    assert warning.startswith(f'{PCS_FILE}: metadata.namespace: namespace "inferense" is not created by the source')
    assert warning.endswith("; did you mean inference?")


def test_autoscaling_config_one_level_too_high_says_where_it_belongs(tmp_path: Path) -> None:
    src = example(tmp_path, ("      - name: dworker\n        spec:\n", "      - name: dworker\n        autoScalingConfig:\n"
                             "          maxReplicas: 3\n        spec:\n"))
    assert _messages(src) == [
        "spec.template.cliques[4].autoScalingConfig: field not declared in schema; it belongs under spec: "
        "spec.template.cliques[4].spec.autoScalingConfig"
    ]


def test_a_field_one_level_too_deep_says_where_it_belongs(tmp_path: Path) -> None:
    src = example(tmp_path, ("          roleName: decode-worker\n", "          roleName: decode-worker\n          labels: {a: b}\n"))
    assert _messages(src) == [
        "spec.template.cliques[4].spec.labels: field not declared in schema; it belongs one level up: "
        "spec.template.cliques[4].labels"
    ]


def test_the_kai_queue_error_names_the_label_to_set_and_prints_no_placeholder(tmp_path: Path) -> None:
    src = example(tmp_path, ("    kai.scheduler/queue: inference\n", ""))
    (message,) = _messages(src)
    assert message == (
        "metadata.labels[kai.scheduler/queue]: Required value: no KAI queue is configured on PodCliqueSet "
        "inference/llama-disagg or its PodClique templates; set the label kai.scheduler/queue: <queue> under "
        "metadata.labels, naming the KAI Queue its gangs are submitted to (KAI has no default queue)"
    )


def test_mixed_schedulers_say_which_clique_uses_which(tmp_path: Path) -> None:
    src = example(tmp_path, (ROUTER_POD, ROUTER_POD.replace("podSpec:\n", "podSpec:\n            schedulerName: default-scheduler\n")))
    (message,) = _messages(src)
    assert message.endswith(
        "the schedulerName for all pods have to be the same; router uses default-scheduler; pleader, pworker, "
        "dleader, dworker use kai-scheduler (no schedulerName: the OperatorConfiguration's default)"
    )


def test_the_cli_prints_the_hint_with_its_position(tmp_path: Path) -> None:
    src = example(tmp_path, ("    team: serving\n", "    team: serving\n    version: 1.10\n"))
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 1
    assert f"error: {PCS_FILE}:11:5: metadata.labels.version: Invalid value: 1.1: must be of type string; quote it" in (
        result.output
    )


@pytest.mark.parametrize("value", ['"1.10"', "'true'"])
def test_a_quoted_value_is_accepted(tmp_path: Path, value: str) -> None:
    src = example(tmp_path, ("    team: serving\n", f"    team: serving\n    version: {value}\n"))
    assert render_source(src).warnings == []
