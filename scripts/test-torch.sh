#!/usr/bin/env bash
# Runs the README's test command (scripts/test.sh) against another Debian
# release's torch, inside a debootstrap chroot that is built once and cached.
#   scripts/test-torch.sh 2.6|2.14|all [ctest arguments...]
#   scripts/test-torch.sh --prepare 2.6|2.14|all   build/refresh the chroots only
# Torch versions map to Debian releases: 2.6 = trixie, 2.14 = sid (1.13 is the
# host, bookworm: scripts/test.sh). ACC_CHROOT_DIR (default /var/cache/acc)
# holds the chroots. ACC_BUILD_TARGETS, ACC_CMAKE_ARGS, ACC_DEBUG_INFO and ACC_UNITY_BUILD pass on to
# scripts/setup.sh inside. Needs root (debootstrap, mount, chroot).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

prepare_only=0
if [[ ${1:-} == --prepare ]]; then prepare_only=1; shift; fi
which=${1:-}
[[ $# -gt 0 ]] && shift
case "$which" in
  2.6) suites=(trixie) ;;
  2.14) suites=(sid) ;;
  all) suites=(trixie sid) ;;
  *) echo "test-torch: first argument must be 2.6, 2.14 or all (got '${which}')" >&2; exit 2 ;;
esac
if [[ $(id -u) -ne 0 ]]; then
  echo "test-torch: needs root (debootstrap, mount, chroot)" >&2
  exit 2
fi

root_dir=${ACC_CHROOT_DIR:-/var/cache/acc}
mirror=${ACC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What scripts/setup.sh would install, so that the cached chroot needs no
# network on later runs. Keep in step with setup.sh's list.
packages=$(scripts/setup.sh --print-packages | tr '\n' ' ')

apt_opts=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -q -y)

mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    m=${mounted[i]}
    umount -l "$m" 2>/dev/null || true
  done
}
trap cleanup EXIT

mount_into() { # chroot
  local dir=$1
  mkdir -p "$dir/proc" "$dir/dev" "$dir/dev/shm" "$dir/src"
  mountpoint -q "$dir/proc" || { mount -t proc proc "$dir/proc"; mounted+=("$dir/proc"); }
  mountpoint -q "$dir/dev" || { mount --bind /dev "$dir/dev"; mounted+=("$dir/dev"); }
  mountpoint -q "$dir/dev/shm" || { mount -t tmpfs -o size=4g tmpfs "$dir/dev/shm"; mounted+=("$dir/dev/shm"); }
  # Always this source tree, even if an earlier run left another mounted.
  mountpoint -q "$dir/src" && umount -l "$dir/src"
  mount --bind "$src" "$dir/src"
  mounted+=("$dir/src")
}

unmount_from() {
  local dir=$1 m
  for m in "$dir/src" "$dir/dev/shm" "$dir/dev" "$dir/proc"; do
    mountpoint -q "$m" && umount -l "$m"
  done
  mounted=()
}

# One process makes a chroot at a time: .ci/run makes them in the
# background while the host suite runs, and a suite that comes to its chroot
# first waits here for it.
prepare() { # suite
  local lock
  mkdir -p "$root_dir"
  exec {lock}>"$root_dir/$1.lock"
  flock "$lock"
  make_chroot "$1"
  exec {lock}>&-
}

make_chroot() { # suite -> chroot dir
  local suite=$1 dir=$root_dir/$suite
  local stamp_want
  stamp_want="$suite $packages"
  if [[ -f $dir/.acc-stamp && $(cat "$dir/.acc-stamp") == "$stamp_want" ]]; then
    echo "test-torch: using cached chroot $dir" >&2
    return
  fi
  if ! command -v debootstrap >/dev/null; then
    echo "test-torch: installing debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
  fi
  if [[ ! -x $dir/usr/bin/apt-get ]]; then
    echo "test-torch: debootstrap $suite into $dir (a few minutes)" >&2
    rm -rf "$dir"
    mkdir -p "$root_dir"
    debootstrap --variant=minbase "$suite" "$dir.partial" "$mirror" >"$root_dir/$suite.debootstrap.log" 2>&1 || {
      tail -20 "$root_dir/$suite.debootstrap.log" >&2
      echo "test-torch: debootstrap of $suite failed (log: $root_dir/$suite.debootstrap.log)" >&2
      exit 1
    }
    mv "$dir.partial" "$dir"
  fi
  echo "test-torch: installing packages into the $suite chroot" >&2
  cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
  mount_into "$dir"
  # shellcheck disable=SC2086
  chroot "$dir" env DEBIAN_FRONTEND=noninteractive bash -c \
    "apt-get ${apt_opts[*]} update && apt-get ${apt_opts[*]} install $packages" \
    >"$root_dir/$suite.apt.log" 2>&1 || {
      tail -30 "$root_dir/$suite.apt.log" >&2
      echo "test-torch: package install in $suite failed (log: $root_dir/$suite.apt.log)" >&2
      exit 1
    }
  chroot "$dir" apt-get clean
  unmount_from "$dir"
  echo "$stamp_want" >"$dir/.acc-stamp"
}

status=0
for suite in "${suites[@]}"; do
  prepare "$suite"
  ((prepare_only)) && continue
  dir=$root_dir/$suite
  mount_into "$dir"
  version=$(chroot "$dir" python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo unknown)
  echo "test-torch: === $suite (torch $version): scripts/test.sh $* ===" >&2
  # The build lives inside the chroot, never in the shared source tree.
  if chroot "$dir" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 CI="${CI:-}" ACC_BUILD_DIR=/root/build MSPROBE_SETUP=0 \
      ACC_BUILD_TARGETS="${ACC_BUILD_TARGETS:-}" ACC_DEBUG_INFO="${ACC_DEBUG_INFO:-1}" \
      ACC_UNITY_BUILD="${ACC_UNITY_BUILD:-0}" ACC_CMAKE_ARGS="${ACC_CMAKE_ARGS:-}" \
      bash -c 'cd /src && scripts/test.sh "$@"' test-torch "$@"; then
    echo "test-torch: $suite (torch $version) passed" >&2
  else
    echo "test-torch: $suite (torch $version) FAILED" >&2
    status=1
  fi
  unmount_from "$dir"
done
exit $status
