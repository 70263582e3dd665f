#!/usr/bin/env bash
# Set everything up, push examples/ into a fresh local Git repository, run the controller once,
# and show the rendered branch it produced.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
demo="$PWD/.demo"
rm -rf "$demo"
mkdir -p "$demo"
gitc() { git -c user.name=demo -c user.email=demo@example.com -c init.defaultBranch=main "$@"; }

gitc init --quiet --bare "$demo/remote.git"
gitc clone --quiet "$demo/remote.git" "$demo/source" 2>/dev/null
cp -r examples "$demo/source/workloads"
gitc -C "$demo/source" add -A
gitc -C "$demo/source" commit --quiet -m "Add example Grove workloads"
gitc -C "$demo/source" push --quiet origin HEAD:main

.venv/bin/grove-gitops controller --repo "$demo/remote.git" --source-branch main --source-path workloads \
  --output-branch rendered --workdir "$demo/controller-clone" --once

echo
echo "== rendered branch 'rendered' of $demo/remote.git =="
git --git-dir "$demo/remote.git" log -1 --format='%h %s%n%n%(trailers)' rendered
git --git-dir "$demo/remote.git" ls-tree -r --name-only rendered | sed 's/^/  /'
echo
git --git-dir "$demo/remote.git" show rendered:README.md
echo "Clone it with: git clone -b rendered $demo/remote.git"
