"""Issue 9 §1 and §5: nothing of a source tree escapes OUT, and nothing is skipped silently.

Every test drives the real CLI (``validate`` and ``render``) and checks the promise of the
issue: exit 1 with ``file: field: message`` and no traceback, or exit 0 with the expected
output, and never a file written outside OUT.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.cli import main
from grove_gitops.errors import OutputError
from grove_gitops.load import source as source_mod
from grove_gitops.output.layout import Tree, build_tree, object_file_name
from grove_gitops.output.writer import write_tree
from grove_gitops.render import RenderedObject, RenderResult
from tests.support import pcs_yaml, plain, write_source


def _cm(name: str = "cfg", namespace: object = "ml", kind: str = "ConfigMap", api: str = "v1") -> str:
    meta: dict[str, object] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return yaml.safe_dump({"apiVersion": api, "kind": kind, "metadata": meta, "data": {"k": "v"}})


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _run(tmp_path: Path, src: Path) -> tuple[Result, Result, Path]:
    out = tmp_path / "work" / "out"
    out.parent.mkdir(parents=True, exist_ok=True)
    validate = CliRunner().invoke(main, ["validate", str(src)])
    render = CliRunner().invoke(main, ["render", str(src), "--out", str(out)])
    return validate, render, out


def _rejected(tmp_path: Path, files: dict[str, str], *fragments: str) -> None:
    src = write_source(tmp_path / "src", files)
    before = _files(tmp_path)
    validate, render, out = _run(tmp_path, src)
    for result in (validate, render):
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        for fragment in fragments:
            assert fragment in plain(result.output), f"{fragment!r} not in:\n{result.output}"
    # Nothing written anywhere: not OUT, not beside it, not in the source tree.
    assert _files(tmp_path) == before | {"work"}
    assert not out.exists()


# -- §1: input that becomes a path ------------------------------------------------------------
@pytest.mark.parametrize(
    ("namespace", "fragment"),
    [
        ("ABSOLUTE", 'cm.yaml: metadata.namespace: Invalid value: "/'),
        ("../escape", 'cm.yaml: metadata.namespace: Invalid value: "../escape"'),
        ("../../escape", 'cm.yaml: metadata.namespace: Invalid value: "../../escape"'),
        (".", 'cm.yaml: metadata.namespace: Invalid value: ".": a lowercase RFC 1123 label'),
        ("..", 'cm.yaml: metadata.namespace: Invalid value: ".."'),
        (["a", "b"], 'cm.yaml: metadata.namespace: Invalid value: ["a","b"]: must be of type string'),
        (7, "cm.yaml: metadata.namespace: Invalid value: 7: must be of type string"),
    ],
    ids=["absolute", "relative", "relative2", "dot", "dotdot", "list", "int"],
)
def test_namespace_that_is_a_path_is_rejected(tmp_path: Path, namespace: object, fragment: str) -> None:
    # Paths stay inside tmp_path, so a regression writes where _rejected looks, not to /tmp.
    if namespace == "ABSOLUTE":
        namespace = str(tmp_path / "escape")
    _rejected(tmp_path, {"a.yaml": pcs_yaml("alpha"), "cm.yaml": _cm(namespace=namespace)}, fragment)
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        (_cm(kind="Config/../../Map"), 'cm.yaml: kind: Invalid value: "Config/../../Map": must start with a letter'),
        (_cm(kind="../x"), 'cm.yaml: kind: Invalid value: "../x"'),
        (
            _cm(api="../../x/v1"),
            'cm.yaml: apiVersion: Invalid value: "../../x/v1": must be <version> or <group>/<version>',
        ),
        (
            _cm(api="Ex_ample.com/v1"),
            'cm.yaml: apiVersion: Invalid value: "Ex_ample.com/v1": API group: a lowercase RFC 1123',
        ),
        (_cm(name="../../etc/passwd"), 'cm.yaml: metadata.name: Invalid value: "../../etc/passwd"'),
        (_cm(name="a\0b"), 'cm.yaml: metadata.name: Invalid value: "a\\u0000b"'),
        (_cm(name="a" * 254), "cm.yaml: metadata.name: Invalid value:"),
        (
            yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}}),
            "cm.yaml: metadata.name: Invalid value: 5: must be of type string",
        ),
        (
            yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": ["x"]}),
            'cm.yaml: metadata: Invalid value: ["x"]: must be an object',
        ),
        (_cm(name="Bad_Ns", namespace=None, kind="Namespace"), 'cm.yaml: metadata.name: Invalid value: "Bad_Ns"'),
    ],
    ids=[
        "kind-slash",
        "kind-dotdot",
        "group-path",
        "group-invalid",
        "name-path",
        "name-nul",
        "name-too-long",
        "name-int",
        "metadata-list",
        "namespace-name",
    ],
)
def test_kind_group_and_name_that_are_paths_are_rejected(tmp_path: Path, doc: str, fragment: str) -> None:
    _rejected(tmp_path, {"a.yaml": pcs_yaml("alpha"), "cm.yaml": doc}, fragment)


def test_rbac_names_with_colons_still_render(tmp_path: Path) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:grove:reader"},
        "rules": [],
    }
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha"), "r.yaml": yaml.safe_dump(role)})
    validate, render, out = _run(tmp_path, src)
    assert validate.exit_code == 0 and render.exit_code == 0, render.output
    assert (out / "_cluster" / "10-clusterrole.rbac.authorization.k8s.io--system_grove_reader.yaml").is_file() or any(
        "system_grove_reader" in p.name for p in (out / "_cluster").iterdir()
    )


def test_rbac_name_with_slash_is_rejected(tmp_path: Path) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "../x", "namespace": "ml"},
    }
    _rejected(
        tmp_path,
        {"r.yaml": yaml.safe_dump(role)},
        "r.yaml: metadata.name: Invalid value: \"../x\": may not contain '/'",
    )


def test_longest_valid_name_renders_into_a_short_stable_file_name(tmp_path: Path) -> None:
    name = ".".join(["a" * 63] * 3) + "." + "b" * 61  # 253 characters, a valid DNS subdomain
    assert len(name) == 253
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha"), "cm.yaml": _cm(name=name)})
    validate, render, out = _run(tmp_path, src)
    assert validate.exit_code == 0 and render.exit_code == 0, render.output
    files = list((out / "ml" / "_resources").glob("*.yaml"))
    names = [p.name for p in files if p.name != "kustomization.yaml"]
    assert len(names) == 1 and len(names[0].encode()) <= 255
    assert yaml.safe_load((out / "ml" / "_resources" / names[0]).read_text())["metadata"]["name"] == name
    other = object_file_name({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name[:-1] + "c"}}, -10)
    again = object_file_name({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}, -10)
    assert again == names[0] and other != again


def test_object_file_name_is_one_segment_whatever_the_object_says() -> None:
    for obj in (
        {"apiVersion": "../../x/v1", "kind": "../Map", "metadata": {"name": "../../etc/passwd"}},
        {"apiVersion": "v1", "kind": "A\0B", "metadata": {"name": "x\\y"}},
    ):
        name = object_file_name(obj, 0)
        assert "/" not in name and "\\" not in name and "\0" not in name and name not in (".", "..")


@pytest.mark.parametrize("shard", ["../x/_resources", "/abs/_resources", "ml/../..", "ml", "ml/a/b"])
def test_layout_refuses_a_shard_that_is_not_namespace_and_name(shard: str) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}
    with pytest.raises(OutputError, match="refusing to write into"):
        build_tree(RenderResult(RenderConfig(), objects=[RenderedObject(shard, obj)]))


@pytest.mark.parametrize(
    "rel", ["../evil.yaml", "/abs.yaml", "a/../../evil.yaml", "a/./b.yaml", "x\0.yaml", "n" * 256 + ".yaml"]
)
def test_writer_refuses_paths_outside_its_directory(tmp_path: Path, rel: str) -> None:
    out = tmp_path / "out"
    with pytest.raises(OutputError, match="refusing to write"):
        write_tree(Tree(files={"ok.yaml": b"a: 1\n", rel: b"a: 2\n"}), out)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_writer_refuses_a_symlinked_staging_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a path that looks plain is refused when it resolves outside (a symlink planted
    in the staging directory)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    real_mkdtemp = tempfile.mkdtemp

    def mkdtemp(*args: object, **kwargs: object) -> str:
        path = real_mkdtemp(*args, **kwargs)  # type: ignore[call-overload]
        if ".new-" in path:
            os.symlink(outside, Path(path) / "sub")
        return str(path)

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    with pytest.raises(OutputError, match="resolves outside"):
        write_tree(Tree(files={"sub/evil.yaml": b"a: 1\n"}), tmp_path / "out")
    assert list(outside.iterdir()) == []


# -- §1: the source walk -------------------------------------------------------------------
def test_file_symlink_leaving_the_source_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere" / "secret.yaml"
    secret.parent.mkdir()
    secret.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: stolen, namespace: ml}\ndata: {k: djE=}\n")
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha")})
    os.symlink(secret, src / "link.yaml")
    validate, render, out = _run(tmp_path, src)
    for result in (validate, render):
        assert result.exit_code == 1, result.output
        assert "link.yaml: symbolic link points outside the source tree; refusing to follow it" in result.output
    assert not out.exists()


def test_directory_symlink_leaving_the_source_is_refused(tmp_path: Path) -> None:
    elsewhere = write_source(tmp_path / "elsewhere", {"s.yaml": _cm("stolen")})
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha")})
    os.symlink(elsewhere, src / "more")
    validate, render, out = _run(tmp_path, src)
    for result in (validate, render):
        assert result.exit_code == 1
        assert "more: symbolic link points outside the source tree" in result.output
    assert not out.exists()


def test_symlinks_inside_the_source_are_read_once(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"real/a.yaml": pcs_yaml("alpha"), "real/cm.yaml": _cm()})
    os.symlink(src / "real", src / "alias")
    os.symlink(src / "real" / "cm.yaml", src / "cm-link.yaml")
    validate, render, out = _run(tmp_path, src)
    assert validate.exit_code == 0 and render.exit_code == 0, render.output
    assert (out / "ml" / "_resources" / "10-configmap--cfg.yaml").is_file()


def test_broken_symlink_is_an_error(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha")})
    os.symlink(src / "gone.yaml", src / "b.yaml")
    validate, _, _ = _run(tmp_path, src)
    assert validate.exit_code == 1 and "b.yaml: broken symbolic link" in validate.output


def test_unreadable_folder_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Monkeypatched, because the suite may run as root, for whom chmod 000 hides nothing."""
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha"), "team/cm.yaml": _cm()})
    real = os.scandir

    def scandir(path: os.PathLike[str] | str) -> object:
        if Path(path).name == "team":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(source_mod.os, "scandir", scandir)
    validate, render, out = _run(tmp_path, src)
    for result in (validate, render):
        assert result.exit_code == 1
        assert "team: cannot read folder: Permission denied" in result.output
    assert not out.exists()


def test_unreadable_file_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha"), "cm.yaml": _cm()})
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "cm.yaml":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    validate = CliRunner().invoke(main, ["validate", str(src)])
    assert validate.exit_code == 1 and "cm.yaml: cannot read file: Permission denied" in validate.output


def test_stray_render_meta_hides_nothing(tmp_path: Path) -> None:
    src = write_source(
        tmp_path / "src",
        {"render.meta": "{}", "a.yaml": pcs_yaml("alpha"), "team/render.meta": "junk", "team/cm.yaml": _cm()},
    )
    validate, render, out = _run(tmp_path, src)
    assert render.exit_code == 0, render.output
    assert "1 PodCliqueSet(s) valid" in validate.output
    assert (out / "ml" / "_resources" / "10-configmap--cfg.yaml").is_file()


def test_earlier_output_inside_the_source_is_not_read_back(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha")})
    first = CliRunner().invoke(main, ["render", str(src), "--out", str(src / "rendered")])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(main, ["render", str(src), "--out", str(src / "rendered")])
    assert again.exit_code == 0, again.output
    assert not (src / "rendered" / "ml" / "_resources").exists()


# -- §5: files that are not manifests ------------------------------------------------------
def test_kind_list_yields_its_items(tmp_path: Path) -> None:
    items = [yaml.safe_load(_cm("one")), yaml.safe_load(_cm("two")), yaml.safe_load(pcs_yaml("alpha"))]
    doc = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
    src = write_source(tmp_path / "src", {"list.yaml": doc})
    validate, render, out = _run(tmp_path, src)
    assert render.exit_code == 0, render.output
    assert "1 PodCliqueSet(s) valid" in validate.output
    assert {p.name for p in (out / "ml" / "_resources").glob("10-*")} == {
        "10-configmap--one.yaml",
        "10-configmap--two.yaml",
    }


def test_kind_list_item_problems_name_the_item(tmp_path: Path) -> None:
    doc = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                yaml.safe_load(_cm("ok")),
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "/etc"}},
                "text",
            ],
        }
    )
    _rejected(
        tmp_path,
        {"list.yaml": doc},
        'list.yaml: items[1].metadata.namespace: Invalid value: "/etc"',
        "list.yaml: items[2] is not a mapping",
    )


def test_helm_template_gets_a_clear_message(tmp_path: Path) -> None:
    template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.x }}\ndata: {}\n{{- end }}\n"
    _rejected(
        tmp_path,
        {"a.yaml": pcs_yaml("alpha"), "t.yaml": template},
        "t.yaml: looks like a Helm template; render it first",
    )


def test_helm_chart_folder_is_skipped_with_a_warning(tmp_path: Path) -> None:
    src = write_source(
        tmp_path / "src",
        {
            "a.yaml": pcs_yaml("alpha"),
            "chart/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
            "chart/values.yaml": "image: nginx\n",
            "chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\n",
            "values.yaml": "replicas: 3\n",
        },
    )
    validate, render, _ = _run(tmp_path, src)
    for result in (validate, render):
        assert result.exit_code == 0, result.output
        assert "warning: chart: a Helm chart (Chart.yaml), not manifests; skipped" in result.output
        assert "warning: values.yaml: a Helm values file, not a Kubernetes manifest; skipped" in result.output


def test_source_root_that_is_a_chart_is_an_error(tmp_path: Path) -> None:
    _rejected(
        tmp_path,
        {"Chart.yaml": "apiVersion: v2\nname: demo\n", "templates/a.yaml": pcs_yaml("alpha")},
        "Chart.yaml: the source tree is a Helm chart",
    )


def test_grove_gitops_ignore(tmp_path: Path) -> None:
    src = write_source(
        tmp_path / "src",
        {
            ".grove-gitops-ignore": "# drafts and CI files\ndrafts/\n*.ci.yaml\n!keep.ci.yaml\n",
            "a.yaml": pcs_yaml("alpha"),
            "drafts/broken.yaml": "a: [1\n",
            "pipeline.ci.yaml": "steps: [x]\n",
            "keep.ci.yaml": _cm("kept"),
        },
    )
    validate, render, out = _run(tmp_path, src)
    assert validate.exit_code == 0 and render.exit_code == 0, render.output
    assert (out / "ml" / "_resources" / "10-configmap--kept.yaml").is_file()


# -- §5: misspelled kinds -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("api", "kind", "fragment"),
    [
        (
            "grove.io/v1alpha1",
            "PodCliqueSets",
            'kind: Unsupported value: "PodCliqueSets": grove.io has no kind PodCliqueSets; did you mean PodCliqueSet?',
        ),
        ("grove.io/v1alpha1", "podcliqueset", "did you mean PodCliqueSet?"),
        (
            "gitops.grove.io/v1alpha1",
            "RenderConfig",
            "gitops.grove.io has no kind RenderConfig; did you mean RenderConfiguration?",
        ),
        ("scheduler.grove.io/v1alpha1", "PodGangs", "did you mean PodGang?"),
        ("operator.config.grove.io/v1alpha1", "OperatorConfig", "did you mean OperatorConfiguration?"),
        (
            "grove.io/v1alpha1",
            "RenderConfiguration",
            'apiVersion: Invalid value: "grove.io/v1alpha1": kind RenderConfiguration belongs to API group gitops.grove.io',
        ),
        ("grove.io/v1alpha1", "Zzz", "grove.io has no kind Zzz; its kinds are PodCliqueSet"),
    ],
)
def test_misspelled_grove_kinds_are_errors(tmp_path: Path, api: str, kind: str, fragment: str) -> None:
    doc = (
        pcs_yaml("alpha")
        .replace("apiVersion: grove.io/v1alpha1", f"apiVersion: {api}")
        .replace("kind: PodCliqueSet", f"kind: {kind}")
    )
    _rejected(tmp_path, {"w.yaml": doc}, f"w.yaml: {fragment}" if fragment.startswith(("kind", "api")) else fragment)


def test_known_grove_kinds_still_pass_through(tmp_path: Path) -> None:
    gang = {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "g", "namespace": "ml"},
        "spec": {"podgroups": []},
    }
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha"), "g.yaml": yaml.safe_dump(gang)})
    validate, _, _ = _run(tmp_path, src)
    assert validate.exit_code == 0, validate.output


def test_a_file_name_that_is_not_utf8_is_an_error_on_disk_and_at_a_git_ref(tmp_path: Path) -> None:
    """Linux and git allow any bytes in a name; the name goes into messages, cache keys and
    annotations. It was a UnicodeEncodeError traceback once a cache keyed the file."""
    import subprocess

    src = write_source(tmp_path / "repo" / "src", {"a.yaml": pcs_yaml("a")})
    (src / os.fsdecode(b"bad\xff.yaml")).write_text(_cm())
    message = "bad\\xff.yaml: file name is not valid UTF-8; rename the file"
    for args in (
        ["validate", str(src)],
        ["render", str(src), "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
    repo = tmp_path / "repo"
    for git in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *git], cwd=repo, check=True)
    args = ["diff", "--repo", str(repo), "HEAD", "HEAD", "--source-path", "src", "--cache-dir", str(tmp_path / "c")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and f"head: {message}" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("a\\..\\x.yaml", "backslash"),
        ("git~1", "'.git'"),
        ("GIT~1", "'.git'"),
    ],
)
def test_names_a_git_tree_reader_refuses_are_refused_on_disk_too(tmp_path: Path, name: str, fragment: str) -> None:
    """Issue 21 §3: a checked-out tree and the same tree read from git agree. The disk walk
    applies load/treepaths.py's rule to every name it would read, so a name that ``diff --repo``
    or the controller refuses is refused by ``validate``/``render`` of its checkout as well."""
    files = {"ok.yaml": _cm(), (f"{name}/x.yaml" if "~" in name else name): _cm("other")}
    _rejected(tmp_path, files, "refused: the path has", fragment)


@pytest.mark.timeout(120)
def test_an_ignore_file_pattern_cannot_backtrack(tmp_path: Path) -> None:
    """Issue 21: ``.grove-gitops-ignore`` comes from the pull request. pathspec's default
    backend backtracked for minutes on ``*a*a*a*a*a*ab`` against one long name; the patterns
    are matched by RE2, so the walk ends at once and still ignores what the patterns say."""
    long_name = "a" * 200 + ".yaml"
    src = write_source(
        tmp_path / "src",
        {".grove-gitops-ignore": "*a*a*a*a*a*ab\n*a*a*a*a*a*a.yaml\n", long_name: "::: not yaml", "cm.yaml": _cm()},
    )
    scan = source_mod.scan_source(src)
    assert [p.name for p in scan.files] == ["cm.yaml"]
    assert source_mod._ignore_spec(src, scan) is not None
    assert source_mod._ignore_spec(src, scan)._backend_name == "re2"  # type: ignore[union-attr]


def test_an_oversize_ignore_file_is_refused_unread(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"cm.yaml": _cm()})
    with open(src / ".grove-gitops-ignore", "wb") as f:
        f.truncate(source_mod.MAX_IGNORE_BYTES + 1)
    validate = CliRunner().invoke(main, ["validate", str(src)])
    assert validate.exit_code == 1, validate.output
    assert ".grove-gitops-ignore: file too large" in validate.output
    assert "Traceback" not in validate.output
