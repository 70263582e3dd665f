#!/usr/bin/env bash
# actionlint, the linter of GitHub Actions workflows, built from its Go module at one pinned
# version; tests/release/test_workflows.py runs it over every file in .github/workflows.
#
#   bash scripts/actionlint.sh build          # build (or find) the binary; prints its path
#   bash scripts/actionlint.sh [ARGS...]      # run it (default: every workflow of this repository)
#
# Why a pinned build from source: the checks change between versions (a new rule fails a
# workflow that passed yesterday), and the Go module proxy is the one source of it every machine
# of this project reaches. The binary is cached outside the repository, keyed by the version and
# the Go toolchain: ${GROVE_GITOPS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/grove-gitops}/actionlint/<key>/actionlint.
# The first build downloads the module and compiles it (40 s from empty Go caches on 2 cores; `go`
# must be installed).
#
# shellcheck and pyflakes, which actionlint runs on `run:` scripts when it finds them on PATH, are
# switched off: whether a finding is reported must not depend on what else a machine has installed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=v1.7.12
MODULE=github.com/rhysd/actionlint

die() { echo "actionlint.sh: $*" >&2; exit 1; }

binary_path() {
  command -v go >/dev/null || die "Go is not installed (actionlint is built from the Go module $MODULE@$VERSION; install Go >= 1.24)"
  local key
  key=$(printf '%s\n' "$MODULE@$VERSION" "$(go version)" | sha256sum | cut -c1-16)
  echo "${GROVE_GITOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/grove-gitops}/actionlint/$VERSION-$key/actionlint"
}

cmd_build() {
  local bin dir; bin=$(binary_path); dir=$(dirname "$bin")
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  mkdir -p "$dir"
  # One build at a time per key (parallel test sessions wait for the first).
  exec 9>"$dir/.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    echo "actionlint.sh: building $MODULE@$VERSION into $bin" >&2
    local start=$SECONDS
    rm -rf "$dir/gobin"
    if ! (cd "$dir" && GOBIN="$dir/gobin" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
      go install -trimpath -ldflags='-s -w' "$MODULE/cmd/actionlint@$VERSION" >&2); then
      rm -rf "$dir/gobin"
      die "building actionlint failed (see the Go errors above; the Go module proxy must be reachable on a fresh machine)"
    fi
    mv "$dir/gobin/actionlint" "$bin"
    rm -rf "$dir/gobin"
    echo "actionlint.sh: built in $((SECONDS - start)) s" >&2
  fi
  exec 9>&-
  echo "$bin"
}

if [ "${1:-}" = build ]; then
  cmd_build
  exit 0
fi
bin=$(cmd_build)
if [ $# -eq 0 ]; then
  cd "$ROOT"
  exec "$bin" -no-color -shellcheck= -pyflakes=
fi
exec "$bin" -no-color -shellcheck= -pyflakes= "$@"
