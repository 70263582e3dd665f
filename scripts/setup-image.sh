#!/usr/bin/env bash
# Install the container tools that scripts/build-image.sh and tests/image/ use: buildah (builds
# the Dockerfile without a daemon or a registry), podman (runs the image), runc and debootstrap
# (the local Debian base image). Debian packages, installed as root with apt-get; CI runs this on a
# fresh machine through scripts/test.sh. Idempotent and quick (well under a second) once installed.
#
# It also writes /etc/containers/storage.conf, naming the storage driver podman picks on its first
# command (without the file every `podman run` waits about 20 s on conmon), and nothing else
# global: runc, the ulimits and the network are passed explicitly by scripts/build-image.sh and
# the tests (crun fails on hybrid cgroups, the default ulimits are refused).
set -euo pipefail

packages=(buildah podman runc debootstrap)
missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [ "$status" != "install ok installed" ]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "setup-image.sh: ${missing[*]} not installed; run this script as root (it uses apt-get)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # No recommends: they would bring crun (which fails here) and fuse-overlayfs.
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

conf=/etc/containers/storage.conf
if [ ! -f "$conf" ] && [ "$(id -u)" = 0 ]; then
  driver=$(podman info --format '{{.Store.GraphDriverName}}')
  case "$driver" in
    overlay|vfs|btrfs|zfs|devicemapper) ;;
    *) echo "setup-image.sh: podman reports an unexpected storage driver '$driver'" >&2; exit 1 ;;
  esac
  mkdir -p /etc/containers
  tmp=$(mktemp "$conf.XXXXXX")
  printf '# Written by grove-gitops scripts/setup-image.sh: the driver podman chose on its first run.\n[storage]\ndriver = "%s"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n' \
    "$driver" >"$tmp"
  chmod 644 "$tmp"
  mv "$tmp" "$conf"
fi
