"""``python -m grove_gitops`` = ``grove-gitops`` (the PR check calls the CLI this way, so it
runs the very installation it belongs to, whatever ``PATH`` says)."""

from grove_gitops.cli.entry import run

if __name__ == "__main__":
    run()
