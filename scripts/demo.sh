#!/usr/bin/env bash
# Set everything up, render examples/ and show what came out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=.demo/rendered
mkdir -p .demo
.venv/bin/grove-gitops validate examples
.venv/bin/grove-gitops render examples --out "$out"
echo
echo "== $out =="
(cd "$out" && find . -type f | sort | sed 's|^\./||' | head -60)
echo
cat "$out/README.md"
