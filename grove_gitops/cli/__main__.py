"""``python -m grove_gitops.cli`` = ``grove-gitops`` (as ``python -m grove_gitops``)."""

from grove_gitops.cli.entry import run

if __name__ == "__main__":
    run()
