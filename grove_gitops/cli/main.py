"""The ``grove-gitops`` command line.

Exit codes (DESIGN contract): 0 ok, 1 invalid input or a failed operation (a clear message,
never a traceback), 2 usage, 3 a gang that does not fit (``feasibility``); docs/cli.md has the
table, with every environment variable read. Warnings go to stderr, each distinct one once per
run, and never change the exit code; ``--output json`` puts every problem in one JSON document
on stdout instead (see :mod:`grove_gitops.problems`), the same ``--output text|markdown|json``
on every command that prints a report. Help texts are plain text: click prints
docstrings verbatim, so command docstrings hold no RST markup.
"""

from __future__ import annotations

from typing import ClassVar

import click

from grove_gitops import __version__
from grove_gitops.cli.envvars import ENV_PREFIX, name_envvars


class _Group(click.Group):
    """Imports a command's module only when that command runs (or help lists it): ``render``
    starts without the agent, the controller's Git client, ``diff`` or ``pr-check``'s HTTP
    client, ``--version`` without any of them (issue 35.4: start-up is a visible share of a
    mid-size render). The table is the whole command set; ``name_envvars`` names each
    command's environment variables when it is loaded."""

    _LAZY: ClassVar[dict[str, tuple[str, str]]] = {
        "render": ("grove_gitops.cli.render", "render"),
        "validate": ("grove_gitops.cli.validate", "validate"),
        "watch": ("grove_gitops.cli.watch", "watch"),
        "controller": ("grove_gitops.cli.controller", "controller"),
        "agent": ("grove_gitops.cli.agent", "agent"),
        "gate-lifter": ("grove_gitops.cli.agent", "gate_lifter"),
        "feasibility": ("grove_gitops.cli.feasibility", "feasibility"),
        "diff": ("grove_gitops.cli.diff", "diff_command"),
        "plan": ("grove_gitops.cli.plan", "plan_command"),
        "pr-check": ("grove_gitops.cli.prcheck", "pr_check"),
        "migrate": ("grove_gitops.cli.migrate", "migrate"),  # the Kubernetes client, only when it runs
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._LAZY and cmd_name not in self.commands:
            import importlib

            module, attr = self._LAZY[cmd_name]
            command = getattr(importlib.import_module(module), attr)
            name_envvars(command, (cmd_name,))
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": ENV_PREFIX})
@click.version_option(__version__, prog_name="grove-gitops")
def main() -> None:
    """Render Grove PodCliqueSets into GitOps manifests."""



if __name__ == "__main__":
    main()
