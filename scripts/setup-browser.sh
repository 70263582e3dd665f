#!/usr/bin/env bash
# Install what the browser test of the gang diagrams needs (tests/test_diagram_browser.py):
# Debian's chromium and the mermaid npm package in .browser/ (git-ignored).
# Idempotent (does nothing once both are there) and tolerant: when apt-get or npm cannot
# install, it says why and exits 0, and the browser test then skips, naming what is missing.
# Set GROVE_GITOPS_SKIP_BROWSER_SETUP=1 to skip the installation altogether.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 0
MERMAID_VERSION=${MERMAID_VERSION:-11}

if [ "${GROVE_GITOPS_SKIP_BROWSER_SETUP:-}" = 1 ]; then
  echo "setup-browser: skipped (GROVE_GITOPS_SKIP_BROWSER_SETUP=1)"
  exit 0
fi

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup-browser: installing chromium with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq >/dev/null 2>&1 || true; apt-get install -y -qq --no-install-recommends chromium >/tmp/grove-gitops-apt.log 2>&1; }; then
      echo "setup-browser: apt-get install chromium failed (see /tmp/grove-gitops-apt.log); the browser test will skip"
    fi
  else
    echo "setup-browser: chromium is not installed and apt-get cannot install it here (not root or no apt-get); the browser test will skip"
  fi
fi

if [ ! -f .browser/node_modules/mermaid/dist/mermaid.min.js ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "setup-browser: installing mermaid@${MERMAID_VERSION} into .browser/"
    mkdir -p .browser
    [ -f .browser/package.json ] || echo '{"name": "grove-gitops-browser-test", "private": true}' > .browser/package.json
    if ! npm install --prefix .browser --no-audit --no-fund --silent "mermaid@${MERMAID_VERSION}" >/tmp/grove-gitops-npm.log 2>&1; then
      echo "setup-browser: npm install mermaid failed (see /tmp/grove-gitops-npm.log); the browser test will skip"
    fi
  else
    echo "setup-browser: npm is not installed; the browser test will skip"
  fi
fi
exit 0
