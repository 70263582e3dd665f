"""Issue 32.3 in the fake GitOps tools: a KAI Topology level change is refused in place (the
nodeLabels are immutable) and applied by re-creating the object, as Argo CD's
``Force=true,Replace=true`` and Flux's ``force: enabled`` do; without those options the sync fails.
(tests/controlplane/test_topology_change.py shows the same refusal on a real server.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tests.day2.applier import Applier, Mode, ref_of
from tests.day2.harness import EXAMPLES, render, start_server
from tests.day2.rest import Rest

OPTIONS = ("argocd.argoproj.io/sync-options", "kustomize.toolkit.fluxcd.io/force")


def _topology_file(out: Path) -> Path:
    found = [p for p in out.rglob("*.yaml") if (yaml.safe_load(p.read_text()) or {}).get("kind") == "Topology"]
    assert len(found) == 1, found
    return found[0]


def _relabel(path: Path, keep_options: bool) -> dict[str, object]:
    obj = yaml.safe_load(path.read_text())
    levels = obj["spec"]["levels"]
    levels[0]["nodeLabel"] = levels[0]["nodeLabel"] + "-v2"
    if not keep_options:
        for key in OPTIONS:
            obj["metadata"]["annotations"].pop(key, None)
    path.write_text(yaml.safe_dump(obj))
    return dict(obj)


@pytest.mark.parametrize("mode", ["argocd", "flux"])
def test_a_topology_level_change_is_applied_by_recreating_it(tmp_path: Path, mode: Mode) -> None:
    out = tmp_path / "out"
    render(EXAMPLES, out)
    server = start_server()
    try:
        applier = Applier(server.api_client(), out, mode=mode)
        applier.sync()
        path = _topology_file(out)
        ref = ref_of(yaml.safe_load(path.read_text()))
        rest = Rest(server.api_client())
        before = rest.get(ref[0], ref[1], None, ref[3])
        assert before is not None
        wanted = _relabel(path, keep_options=True)
        result = applier.sync()
        assert result.replaced == [ref] and ref not in result.updated
        after = rest.get(ref[0], ref[1], None, ref[3])
        assert after is not None and after["metadata"]["uid"] != before["metadata"]["uid"]
        assert after["spec"]["levels"] == wanted["spec"]["levels"]  # type: ignore[index]
        assert server.internal_errors == []
    finally:
        server.stop()


def test_without_the_options_the_sync_fails_with_kais_message(tmp_path: Path) -> None:
    out = tmp_path / "out"
    render(EXAMPLES, out)
    server = start_server()
    try:
        applier = Applier(server.api_client(), out, mode="argocd")
        applier.sync()
        _relabel(_topology_file(out), keep_options=False)
        with pytest.raises(ApiException) as refused:
            applier.sync()
        assert refused.value.status == 422
        assert "nodeLabel structure is immutable; only aliases may be edited" in str(refused.value.body)
    finally:
        server.stop()
