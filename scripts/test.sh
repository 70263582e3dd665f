#!/usr/bin/env bash
# Set everything up, then run the whole suite: lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-browser.sh  # chromium + mermaid for the diagram browser test; never fails
# The real control plane of tests/controlplane, KWOK and Flux's controllers (built once, cached; fails loudly when it cannot be).
bash scripts/control-plane.sh build >/dev/null
bash scripts/oracle.sh build >/dev/null  # Grove's API module as the oracle of tests/oracle (cached; fails loudly)
bash scripts/actionlint.sh build >/dev/null  # the workflow linter of tests/release (pinned, cached; fails loudly)
bash scripts/setup-image.sh || echo "setup-image.sh failed: tests/image will fail, saying what is missing" >&2
.venv/bin/ruff check grove_gitops backends tests
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
