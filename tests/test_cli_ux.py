"""Issue 9 §9: apply order, warnings, ``--output json``, help text, watch log lines."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner, Result

from grove_gitops.cli import main
from grove_gitops.gitops.watch import watch
from grove_gitops.output.layout import build_tree_from_plan
from grove_gitops.problems import WarningSink
from grove_gitops.render import plan_source
from tests.support import ML_NAMESPACE, PROJECT, pcs_yaml, write_source


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


# --- warnings -----------------------------------------------------------------------------------

_TYPO = [
    {
        "name": "router",
        "spec": {"roleName": "router", "replicas": 1, "podSpec": {"containers": [{"name": "r", "image": "nginx:1.27"}]}},
    },
    {
        "name": "worker",
        "spec": {
            "roleName": "worker",
            "replicas": 1,
            "startsAfter": ["ruoter"],
            "podSpec": {"containers": [{"name": "w", "image": "nginx:1.27"}]},
        },
    },
]
_ACK = """\
apiVersion: gitops.grove.io/v1alpha1
kind: RenderConfiguration
metadata: {name: config}
acknowledgedWarnings: ["names no clique"]
"""


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_starts_after_unknown_clique_warns_with_file_and_field(tmp_path: Path) -> None:
    """Grove ignores startsAfter outside Explicit startup, so a typo there passed silently."""
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha", cliques=_TYPO)})
    result = _run("validate", str(src))
    assert result.exit_code == 0, result.output
    assert "warning: a.yaml: spec.template.cliques[1].spec.startsAfter: names no clique" in result.stderr
    assert "ruoter" in result.stderr
    # Under Explicit startup Grove itself rejects the name: an error, not a second warning.
    src2 = write_source(
        tmp_path / "src2", {"a.yaml": pcs_yaml("alpha", cliques=_TYPO, cliqueStartupType="CliqueStartupTypeExplicit")}
    )
    result = _run("validate", str(src2))
    assert result.exit_code == 1 and "unknown clique names" in result.stderr and "warning" not in result.stderr


def test_each_warning_printed_once_and_quiet_silences_acknowledged(tmp_path: Path) -> None:
    files = {"a.yaml": pcs_yaml("alpha", cliques=_TYPO), "b.yaml": pcs_yaml("beta", cliques=_TYPO)}
    src = write_source(tmp_path / "src", files)
    sink = WarningSink()
    lines: list[str] = []
    assert sink.emit(["x: y: dup", "x: y: dup", "other"], lines.append) == ["x: y: dup", "other"]
    assert sink.emit(["x: y: dup"], lines.append) == []  # a later render of the same run (watch)
    assert lines == ["warning: x: y: dup", "warning: other"]
    # Shared-configuration findings are one warning whichever PodCliqueSet file they name.
    config = "scheduler.profiles[default-scheduler].config.gangScheduling: gangScheduling renders ..."
    assert sink.emit([f"a.yaml: {config}", f"b.yaml: {config}"], lines.append) == [f"a.yaml: {config}"]
    assert sink.emit(["a.yaml: spec.x: m", "b.yaml: spec.x: m"], lines.append) == ["a.yaml: spec.x: m", "b.yaml: spec.x: m"]

    loud = _run("validate", str(src))
    assert loud.stderr.count("names no clique") == 2  # one per file: distinct warnings
    (src / "config.yaml").write_text(_ACK)
    # Acknowledged but not quiet: still shown.
    assert _run("validate", str(src)).stderr.count("names no clique") == 2
    for command in (["validate", str(src)], ["render", str(src), "--out", str(tmp_path / "out")]):
        quiet = _run(*command, "-q")
        assert quiet.exit_code == 0 and "names no clique" not in quiet.stderr, quiet.output
    diff = _run("diff", str(src), str(src), "-q", "--output", "text")
    assert diff.exit_code == 0 and "names no clique" not in diff.stderr
    assert "head: a.yaml" in _run("diff", str(src), str(src), "--output", "text").stderr


def test_watch_lines_have_timestamps_and_warnings_once(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha", cliques=_TYPO)})
    out = tmp_path / "out"
    lines: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=watch, args=(src, out, lines.append), kwargs={"debounce_ms": 50, "stop": stop, "max_renders": 2}
    )
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not any("rendered" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # let watchfiles arm itself
        (src / "b.yaml").write_text(pcs_yaml("beta"))
        thread.join(timeout=20)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    rendered = [line for line in lines if "rendered" in line]
    assert len(rendered) == 2, lines
    assert all(re.match(r"^\d\d:\d\d:\d\d ", line) for line in lines), lines
    assert sum("names no clique" in line for line in lines) == 1, lines


# --- --output json ------------------------------------------------------------------------------


def _json(result: Result) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.stdout)  # exactly one document on stdout
    for problem in data["problems"]:
        assert {"file", "field", "message", "severity"} <= set(problem) <= {
            "file",
            "field",
            "message",
            "severity",
            "line",
            "column",
            "code",
            "acknowledged",
        }
        assert ("line" in problem) == ("column" in problem)
        assert ("code" in problem) == (problem["severity"] == "warning")
        assert problem["severity"] in ("error", "warning")
    return data


def _line_of(path: Path, text: str) -> int:
    """The 1-based line of the first line of ``path`` holding ``text``."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def test_json_validate_and_render(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha", cliques=_TYPO), "ns.yaml": ML_NAMESPACE})
    for command in (["validate", str(src)], ["render", str(src), "--out", str(tmp_path / "out")]):
        result = _run(*command, "--output", "json")
        assert result.exit_code == 0, result.output
        data = _json(result)
        assert data["ok"] is True and data["podCliqueSets"] == 1
        assert data["problems"] == [
            {
                "file": "a.yaml",
                "field": "spec.template.cliques[1].spec.startsAfter",
                "message": data["problems"][0]["message"],
                "severity": "warning",
                "code": "starts-after-unknown",
                # a warning is placed in its file as an error is (issue 34.5)
                "line": _line_of(src / "a.yaml", "startsAfter:"),
                "column": data["problems"][0]["column"],
            }
        ]
        assert "ruoter" in data["problems"][0]["message"]
    bad = write_source(tmp_path / "bad", {"a.yaml": pcs_yaml("alpha").replace("replicas: 2", "replicas: -1")})
    for command in (["validate", str(bad)], ["render", str(bad), "--out", str(tmp_path / "out2")]):
        result = _run(*command, "--output", "json")
        assert result.exit_code == 1
        data = _json(result)
        assert data["ok"] is False
        assert {"file": "a.yaml", "severity": "error"}.items() <= data["problems"][0].items()
        assert data["problems"][0]["field"].endswith(".replicas")
        assert (data["problems"][0]["line"], data["problems"][0]["column"]) == (21, 9)
    assert not (tmp_path / "out2").exists()


def test_json_diff(tmp_path: Path) -> None:
    base = write_source(tmp_path / "base", {"a.yaml": pcs_yaml("alpha"), "ns.yaml": ML_NAMESPACE})
    head = write_source(tmp_path / "head", {"a.yaml": pcs_yaml("alpha", cliques=_TYPO), "ns.yaml": ML_NAMESPACE})
    result = _run("diff", str(base), str(head), "--output", "json", "--format", "text")
    assert result.exit_code == 0, result.output
    data = _json(result)
    assert data["ok"] is True and data["identical"] is False and "alpha" in data["diff"][0]
    assert [p["field"] for p in data["problems"]] == ["spec.template.cliques[1].spec.startsAfter"]
    bad = write_source(tmp_path / "bad", {"a.yaml": "kind: [\n"})
    result = _run("diff", str(base), str(bad), "--output", "json")
    assert result.exit_code == 1
    data = _json(result)
    assert data["ok"] is False and data["problems"][0]["file"] == "a.yaml"
    assert data["problems"][0]["message"].startswith("head: ")


# --- help text ----------------------------------------------------------------------------------


def _commands(group: click.Group, prefix: list[str]) -> list[list[str]]:
    # Through click's own listing: the top-level group loads its commands lazily (cli/main.py).
    out = [prefix]
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            out += _commands(command, [*prefix, name])
        else:
            out.append([*prefix, name])
    return out


def test_help_has_no_rst_markup_and_every_option_is_explained() -> None:
    commands = _commands(main, [])
    assert ["watch"] in commands and ["diff"] in commands
    for path in commands:
        result = _run(*path, "--help")
        assert result.exit_code == 0, path
        assert "``" not in result.output, (path, result.output)
        assert ":func:" not in result.output and ":class:" not in result.output
    watch_help = _run("watch", "--help").output
    assert re.search(r"--out PATH\s+[A-Za-z]", watch_help), watch_help


# --- README / .gitignore ------------------------------------------------------------------------


def test_readme_says_how_to_run_the_cli_and_rendered_is_ignored() -> None:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    # The quick start holds exactly its two commands (issue 34 §12); how to run the CLI from the
    # venv opens the Usage section, and the details moved to docs/cli.md and docs/source-tree.md.
    usage = readme.index("## Usage")
    usage_end = readme.index("\n## ", usage + 1)
    assert ".venv/bin/grove-gitops" in readme[usage:usage_end] and "source .venv/bin/activate" in readme[usage:usage_end]
    docs = "".join((PROJECT / "docs" / name).read_text(encoding="utf-8") for name in ("cli.md", "source-tree.md"))
    for documented in ("--output json", "acknowledgedWarnings", "15-secret"):
        assert documented in docs
    lines = (PROJECT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "rendered/" in lines


def test_pr_check_is_listed_and_runs_but_is_imported_only_when_used() -> None:
    """``diff`` in CI starts without the PR check's HTTP client (issue 14's fresh-process cost)."""
    import subprocess
    import sys

    code = "import sys, grove_gitops.cli; print('grove_gitops.cli.prcheck' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
    from click.testing import CliRunner

    from grove_gitops.cli import main

    listing = CliRunner().invoke(main, ["--help"])
    assert listing.exit_code == 0 and "pr-check" in listing.output
    result = CliRunner().invoke(main, ["pr-check", "--help"])
    assert result.exit_code == 0 and "verdict" in result.output
