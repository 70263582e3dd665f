#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install grove-gitops with its development tools.
# Idempotent: re-running only re-installs when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.grove-gitops-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  touch "$stamp"
fi
