"""scripts/build-image.sh reads the Debian mirror for debootstrap from apt's own sources, as apt
reads them: one-line ``.list`` files and deb822 ``.sources`` files, nothing else in the folder,
no disabled stanza, no ``deb-src``, and only a source that serves the suite with ``main``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support import PROJECT

SCRIPT = PROJECT / "scripts" / "build-image.sh"


def mirror(etc: Path) -> str:
    env = {**os.environ, "APT_ETC": str(etc)}
    env.pop("DEBIAN_MIRROR", None)
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--print-mirror"], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    return proc.stdout.strip()


def write(etc: Path, files: dict[str, str]) -> Path:
    (etc / "sources.list.d").mkdir(parents=True)
    for rel, text in files.items():
        (etc / rel).write_text(text)
    return etc


DEB822 = """Types: deb
# http://snapshot.example/archive/debian-security/20250520T000000Z
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://source-only.example/debian
Suites: bookworm
Components: main

Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

types: deb
URIs: http://mirror.example/debian http://second.example/debian
Suites: bookworm bookworm-updates
Components: contrib main
"""


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"sources.list.d/debian.sources": DEB822}, "http://mirror.example/debian"),
        (
            {
                "sources.list": "# deb http://commented.example/debian bookworm main\n"
                "deb-src http://src.example/debian bookworm main\n"
                "deb [arch=amd64 signed-by=/k.gpg] http://one-line.example/debian bookworm contrib main\n"
            },
            "http://one-line.example/debian",
        ),
        (
            {
                "sources.list.d/other.list.disabled-by-farm": "deb http://ignored.example/debian bookworm main\n",
                "sources.list.d/node.sources": "Types: deb\nURIs: https://node.example/node\nSuites: nodistro\nComponents: main\n",
                "sources.list.d/z.list": "deb http://last.example/debian bookworm main\n",
            },
            "http://last.example/debian",
        ),
        ({"sources.list": "deb http://x.example/debian bookworm contrib\n"}, ""),
        ({}, ""),
    ],
    ids=["deb822", "one-line", "only-list-and-sources", "no-main", "none"],
)
def test_mirror_from_apt_sources(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    assert mirror(write(tmp_path / "apt", files)) == expected
