#!/usr/bin/env bash
# The tool in one minute, on this machine only (no cluster): set everything up, push examples/ into a
# fresh local Git repository, run the controller once and show the rendered branch it produced; then
# open a pull-request-like change (a branch that bumps the vLLM image) and print its rollout `plan`,
# which flags the OUTAGE the bump would cause: the decode scaling group has one replica, so replacing
# its pods leaves no decode pod serving. That warning, before merge, is why the PR check exists.
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
echo "== 1. rendered branch 'rendered' of $demo/remote.git (what Argo CD / Flux apply) =="
git --git-dir "$demo/remote.git" log -1 --format='%h %s%n%n%(trailers)' rendered
git --git-dir "$demo/remote.git" ls-tree -r --name-only rendered | sed 's/^/  /'
echo
git --git-dir "$demo/remote.git" show rendered:README.md
echo "Clone it with: git clone -b rendered $demo/remote.git"

# A pull request as a reviewer meets it: the image tag of every vLLM container bumped.
workload=workloads/workloads/llm-inference/llama-disagg.yaml
gitc -C "$demo/source" switch --quiet -c bump-vllm
sed -i 's#ghcr.io/example/vllm:0.9.1#ghcr.io/example/vllm:0.9.2#' "$demo/source/$workload"
gitc -C "$demo/source" commit --quiet -am "Bump vLLM to 0.9.2"
gitc -C "$demo/source" push --quiet origin bump-vllm

echo
echo "== 2. a pull request: branch 'bump-vllm' bumps the vLLM image in $workload =="
git --git-dir "$demo/remote.git" diff --stat main bump-vllm
echo
echo "== 3. its rollout plan (grove-gitops plan, as the PR check posts it): look for OUTAGE =="
.venv/bin/grove-gitops plan --repo "$demo/remote.git" --source-path workloads main bump-vllm
echo
echo "The fix the plan names keeps decode serving during the bump; 'grove-gitops pr-check' posts this"
echo "plan on the pull request and can fail it on an OUTAGE (docs/diff.md)."
