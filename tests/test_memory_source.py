"""A source tree held in memory (``diff --repo``'s git refs) loads exactly like the same tree
on disk: the same files skipped (hidden, ignored, earlier outputs, Helm charts), the same
problems and warnings naming the same files, the same documents in the same order, and the
same parse-cache entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_gitops.cache import RenderCache
from grove_gitops.load.memory import MemorySource
from grove_gitops.load.source import SourceSet, load_source
from grove_gitops.yamlfiles.yamlio import MAX_FILE_BYTES

_CONFIGMAP = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  k: v\n"
_CONTENTS: list[bytes] = [
    b"a: [1\n",  # broken YAML
    b"\xff\xfe not utf-8\n",
    b"- 1\n- 2\n",  # not a mapping
    b"",
    b"replicas: 3\n",  # a Helm values file when named values.yaml
    b"apiVersion: grove.io/v1alpha1\nkind: PodCliqueSets\nmetadata:\n  name: typo\n",
    b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n",
    b"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: ns-a\n",
    b"apiVersion: v2\nname: chart\n",  # Chart.yaml content
]
_REAL_META = b'{"generator": "grove-gitops", "files": 3}'
_FAKE_METAS = [b'{"generator": "someone-else"}', b"not json", b'["grove-gitops"]', b"\xff"]
_IGNORE_LINES = ["a/", "*.yml", "!b.yaml", "b", "a/x.yaml", "/x.yaml", "**/c", "# comment", "", "d/*", "!d/keep.yaml", "!a/keep.yaml"]
_NAMES = ["a", "b", "c", "d", "a-b", ".hidden", "x.yaml", "y.yml", "keep.yaml", "values.yaml", "Chart.yaml"]
_NAMES += ["render.meta", "notes.txt", "b.yaml", "x.YAML", "_z.yaml"]


@st.composite
def trees(draw: st.DrawFn) -> dict[str, bytes]:
    """Random small trees: nested folders, hidden names, markers, charts, ignore files."""
    paths = draw(st.lists(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4), max_size=14))
    files: dict[str, bytes] = {}
    for i, parts in enumerate(paths):
        path = "/".join(parts)
        # A path cannot be a file and a folder at once (on disk or in git).
        if any(p == path or p.startswith(path + "/") or path.startswith(p + "/") for p in files):
            continue
        name = parts[-1]
        if name == "render.meta":
            files[path] = draw(st.sampled_from([_REAL_META, *_FAKE_METAS]))
        elif name.endswith((".yaml", ".yml", ".YAML")):
            files[path] = draw(st.sampled_from([_CONFIGMAP % i, _CONFIGMAP % i, *_CONTENTS]))
        else:
            files[path] = b"x"
    if draw(st.booleans()):
        lines = draw(st.lists(st.sampled_from(_IGNORE_LINES), max_size=5))
        sep = draw(st.sampled_from(["\n", "\r\n", "\r"]))
        files[".grove-gitops-ignore"] = sep.join(lines).encode()
    return files


def _write(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def _summary(loaded: SourceSet) -> dict[str, Any]:
    """Everything a source loading decides, in order."""
    return {
        "problems": [(p.file, p.field, p.message) for p in loaded.problems],
        "warnings": list(loaded.warnings),
        "podcliquesets": [(s.file, s.obj) for s in loaded.podcliquesets],
        "passthrough": [(s.file, s.obj) for s in loaded.passthrough],
        "clusters": [(s.file, s.obj) for s in loaded.clusters],
        "bindings": [s.file for s in loaded.bindings],
    }


def _same(tmp: Path, files: dict[str, bytes]) -> dict[str, Any]:
    on_disk = _summary(load_source(_write(tmp, files)))
    in_memory = _summary(load_source(MemorySource("src", files)))
    assert in_memory == on_disk
    return on_disk


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=trees())
def test_memory_tree_loads_like_the_same_tree_on_disk(tmp_path_factory: pytest.TempPathFactory, files: dict[str, bytes]) -> None:
    _same(tmp_path_factory.mktemp("src"), files)


def test_fixed_cases_load_alike(tmp_path: Path) -> None:
    """The rules one by one (each would show a difference the random trees may miss)."""
    cm = _CONFIGMAP % 1
    # A grove-gitops output below the root is skipped; a foreign render.meta is not.
    got = _same(tmp_path / "1", {"out/render.meta": _REAL_META, "out/a.yaml": cm, "other/render.meta": b"{}", "other/b.yaml": cm})
    assert [f for f, _ in got["passthrough"]] == ["other/b.yaml"]
    # A Helm chart: at the root a problem, below it a warning; values.yaml is no manifest.
    assert _same(tmp_path / "2", {"Chart.yaml": b"name: x\n", "a.yaml": cm})["problems"][0][0] == "Chart.yaml"
    got = _same(tmp_path / "3", {"chart/Chart.yaml": b"name: x\n", "chart/t.yaml": cm, "values.yaml": b"replicas: 1\n"})
    assert got["warnings"][0].startswith("chart: a Helm chart") and got["warnings"][1].startswith("values.yaml:")
    # Sorted by path parts, as paths sort ("a/b.yaml" before "a-b.yaml"), not as strings.
    got = _same(tmp_path / "4", {"a-b.yaml": _CONFIGMAP % 2, "a/b.yaml": _CONFIGMAP % 3})
    assert [f for f, _ in got["passthrough"]] == ["a/b.yaml", "a-b.yaml"]
    # Oversized and non-UTF-8 files: the same problem, naming the file.
    got = _same(tmp_path / "5", {"big.yaml": b"#" * (MAX_FILE_BYTES + 1), "bad.yaml": b"a: \xff\n"})
    assert [p[2] for p in got["problems"]] == [
        "file is not valid UTF-8 (byte 3)",
        f"file is larger than the {MAX_FILE_BYTES} byte limit",
    ]
    # An ignored folder is not entered: a pattern re-including a file inside it does not count.
    got = _same(tmp_path / "8", {".grove-gitops-ignore": b"a/\n!a/keep.yaml\n", "a/keep.yaml": cm, "b.yaml": cm})
    assert [f for f, _ in got["passthrough"]] == ["b.yaml"]
    # An unreadable ignore file: a folder of that name, or not UTF-8.
    got = _same(tmp_path / "6", {".grove-gitops-ignore/x.yaml": cm, "a.yaml": cm})
    assert got["problems"] == [(".grove-gitops-ignore", "", "cannot read file: Is a directory")]
    got = _same(tmp_path / "7", {".grove-gitops-ignore": b"\xffa/\n", "a/b.yaml": cm})
    assert got["problems"][0][0] == ".grove-gitops-ignore" and got["passthrough"]


def test_memory_and_disk_share_parse_cache_entries(tmp_path: Path) -> None:
    """The same display names and bytes give the same cache keys: a tree parsed from disk is
    not parsed again from memory (and the other way round)."""
    files = {f"ns/a{i}.yaml": _CONFIGMAP % i for i in range(5)} | {"bad.yaml": b"a: [1\n"}
    cache = RenderCache()
    load_source(_write(tmp_path / "src", files), cache)
    keys = set(cache.parsed)
    assert len(keys) == 6
    load_source(MemorySource("src", files), cache)
    assert set(cache.parsed) == keys


def test_memory_source_refuses_paths_leaving_the_tree() -> None:
    for bad in ("../x.yaml", "/etc/x.yaml", "a/../../x.yaml", "a//b.yaml", "./a.yaml", "", "a\0.yaml"):
        with pytest.raises(ValueError, match="not a relative path"):
            MemorySource("src", {bad: b""})


def test_memory_tree_parses_in_worker_processes_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``jobs`` > 1 sends the bytes to the workers; the answer is the same, in order."""
    from grove_gitops.load import files as files_module

    monkeypatch.setattr(files_module, "MIN_PARALLEL_BYTES", 0)
    files = {f"d{i % 3}/c{i}.yaml": _CONFIGMAP % i for i in range(12)} | {"bad.yaml": b"a: [1\n"}
    on_disk = _summary(load_source(_write(tmp_path / "src", files)))
    assert _summary(load_source(MemorySource("src", files), jobs=2)) == on_disk
    assert len(on_disk["passthrough"]) == 12 and on_disk["problems"][0][0] == "bad.yaml"
