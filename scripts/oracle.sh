#!/usr/bin/env bash
# The Grove API oracle of tests/oracle: a small Go program built from Grove's own API module
# (github.com/ai-dynamo/grove/operator/api, pinned in tests/oracle/go.mod) that the tests ask
# for the names Grove generates and for Grove's verdict on an OperatorConfiguration.
#
#   bash scripts/oracle.sh build     # build (or find) the binary; prints its path
#
# The binary is cached outside the repository, keyed by go.mod, go.sum, main.go and the Go
# version: ${GROVE_GITOPS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/grove-gitops}/oracle/<key>/grove-api-oracle.
# A cold build takes about a minute of CPU (measured: 64 s CPU, 208 s wall on a loaded 2-core
# machine with empty Go module and build caches; with the modules already downloaded, 58 s CPU).
#
# Grove publishes its modules without entries in the checksum database (sum.golang.org answers
# 404 for them), so GONOSUMDB exempts github.com/ai-dynamo/grove; the hashes in
# tests/oracle/go.sum still pin every module's content.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOD="$ROOT/tests/oracle"

die() { echo "oracle: $*" >&2; exit 1; }

binary_path() {
  command -v go >/dev/null || die "Go is not installed (the Grove API oracle is built from Grove's Go module; install Go >= 1.26.3)"
  local key
  key=$( (cat "$MOD/go.mod" "$MOD/go.sum" "$MOD/main.go"; go version) | sha256sum | cut -c1-16)
  echo "${GROVE_GITOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/grove-gitops}/oracle/$key/grove-api-oracle"
}

cmd_build() {
  local bin; bin=$(binary_path)
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  mkdir -p "$(dirname "$bin")"
  exec 9>"$(dirname "$bin")/.lock"  # one build per key; parallel sessions wait for the first
  flock 9
  if [ ! -x "$bin" ]; then
    echo "oracle: building the Grove API oracle into $bin" >&2
    local start=$SECONDS
    if ! (cd "$MOD" && GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/ai-dynamo/grove" CGO_ENABLED=0 \
          GOFLAGS="-buildvcs=false -mod=readonly" go build -trimpath -ldflags="-s -w" -o "$bin.tmp" . >&2); then
      rm -f "$bin.tmp"
      die "building the Grove API oracle failed (see the Go errors above; the module proxy must serve github.com/ai-dynamo/grove/operator/api on a fresh machine)"
    fi
    mv "$bin.tmp" "$bin"
    echo "oracle: built in $((SECONDS - start)) s" >&2
  fi
  exec 9>&-
  echo "$bin"
}

case "${1:-}" in
  build) cmd_build ;;
  *) die "usage: $0 build" ;;
esac
