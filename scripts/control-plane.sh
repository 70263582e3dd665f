#!/usr/bin/env bash
# A real Kubernetes control plane on loopback, for the tests (tests/controlplane/) and for trying the
# agent locally: etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from Kubernetes'
# own Go modules at the release pinned in tests/controlplane/go.mod, plus simulated nodes: KWOK
# (sigs.k8s.io/kwok, pinned in tests/controlplane/kwok/go.mod, stages in kwok/stages.yaml) plays
# the kubelets of the nodes tests/controlplane/nodesim.py registers. Why real: the project's fake
# API server accepted Events and owner references a real server refuses (issue 32).
#
#   bash scripts/control-plane.sh build            # build (or find) the binaries (kube, kwok, flux); prints kube's path
#   bash scripts/control-plane.sh flux             # build (or find) Flux's controllers; prints their directory
#   bash scripts/control-plane.sh flux-crds        # Flux's CRD directories (config/crd/bases) in GOMODCACHE
#   bash scripts/control-plane.sh up DIR [--nodes N]   # start; DIR/kubeconfig is the admin's; N nodes
#                                                  # of examples/cluster/node-inventory.yaml (default all 22)
#   bash scripts/control-plane.sh down DIR         # stop everything started in DIR
#
# The binary is cached outside the repository, keyed by go.mod, go.sum, main.go, the build flags and
# the Go version: ${GROVE_GITOPS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/grove-gitops}/controlplane/<key>/kube.
# The first build downloads the modules and compiles Kubernetes (15-30 min on 2 cores). KWOK is a
# module of its own (its k8s.io/* v0.36 would lift the pinned build's dependencies), cached the same
# way under .../controlplane/kwok-<key>/kwok (a few minutes more the first time). Flux's
# source-controller and kustomize-controller (tests/controlplane/flux/go.mod, the GitOps engine of
# tests/controlplane/test_flux.py) likewise under .../controlplane/flux-<key>/ (about 8 min of CPU
# and 390 MB of modules the first time); their CRDs are read from the same release's module files in
# GOMODCACHE at test time, never copied into the repository.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOD="$ROOT/tests/controlplane"
KWOK_MOD="$MOD/kwok"
FLUX_MOD="$MOD/flux"
FLUX_MODULES="github.com/fluxcd/source-controller github.com/fluxcd/kustomize-controller"
PY="${PYTHON_FOR_NODESIM:-$ROOT/.venv/bin/python}"

die() { echo "control-plane: $*" >&2; exit 1; }

# The Kubernetes version the binary reports (/version): the pinned k8s.io/kubernetes.
kube_version() { sed -n 's/^[[:space:]]*k8s\.io\/kubernetes v\([0-9.]*\)$/\1/p' "$MOD/go.mod" | head -n1; }

build_flags() {
  local v; v=$(kube_version)
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  echo "-s -w -X k8s.io/component-base/version.gitVersion=v$v -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}

binary_path() {
  command -v go >/dev/null || die "Go is not installed (the test control plane is built from Kubernetes' Go modules; install Go >= 1.26)"
  local key
  key=$( (cat "$MOD/go.mod" "$MOD/go.sum" "$MOD/main.go"; build_flags; go version) | sha256sum | cut -c1-16)
  echo "${GROVE_GITOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/grove-gitops}/controlplane/$key/kube"
}

kwok_path() {
  local key
  key=$( (cat "$KWOK_MOD/go.mod" "$KWOK_MOD/go.sum"; go version) | sha256sum | cut -c1-16)
  echo "${GROVE_GITOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/grove-gitops}/controlplane/kwok-$key/kwok"
}

# build_kwok: the kwok binary (the Go tool of tests/controlplane/kwok/go.mod); prints its path.
build_kwok() {
  local bin; bin=$(kwok_path)
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  mkdir -p "$(dirname "$bin")"
  exec 8>"$(dirname "$bin")/.lock"
  flock 8
  if [ ! -x "$bin" ]; then
    echo "control-plane: building KWOK into $bin (first time: a few minutes)" >&2
    local start=$SECONDS
    if ! (cd "$KWOK_MOD" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags="-s -w" -o "$bin.tmp" sigs.k8s.io/kwok/cmd/kwok >&2); then
      rm -f "$bin.tmp"
      die "building KWOK failed (see the Go errors above; the module proxy must be reachable on a fresh machine)"
    fi
    mv "$bin.tmp" "$bin"
    echo "control-plane: KWOK built in $((SECONDS - start)) s" >&2
  fi
  exec 8>&-
  echo "$bin"
}

flux_dir() {
  local key
  key=$( (cat "$FLUX_MOD/go.mod" "$FLUX_MOD/go.sum"; go version) | sha256sum | cut -c1-16)
  echo "${GROVE_GITOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/grove-gitops}/controlplane/flux-$key"
}

# build_flux: source-controller and kustomize-controller (the Go tools of tests/controlplane/flux/go.mod)
# into one cached directory; prints it.
build_flux() {
  command -v go >/dev/null || die "Go is not installed (Flux's controllers are built from their Go modules; install Go >= 1.26)"
  local dir; dir=$(flux_dir)
  if [ -x "$dir/source-controller" ] && [ -x "$dir/kustomize-controller" ]; then echo "$dir"; return; fi
  mkdir -p "$dir"
  exec 7>"$dir/.lock"
  flock 7
  if [ ! -x "$dir/source-controller" ] || [ ! -x "$dir/kustomize-controller" ]; then
    echo "control-plane: building Flux's controllers into $dir (first time: several minutes)" >&2
    local start=$SECONDS
    rm -rf "$dir/tmp"; mkdir -p "$dir/tmp"
    # shellcheck disable=SC2086  # two package paths
    if ! (cd "$FLUX_MOD" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags="-s -w" -o "$dir/tmp/" $FLUX_MODULES >&2); then
      rm -rf "$dir/tmp"
      die "building Flux's controllers failed (see the Go errors above; the module proxy must be reachable on a fresh machine)"
    fi
    mv "$dir/tmp/source-controller" "$dir/tmp/kustomize-controller" "$dir/" && rmdir "$dir/tmp"
    echo "control-plane: Flux built in $((SECONDS - start)) s" >&2
  fi
  exec 7>&-
  echo "$dir"
}

# flux_crds: the config/crd/bases directory of each Flux module at the pinned release (GOMODCACHE).
flux_crds() {
  local dirs d
  # shellcheck disable=SC2086
  dirs=$(cd "$FLUX_MOD" && go mod download $FLUX_MODULES && go list -m -f '{{.Dir}}' $FLUX_MODULES) \
    || die "Flux's modules are not in GOMODCACHE and could not be downloaded"
  for d in $dirs; do
    [ -d "$d/config/crd/bases" ] || die "$d has no config/crd/bases"
    echo "$d/config/crd/bases"
  done
}

# cmd_build: every binary the tier needs (CI's scripts/test.sh); `up` needs only kube and kwok.
cmd_build() {
  build_flux >/dev/null
  build_plane
}

build_plane() {
  build_kwok >/dev/null
  local bin; bin=$(binary_path)
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  mkdir -p "$(dirname "$bin")"
  # One build at a time per key (parallel test sessions wait for the first).
  exec 9>"$(dirname "$bin")/.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    echo "control-plane: building Kubernetes $(kube_version) into $bin (first time: 15-30 min)" >&2
    local start=$SECONDS
    if ! (cd "$MOD" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags="$(build_flags)" -o "$bin.tmp" . >&2); then
      rm -f "$bin.tmp"
      die "building the control plane failed (see the Go errors above; the module proxy must be reachable on a fresh machine)"
    fi
    mv "$bin.tmp" "$bin"
    echo "control-plane: built in $((SECONDS - start)) s" >&2
  fi
  exec 9>&-
  echo "$bin"
}

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# start NAME CMD...: run in its own session (so `down` can stop its whole group), log and pid in DIR.
start() {
  local name=$1; shift
  setsid "$@" >"$DIR/logs/$name.log" 2>&1 < /dev/null &
  echo $! >"$DIR/pids/$name.pid"
}

wait_for() {  # wait_for WHAT SECONDS CMD...
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "control-plane: $what not ready after ${secs}s; last log lines:" >&2
      tail -n 30 "$DIR"/logs/*.log >&2 || true
      cmd_down >/dev/null 2>&1 || true
      die "$what did not start (logs in $DIR/logs)"
    fi
    sleep 0.5
  done
}

cert() {  # cert NAME CN O [SAN]: a key and a certificate signed by the CA
  local name=$1 cn=$2 o=$3 san=${4:-}
  openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "/CN=$cn${o:+/O=$o}" -out "$PKI/$name.csr" 2>/dev/null
  local ext="$PKI/$name.ext"
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then echo "extendedKeyUsage=serverAuth"; echo "subjectAltName=$san"
    else echo "extendedKeyUsage=clientAuth"; fi; } >"$ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 30 -sha256 -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
}

b64() { base64 -w0 <"$1"; }

kubeconfig() {  # kubeconfig FILE CERTNAME USER
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: grove-gitops-test
    cluster:
      server: https://127.0.0.1:$API_PORT
      certificate-authority-data: $(b64 "$PKI/ca.crt")
users:
  - name: $3
    user:
      client-certificate-data: $(b64 "$PKI/$2.crt")
      client-key-data: $(b64 "$PKI/$2.key")
contexts:
  - name: grove-gitops-test
    context: {cluster: grove-gitops-test, user: $3}
current-context: grove-gitops-test
EOF
}

cmd_up() {
  local nodes=""
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes) [ $# -ge 2 ] || die "--nodes needs a number"; nodes=$2; shift 2 ;;
      *) die "unknown option $1 (usage: up DIR [--nodes N])" ;;
    esac
  done
  [ -z "$nodes" ] || { [[ $nodes =~ ^[0-9]{1,3}$ ]] && [ "$nodes" -ge 1 ] && [ "$nodes" -le 200 ]; } \
    || die "--nodes must be 1..200, got '$nodes'"
  cd "$ROOT"  # the node registrar is the module tests.controlplane.nodesim
  [ -x "$PY" ] || die "$PY missing: run bash scripts/setup.sh first (the node registrar is Python)"
  command -v openssl >/dev/null || die "openssl is needed for the certificates"
  local bin kwok; bin=$(build_plane); kwok=$(build_kwok)
  [ ! -e "$DIR/pids" ] || [ -z "$(ls -A "$DIR/pids")" ] || die "$DIR already has a running control plane (down it first)"
  PKI="$DIR/pki"; mkdir -p "$PKI" "$DIR/logs" "$DIR/pids" && mkdir -p -m 700 "$DIR/etcd"
  local t0=$SECONDS
  API_PORT=$(free_port)
  local etcd_port etcd_peer kcm_port sched_port
  etcd_port=$(free_port); etcd_peer=$(free_port); kcm_port=$(free_port); sched_port=$(free_port)

  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 30 \
    -subj "/CN=grove-gitops-test-ca" 2>/dev/null
  cert apiserver kube-apiserver "" "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin admin system:masters
  cert controller-manager system:kube-controller-manager ""
  cert scheduler system:kube-scheduler ""
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  kubeconfig "$DIR/kubeconfig" admin admin
  kubeconfig "$DIR/controller-manager.kubeconfig" controller-manager system:kube-controller-manager
  kubeconfig "$DIR/scheduler.kubeconfig" scheduler system:kube-scheduler

  start etcd "$bin" etcd --name default --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "default=http://127.0.0.1:$etcd_peer" --unsafe-no-fsync --log-level warn
  wait_for etcd 60 curl -sf "http://127.0.0.1:$etcd_port/health"

  # The Workload API (scheduling.k8s.io/v1alpha1 on 1.35) and the scheduler's gang plugin are alpha;
  # MutatingAdmissionPolicy (beta, off by default) marks the pods of handed-off namespaces for KWOK.
  local gates="GenericWorkload=true,GangScheduling=true,MutatingAdmissionPolicy=true"
  start kube-apiserver "$bin" kube-apiserver \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins OwnerReferencesPermissionEnforcement,PodSecurity \
    --feature-gates "$gates" --runtime-config scheduling.k8s.io/v1alpha1=true,admissionregistration.k8s.io/v1beta1=true \
    --allow-privileged=true --profiling=false
  wait_for kube-apiserver 120 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://127.0.0.1:$API_PORT/readyz"

  start kube-controller-manager "$bin" kube-controller-manager \
    --kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$kcm_port" --leader-elect=false \
    --controllers garbagecollector,resourcequota,namespace,serviceaccount,serviceaccount-token,horizontalpodautoscaling,validatingadmissionpolicy-status-controller \
    --use-service-account-credentials=true \
    --horizontal-pod-autoscaler-sync-period 2s \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --feature-gates "$gates" --profiling=false
  start kube-scheduler "$bin" kube-scheduler \
    --kubeconfig "$DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig "$DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig "$DIR/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$sched_port" --leader-elect=false \
    --feature-gates "$gates" --profiling=false
  # KWOK plays the kubelets of the nodes annotated for it; nodesim registers them (and the hand-off
  # policy) once and exits.
  start kwok "$kwok" --kubeconfig "$DIR/kubeconfig" --config "$KWOK_MOD/stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds 40 --cidr 10.244.0.0/16 --node-ip 127.0.0.1 -v WARN
  "$PY" -m tests.controlplane.nodesim --kubeconfig "$DIR/kubeconfig" ${nodes:+--nodes "$nodes"} \
    >"$DIR/logs/nodesim.log" 2>&1 || { tail -n 30 "$DIR/logs/nodesim.log" >&2; cmd_down; die "registering the nodes failed"; }
  wait_for "${nodes:-all} nodes Ready" 120 "$PY" -m tests.controlplane.nodesim --kubeconfig "$DIR/kubeconfig" \
    ${nodes:+--nodes "$nodes"} --check-ready
  # The components answer on their own /healthz once started.
  wait_for kube-controller-manager 60 curl -sfk "https://127.0.0.1:$kcm_port/healthz"
  wait_for kube-scheduler 60 curl -sfk "https://127.0.0.1:$sched_port/healthz"
  echo "control-plane: up in $((SECONDS - t0)) s: KUBECONFIG=$DIR/kubeconfig (Kubernetes $(kube_version), ${nodes:-all inventory} nodes)" >&2
}

cmd_down() {
  [ -d "$DIR/pids" ] || return 0
  local f pid
  # Reverse start order: nodes and scheduler first, etcd last.
  for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    f="$DIR/pids/$name.pid"
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

case ${1:-} in
  build) cmd_build ;;
  flux) build_flux ;;
  flux-crds) flux_crds ;;
  up)   [ $# -ge 2 ] || die "usage: up DIR [--nodes N]"; DIR=$(mkdir -p "$2" && cd "$2" && pwd); shift 2; cmd_up "$@" ;;
  down) [ $# -ge 2 ] || die "usage: down DIR"; DIR=$(cd "$2" && pwd); cmd_down ;;
  *) die "usage: $0 {build | flux | flux-crds | up DIR [--nodes N] | down DIR}" ;;
esac
