"""The ``grove-gitops`` command line: one module per command, :mod:`grove_gitops.cli.main`
the group that registers them (``pr-check`` only when it runs)."""

from grove_gitops.cli.main import main

__all__ = ["main"]
