#!/usr/bin/env bash
# Builds acc on a machine that has a compiler, CMake and a Python with torch
# but neither apt nor a network (the GPU machines lent to sessions), from
# Debian 12's packages of acc's build dependencies, fetched beforehand on a
# Debian machine and carried along:
#   scripts/device-kit.sh fetch [KIT]   on Debian 12: downloads the .debs into KIT
#                                       (default .device-kit, which git ignores)
#   scripts/device-kit.sh build [KIT]   there: unpacks KIT's .debs into KIT/root (no
#                                       root needed) and builds libacc.so, acc-analyzer
#                                       and acc-replay into ACC_BUILD_DIR (default
#                                       build): no tests, benchmarks or debug information;
#                                       the kit's libraries they need are copied into
#                                       build/lib, so build/ works without the kit
# After the build: scripts/check-cuda.sh, bench/overhead.py --device cuda ...
# (docs/guide/building.md, "On a machine without apt").
set -euo pipefail
cd "$(dirname "$0")/.."

# What CMakeLists.txt finds (pkg-config's modules, the CMake packages and
# zlib) with the libraries they link, and pkgconf to read the modules.
packages=(
  libunwind-dev libunwind8 liblzma-dev liblzma5 libzstd-dev libzstd1 nlohmann-json3-dev libcli11-dev
  libxlsxwriter-dev libxlsxwriter4 libminizip-dev libminizip1 zlib1g-dev zlib1g pkgconf pkgconf-bin libpkgconf3
)

usage() {
  echo "usage: scripts/device-kit.sh fetch [KIT] | build [KIT]   (KIT defaults to .device-kit)" >&2
  exit 2
}

fetch() {
  local kit=$1
  command -v apt-get >/dev/null || { echo "device-kit: fetch needs apt-get (a Debian machine)" >&2; exit 1; }
  mkdir -p "$kit"
  kit=$(cd "$kit" && pwd)
  # apt's warnings (as root it downloads unsandboxed) only when it fails.
  local log
  log=$(mktemp)
  if ! (cd "$kit" && apt-get download "${packages[@]}" >"$log" 2>&1); then
    [[ $(id -u) -eq 0 ]] || { cat "$log" >&2; echo "device-kit: apt-get download failed; as root, run apt-get update first" >&2; exit 1; }
    apt-get update -q >/dev/null
    (cd "$kit" && apt-get download "${packages[@]}" >"$log" 2>&1) || { cat "$log" >&2; exit 1; }
  fi
  rm -f "$log"
  echo "device-kit: $(ls "$kit"/*.deb | wc -l) packages in $kit ($(du -sh "$kit" | cut -f1)); carry $kit and run: scripts/device-kit.sh build $kit"
}

# A .deb's files under `root`: dpkg-deb where there is one, else ar and tar.
unpack() {
  local deb=$1 root=$2
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$deb" "$root"
    return
  fi
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && ar x "$deb")
  tar -xf "$tmp"/data.tar.* -C "$root"
  rm -rf "$tmp"
}

build() {
  local kit=$1
  compgen -G "$kit/*.deb" >/dev/null || { echo "device-kit: no .deb in $kit: run scripts/device-kit.sh fetch $kit on a Debian 12 machine and carry it" >&2; exit 1; }
  kit=$(cd "$kit" && pwd)
  local root=$kit/root python build_dir=${ACC_BUILD_DIR:-build}
  rm -rf "$root"
  mkdir -p "$root"
  for deb in "$kit"/*.deb; do unpack "$deb" "$root"; done
  local libdir=$root/usr/lib/x86_64-linux-gnu
  # pkgconf from the kit, reading only the kit's modules, with their paths
  # under the kit's root.
  cat >"$root/pkg-config" <<EOF
#!/bin/sh
export PKG_CONFIG_SYSROOT_DIR='$root'
export PKG_CONFIG_LIBDIR='$libdir/pkgconfig:$root/usr/share/pkgconfig'
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
export LD_LIBRARY_PATH='$libdir'
exec '$root/usr/bin/pkgconf' "\$@"
EOF
  chmod +x "$root/pkg-config"
  python=$(scripts/find-python.sh) || { echo "device-kit: no Python can import torch" >&2; exit 1; }
  echo "device-kit: building against the torch of $python into $build_dir"
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" -DACC_UNITY_BUILD=ON -DACC_BUILD_TESTS=OFF -DACC_BUILD_BENCH=OFF \
    "-DACC_PYTHON=$python" "-DCMAKE_PREFIX_PATH=$root/usr" "-DZLIB_ROOT=$root/usr" "-DPKG_CONFIG_EXECUTABLE=$root/pkg-config" \
    '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' ${ACC_CMAKE_ARGS:-}
  cmake --build "$build_dir" -j "$(nproc)" --target acc acc_core acc-analyzer acc-replay
  # The kit's libraries that acc's need (libunwind, zstd...) beside them in
  # build/lib, found through $ORIGIN/../lib once the kit's root is gone: a
  # second call that carries the kit again replaces its folder, root and
  # all, and libacc_core.so would no longer load (recording off).
  local name dir
  for name in $(objdump -p "$build_dir"/lib/*.so "$build_dir"/bin/acc-analyzer "$build_dir"/bin/acc-replay |
                awk '$1 == "NEEDED" {print $2}' | sort -u); do
    for dir in "$libdir" "$root/lib/x86_64-linux-gnu"; do
      if [[ -e $dir/$name ]]; then
        cp -L "$dir/$name" "$build_dir/lib/"
        break
      fi
    done
  done
  echo "device-kit: built $build_dir/lib/libacc.so, $build_dir/bin/acc-analyzer and $build_dir/bin/acc-replay"
}

case "${1:-}" in
  fetch) fetch "${2:-.device-kit}" ;;
  build) build "${2:-.device-kit}" ;;
  *) usage ;;
esac
