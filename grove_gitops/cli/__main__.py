"""``python -m grove_gitops.cli`` = ``grove-gitops`` (as ``python -m grove_gitops``)."""

from grove_gitops.cli.main import main

if __name__ == "__main__":
    main(prog_name="grove-gitops")
