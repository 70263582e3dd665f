"""``python -m grove_gitops.prcheck`` = ``grove-gitops pr-check``."""

from grove_gitops.cli.prcheck import pr_check

if __name__ == "__main__":
    pr_check(prog_name="python -m grove_gitops.prcheck")
