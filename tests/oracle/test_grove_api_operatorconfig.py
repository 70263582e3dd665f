"""grove-gitops accepts exactly the OperatorConfigurations Grove's own code accepts.

Grove's ``DecodeOperatorConfig`` + defaults + ``ValidateOperatorConfiguration`` (the oracle)
against our loader and validation (``plan_source``), on the example configurations, a hand list
of valid and invalid files, and a bounded hypothesis fuzz. The documented differences
(opcfg.py) are the only ones allowed; any other fails with both verdicts side by side.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracle import opcfg
from tests.oracle.client import Oracle, grove_api_version
from tests.support import PROJECT

HEAD = {"apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration"}
COUNTS = {"documents": 0, "grove_refused": 0, "errors_compared": 0}


@pytest.fixture(scope="module", autouse=True)
def report_counts(request: pytest.FixtureRequest) -> Iterator[None]:
    """The figures of this module, printed once it has run: how many documents went to both."""
    yield
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(
            f"\nGrove API oracle (operator/api {grove_api_version()}): {COUNTS['documents']} OperatorConfigurations "
            f"compared, {COUNTS['grove_refused']} refused by Grove, {COUNTS['errors_compared']} of Grove's field "
            "errors matched"
        )


def check(oracle: Oracle, doc: dict[str, Any] | str) -> dict[str, Any]:
    text = doc if isinstance(doc, str) else json.dumps({**HEAD, **doc}, ensure_ascii=False)
    grove = oracle.operator_config(text)
    COUNTS["documents"] += 1
    COUNTS["grove_refused"] += int("decodeError" in grove or bool(grove["errors"]))
    COUNTS["errors_compared"] += len(grove.get("errors") or [])
    found = opcfg.difference(text, grove)
    assert found is None, found
    return grove


def errors_of(grove: dict[str, Any]) -> list[str]:
    return [e["error"] for e in grove["errors"]]


EXAMPLES = sorted(
    [
        PROJECT / "examples" / "config" / "operator-configuration.yaml",
        *(PROJECT / "examples-fleet" / "config").glob("*/operator-configuration.yaml"),
    ]
)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(PROJECT)))
def test_the_examples_configurations_are_accepted_by_both(oracle: Oracle, path: Any) -> None:
    grove = check(oracle, path.read_text())
    assert "decodeError" not in grove and grove["errors"] == []


VALID: list[dict[str, Any]] = [
    {},
    {"logLevel": "debug", "logFormat": "text"},
    {"logLevel": "  "},  # blank: Grove checks only a non-blank value
    {"logLevel": None, "scheduler": None, "network": None},  # null leaves a Go value untouched
    {"scheduler": {"profiles": [{"name": "kai-scheduler"}], "defaultProfileName": "kai-scheduler"}},
    {"scheduler": {"profiles": [{"name": "volcano"}, {"name": "lpx-scheduler"}, {"name": "default-scheduler"}]}},
    {"scheduler": {"profiles": None, "defaultProfileName": "volcano"}},  # empty profiles: the default is forced
    {"leaderElection": {"enabled": True}},  # all defaults
    {"leaderElection": {"enabled": True, "leaseDuration": "1m", "renewDeadline": "59.5s", "retryPeriod": "500ms"}},
    {"leaderElection": {"enabled": True, "leaseDuration": "0s", "renewDeadline": "0"}},  # zero = the default
    {"leaderElection": {"enabled": False, "leaseDuration": "-5s", "renewDeadline": "1h"}},  # not checked when off
    {"leaderElection": {"resourceLock": "", "resourceName": ""}, "runtimeClientConnection": {"burst": 0, "qps": 5}},
    {"controllers": {"podClique": {"concurrentSyncs": 1}, "podGang": {"concurrentSyncs": None}, "podCliqueSet": {}}},
    {"server": {"webhooks": {"port": 9443, "certProvisionMode": "whatever"}}, "debugging": {"pprofBindPort": -1}},
    {"topologyAwareScheduling": {"enabled": True}, "network": {"autoMNNVLEnabled": True}},
    {"authorizer": {"enabled": True, "exemptServiceAccountUserNames": ["a"]}},
]

INVALID: list[tuple[dict[str, Any], str]] = [
    ({"logLevel": "warn"}, 'logLevel: Unsupported value: "warn"'),
    ({"logFormat": "yaml"}, 'logFormat: Unsupported value: "yaml"'),
    ({"scheduler": {"profiles": [{"name": "slurm"}]}}, 'scheduler.profiles[0].name: Unsupported value: "slurm"'),
    ({"scheduler": {"profiles": [{"name": " "}]}}, "scheduler.profiles[0].name: Required value"),
    ({"scheduler": {"profiles": [{"name": "volcano"}, {"name": "volcano"}]}}, "Duplicate value"),
    ({"scheduler": {"profiles": [{"name": "volcano"}], "defaultProfileName": "kai-scheduler"}}, "default profile"),
    ({"leaderElection": {"enabled": True, "leaseDuration": "5s"}}, "LeaseDuration must be greater than RenewDeadline"),
    ({"leaderElection": {"enabled": True, "retryPeriod": "-1s"}}, 'leaderElection.retryPeriod: Invalid value: "-1s"'),
    ({"leaderElection": {"enabled": True, "renewDeadline": "-1m30s"}}, "leaderElection.renewDeadline"),
    ({"leaderElection": {"leaseDuration": "15"}}, "decode"),  # no unit: Go cannot parse it
    ({"leaderElection": {"renewDeadline": ""}}, "decode"),
    ({"leaderElection": {"retryPeriod": None}}, "decode"),  # metav1.Duration's decoder runs on null
    ({"runtimeClientConnection": {"burst": -1}}, "clientConnection.burst: Invalid value: -1: must be non-negative"),
    ({"controllers": {"podCliqueSet": {"concurrentSyncs": 0}}}, "controllers.podCliqueSet.concurrentSyncs"),
    ({"controllers": {"podGang": {"concurrentSyncs": -3}}}, "controllers.podGang.concurrentSyncs: Invalid value: -3"),
    ({"logLevel": 5}, "decode"),
    ({"topologyAwareScheduling": {"enabled": "yes"}}, "decode"),
    ({"runtimeClientConnection": {"burst": 1.5}}, "decode"),
]


@pytest.mark.parametrize("doc", VALID, ids=[json.dumps(d)[:60] for d in VALID])
def test_what_grove_accepts_grove_gitops_accepts(oracle: Oracle, doc: dict[str, Any]) -> None:
    grove = check(oracle, doc)
    assert "decodeError" not in grove and grove["errors"] == [], grove


@pytest.mark.parametrize(("doc", "grove_says"), INVALID, ids=[json.dumps(d)[:60] for d, _ in INVALID])
def test_what_grove_refuses_grove_gitops_refuses(oracle: Oracle, doc: dict[str, Any], grove_says: str) -> None:
    grove = check(oracle, doc)
    said = "decode" if "decodeError" in grove else "\n".join(errors_of(grove))
    assert grove_says in said, grove


def test_an_unknown_field_is_the_documented_difference(oracle: Oracle) -> None:
    """Grove drops ``defaultProfile`` (a typo of defaultProfileName) silently; grove-gitops
    refuses it (docs/grove-differences.md): the one refusal of a file Grove accepts."""
    text = json.dumps({**HEAD, "scheduler": {"defaultProfile": "kai-scheduler"}})
    grove = check(oracle, text)
    assert "decodeError" not in grove and grove["errors"] == []
    assert any("scheduler.defaultProfile: field not declared in schema" in e for e in opcfg.ours(text))


def test_an_extra_backend_is_the_documented_difference(oracle: Oracle) -> None:
    """koord-scheduler and scheduler-plugins-scheduler are backends here, not in Grove's enum."""
    text = json.dumps({**HEAD, "scheduler": {"profiles": [{"name": "koord-scheduler"}]}})
    grove = oracle.operator_config(text)
    assert errors_of(grove)[0].startswith('scheduler.profiles[0].name: Unsupported value: "koord-scheduler"')
    assert opcfg.ours(text) == []


_DURATIONS = st.sampled_from(["15s", "10s", "2s", "1m", "0", "0s", "-1s", "1h30m", "500ms", "1.5s", "", "15", "x", " 5s"])
_MAYBE = st.none() | st.just("absent")
#: A value of the wrong type for most fields (Go's decoder refuses it, or reads it as Go does).
_WRONG = st.sampled_from([1, -1, "x", True, [], {}, 1.5, 1.0, "\u00a0"])


def _optional(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field's value, null, or (``"absent"``) no key at all."""
    return value | _MAYBE


def _paths(node: Any, base: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a document (objects and list items)."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    out: list[tuple[Any, ...]] = []
    for key, value in items:
        out += [(*base, key), *_paths(value, (*base, key))]
    return out


def _spoil(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """``doc`` with the value at ``path`` replaced (a copy)."""
    out: Any = json.loads(json.dumps(doc))
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return dict(out)


def _obj(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({k: _optional(v) for k, v in fields.items()}).map(
        lambda d: {k: v for k, v in d.items() if v != "absent"}
    )


_PROFILE_NAMES = st.sampled_from(["default-scheduler", "kai-scheduler", "volcano", "lpx-scheduler", "", " ", "slurm"])
CONFIGS = _obj(
    logLevel=st.sampled_from(["debug", "info", "error", "", " ", "warn", "INFO"]),
    logFormat=st.sampled_from(["json", "text", "", "yaml"]),
    scheduler=_obj(
        profiles=st.lists(_obj(name=_PROFILE_NAMES), max_size=3),
        defaultProfileName=_PROFILE_NAMES,
    ),
    leaderElection=_obj(
        enabled=st.booleans(),
        leaseDuration=_DURATIONS,
        renewDeadline=_DURATIONS,
        retryPeriod=_DURATIONS,
        resourceLock=st.sampled_from(["", "leases"]),
        resourceName=st.sampled_from(["", "grove"]),
    ),
    runtimeClientConnection=_obj(burst=st.integers(-3, 3), qps=st.sampled_from([0, 1.5, 100])),
    controllers=_obj(
        podCliqueSet=_obj(concurrentSyncs=st.integers(-2, 2)),
        podClique=_obj(concurrentSyncs=st.integers(-2, 2)),
        podCliqueScalingGroup=_obj(concurrentSyncs=st.integers(-2, 2)),
        podGang=_obj(concurrentSyncs=st.integers(-2, 2)),
    ),
    topologyAwareScheduling=_obj(enabled=st.booleans()),
    network=_obj(autoMNNVLEnabled=st.booleans()),
    unknownKey=st.just(1),
)


@settings(max_examples=200, deadline=None)
@given(doc=CONFIGS, data=st.data())
def test_fuzz_grove_and_grove_gitops_agree(oracle: Oracle, doc: dict[str, Any], data: st.DataObject) -> None:
    paths = _paths(doc)
    spoil: bool = data.draw(st.booleans(), label="one value of another type")
    if paths and spoil:
        path: tuple[Any, ...] = data.draw(st.sampled_from(paths))
        doc = _spoil(doc, path, data.draw(_WRONG))
    check(oracle, doc)
