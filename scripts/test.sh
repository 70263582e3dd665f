#!/usr/bin/env bash
# Set everything up, then run the whole suite: lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The Debian-package setups (apt-get, debootstrap: network and disk bound) run beside the Go builds
# (CPU bound), one after the other since apt-get holds one lock; on a fresh machine that takes their
# minutes off the run. Their output is printed once they are done.
debs_log=$(mktemp)
{
  bash scripts/setup-browser.sh  # chromium + mermaid for the diagram browser test; never fails
  bash scripts/setup-image.sh || echo "setup-image.sh failed: tests/image will fail, saying what is missing" >&2
} >"$debs_log" 2>&1 &
debs=$!
trap 'wait "$debs" 2>/dev/null || true' EXIT  # a failed build below still lets apt-get finish
# The real control plane of tests/controlplane, KWOK and Flux's controllers (built once, cached; fails loudly when it cannot be).
bash scripts/control-plane.sh build >/dev/null
bash scripts/oracle.sh build >/dev/null  # Grove's API module as the oracle of tests/oracle (cached; fails loudly)
bash scripts/actionlint.sh build >/dev/null  # the workflow linter of tests/release (pinned, cached; fails loudly)
wait "$debs" || true
cat "$debs_log"; rm -f "$debs_log"
.venv/bin/ruff check grove_gitops backends tests
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
