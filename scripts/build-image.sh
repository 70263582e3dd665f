#!/usr/bin/env bash
# Build the grove-gitops image from the Dockerfile with buildah: no daemon, no registry.
#
#   scripts/build-image.sh [TAG]        (default tag: localhost/grove-gitops:dev)
#
# Environment:
#   PYTHON_IMAGE   base image of both stages. Default: a local Debian bookworm image
#                  (python3 3.11) made here with debootstrap from the Debian mirror apt already
#                  uses and kept in local storage, so only the first build pays for it.
#                  Set PYTHON_IMAGE=python:3.11-slim to use Docker Hub's instead.
#   DEBIAN_MIRROR  overrides the mirror read from /etc/apt/sources.list{,.d/*.list,.d/*.sources}.
#
# `scripts/build-image.sh --print-mirror` only prints that mirror (APT_ETC replaces /etc/apt).
#
# PyPI may be reached through a TLS-inspecting proxy: the host's CA bundle and a pip.conf naming
# it are mounted into the build's RUN steps (`buildah bud -v`), so neither lands in the image.
# runc, the ulimits and the host network are explicit (crun and the default ulimits fail on some
# hosts). Run scripts/setup-image.sh first (as root) for buildah, podman, runc and debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."

TAG=${1:-localhost/grove-gitops:dev}
SUITE=bookworm
BASE_PACKAGES=python3,python3-venv,ca-certificates
# Bump when the recipe of the base below changes: the tag names what it was built from.
BASE_RECIPE=3
ULIMITS=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768)

# The first `deb` source apt reads (one-line .list or deb822 .sources, as apt does: only those
# extensions, `Enabled: no` skipped) that serves suite $1 with component main.
debian_mirror() {
  local suite=$1 etc=${APT_ETC:-/etc/apt} files=() f
  [ -f "$etc/sources.list" ] && files+=("$etc/sources.list")
  for f in "$etc"/sources.list.d/*.list "$etc"/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  ((${#files[@]})) || return 0
  awk -v want="$suite" '
    function flush() {
      if (types ~ /(^| )deb( |$)/ && enabled != "no" && (" " suites " ") ~ (" " want " ") && (" " comps " ") ~ / main /) {
        split(uris, u, " "); if (u[1] != "") { print u[1]; found = 1; exit }
      }
      types = ""; uris = ""; suites = ""; comps = ""; enabled = ""
    }
    FNR == 1 { if (deb822) flush(); deb822 = (FILENAME ~ /\.sources$/) }
    deb822 {
      if ($0 ~ /^[ \t]*$/) { flush(); next }
      if ($0 ~ /^#/) next
      key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, ""); val = $0
      if (key == "types") types = val; else if (key == "uris") uris = val
      else if (key == "suites") suites = val; else if (key == "components") comps = val
      else if (key == "enabled") enabled = tolower(val)
      next
    }
    {
      sub(/#.*/, ""); if ($1 != "deb") next
      i = 2
      if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
      uri = $i; s = $(i + 1); c = ""
      for (j = i + 2; j <= NF; j++) c = c " " $j
      if (s == want && (c " ") ~ / main /) { print uri; found = 1; exit }
    }
    END { if (deb822 && !found) flush() }
  ' "${files[@]}"
}

if [ "$TAG" = --print-mirror ]; then
  debian_mirror "$SUITE"
  exit 0
fi

for tool in buildah podman; do
  command -v "$tool" >/dev/null || { echo "build-image.sh: $tool is missing; run scripts/setup-image.sh as root" >&2; exit 1; }
done

# A minimal Debian with python3, imported into local storage once per (mirror, recipe).
local_base() {
  local mirror root tag
  mirror=${DEBIAN_MIRROR:-$(debian_mirror "$SUITE")}
  if [ -z "$mirror" ]; then
    echo "build-image.sh: no Debian '$SUITE' source with component main in /etc/apt; set DEBIAN_MIRROR or PYTHON_IMAGE" >&2
    exit 1
  fi
  tag="localhost/grove-gitops-base:$SUITE-$(printf '%s\n' "$mirror" "$BASE_PACKAGES" "$BASE_RECIPE" | sha256sum | cut -c1-12)"
  if podman image exists "$tag"; then
    echo "$tag"
    return
  fi
  command -v debootstrap >/dev/null || { echo "build-image.sh: debootstrap is missing; run scripts/setup-image.sh as root" >&2; exit 1; }
  echo "build-image.sh: building the base image $tag from $mirror (once)" >&2
  root=$(mktemp -d "${TMPDIR:-/var/tmp}/grove-gitops-base.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$root" "$mirror" >&2
  # Nothing of the host or of the download: debootstrap copies the host's resolv.conf/hostname.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/cache/debconf/*-old \
    "$root"/var/lib/apt/lists/* "$root"/var/log/* \
    "$root"/etc/resolv.conf "$root"/etc/hostname
  # Like Debian's slim images: no documentation, manual pages or translations (about 50 MB),
  # now and in what the Dockerfile installs later; the copyright files stay.
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
    'path-exclude /usr/share/locale/*' 'path-include /usr/share/locale/locale.alias' \
    >"$root/etc/dpkg/dpkg.cfg.d/grove-gitops-slim"
  find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/*
  find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  tar --numeric-owner -C "$root" -c . | podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    --message "debootstrap --variant=minbase --include=$BASE_PACKAGES $SUITE $mirror" \
    - "$tag" >/dev/null
  rm -rf "$root"
  trap - EXIT
  echo "$tag"
}

# The host's CA bundle: what pip on this host is told to trust, else the system bundle.
host_ca_bundle() {
  local candidate
  for candidate in "${PIP_CERT:-}" "${REQUESTS_CA_BUNDLE:-}" "${SSL_CERT_FILE:-}" \
    /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
    if [ -n "$candidate" ] && [ -f "$candidate" ]; then
      echo "$candidate"
      return
    fi
  done
}

base=${PYTHON_IMAGE:-$(local_base)}
mounts=()
ca=$(host_ca_bundle)
if [ -n "$ca" ]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/grove-gitops-build.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  cp "$ca" "$scratch/ca.crt"
  printf '[global]\ncert = /mnt/ca.crt\n' >"$scratch/pip.conf"
  chmod 755 "$scratch"
  chmod 644 "$scratch/ca.crt" "$scratch/pip.conf"
  # On /mnt, a directory every Debian image has: buildah leaves the mount point of a path that
  # did not exist in the layer (an empty /etc/pip.conf), but nothing for one that did.
  mounts=(-v "$scratch:/mnt:ro")
fi

start=$(date +%s)
buildah bud --layers --runtime runc --network host "${ULIMITS[@]}" "${mounts[@]}" \
  --build-arg "PYTHON_IMAGE=$base" -f Dockerfile -t "$TAG" .
echo "build-image.sh: built $TAG on $base in $(($(date +%s) - start)) s" >&2
