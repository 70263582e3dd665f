"""The Grove API oracle as a Python object: one process of ``tests/oracle/main.go`` per test
module, asked one JSON line at a time (scripts/oracle.sh builds and caches the binary).

The answers come from Grove's own code (``github.com/ai-dynamo/grove/operator/api``, the version
pinned in ``tests/oracle/go.mod``), so a test comparing grove-gitops with them compares it with
Grove rather than with our reading of Grove's source.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import IO, Any

from tests.support import PROJECT

GO_MOD = PROJECT / "tests" / "oracle" / "go.mod"


def grove_api_version() -> str:
    """The pinned ``github.com/ai-dynamo/grove/operator/api`` version (from go.mod)."""
    found = re.search(r"github\.com/ai-dynamo/grove/operator/api (v\S+)", GO_MOD.read_text())
    assert found, f"{GO_MOD} does not pin github.com/ai-dynamo/grove/operator/api"
    return found.group(1)


def build() -> Path:
    """The oracle binary: built (or found in the cache) by scripts/oracle.sh; a build that
    cannot happen fails the test with the script's message, never skips it."""
    done = subprocess.run(
        ["bash", str(PROJECT / "scripts" / "oracle.sh"), "build"], capture_output=True, text=True, timeout=1800
    )
    if done.returncode != 0:
        raise AssertionError(f"scripts/oracle.sh build failed:\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


class Oracle:
    """A running oracle: :meth:`ask` sends one request and reads its answer."""

    def __init__(self, binary: Path) -> None:
        self._proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self._count = 0

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        return self._proc.stdin, self._proc.stdout

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        stdin, stdout = self._pipes()
        self._count += 1
        ident = str(self._count)
        stdin.write(json.dumps({"id": ident, "op": op, **fields}) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            err = self._proc.stderr.read() if self._proc.stderr else ""
            raise AssertionError(f"the Grove API oracle exited (code {self._proc.poll()}): {err}")
        answer: dict[str, Any] = json.loads(line)
        assert answer.get("id") == ident, f"oracle answered {answer.get('id')!r} to request {ident}"
        return answer

    def pcs_names(self, pcs: dict[str, Any]) -> dict[str, Any]:
        """Every name Grove's functions generate for ``pcs`` (decoded strictly into Grove's type)."""
        answer = self.ask("pcs", object=pcs)
        assert "error" not in answer, f"Grove's API refused the PodCliqueSet {pcs['metadata']['name']}: {answer['error']}"
        names: dict[str, Any] = answer["names"]
        return names

    def operator_config(self, document: str) -> dict[str, Any]:
        """Grove's DecodeOperatorConfig + defaults + ValidateOperatorConfiguration on ``document``:
        ``{"decodeError": ...}`` or ``{"errors": [...], "defaulted": {...}}``."""
        answer = self.ask("opcfg", document=document)
        assert "error" not in answer, answer["error"]
        if "decodeError" not in answer:
            answer.setdefault("errors", [])  # an empty list is omitted from the JSON
        return answer

    def close(self) -> None:
        stdin, _ = self._pipes()
        stdin.close()
        try:
            self._proc.wait(timeout=30)
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()
