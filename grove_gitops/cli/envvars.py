"""An environment variable for every option: ``GROVE_GITOPS_<COMMAND>_<OPTION>``.

Kubernetes manifests then set a setting by name (``env: [{name: GROVE_GITOPS_AGENT_NAMESPACE,
…}]``) instead of by position in ``args``, and a kustomize patch can change one without
rewriting the list. click's ``auto_envvar_prefix`` would name a variable after the Python
parameter (``--format`` stored as ``fmt`` gives ``…_FMT``); naming it after the long option
keeps the rule a user can guess, and setting it explicitly lets ``--help`` show it.
An option that already reads a variable of its own (``GITHUB_TOKEN``) keeps it.
"""

from __future__ import annotations

import click

#: The prefix of every variable; also the group's ``auto_envvar_prefix``.
ENV_PREFIX = "GROVE_GITOPS"


def envvar_name(path: tuple[str, ...], option: str) -> str:
    """``("pr-check", "run")`` and ``--max-chars`` → ``GROVE_GITOPS_PR_CHECK_RUN_MAX_CHARS``."""
    words = [ENV_PREFIX, *path, option.lstrip("-")]
    return "_".join(w.replace("-", "_").upper() for w in words)


def _long_name(option: click.Option) -> str | None:
    """The first ``--long`` spelling (the positive one of a ``--x/--no-x`` flag)."""
    return next((o for o in option.opts if o.startswith("--")), None)


def name_envvars(command: click.Command, path: tuple[str, ...]) -> None:
    """Give every option of ``command`` (and of its subcommands) its variable, shown in help."""
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        long = _long_name(param)
        if param.envvar is None and long is not None:
            param.envvar = envvar_name(path, long)
        param.show_envvar = param.envvar is not None
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            name_envvars(sub, (*path, name))
