"""Usage errors of the long-running commands are exit 2 with the option named (issue 9 §7)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main


@pytest.mark.parametrize("command", [["gate-lifter"], ["controller", "--repo", "/nonexistent", "--once"]])
@pytest.mark.parametrize("address", ["localhost:notaport", "localhost", "127.0.0.1:70000", ":", "::1:80"])
def test_bad_metrics_address_is_a_usage_error(command: list[str], address: str) -> None:
    result = CliRunner().invoke(main, [*command, "--metrics-address", address])
    assert result.exit_code == 2, result.output
    assert "--metrics-address" in result.output and "is not host:port" in result.output
    assert "Traceback" not in result.output
