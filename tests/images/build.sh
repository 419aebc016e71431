#!/usr/bin/env bash
# Build dlbox.stack's systemd test images without a registry: debootstrap -> docker import -> Dockerfile.
#
#   tests/images/build.sh [debian12] [ubuntu2204] [ubuntu2404] [ubuntu2604] [debian13]   (default: the first four)
#
# debian13 (trixie) is built only when named: the quickstart test (tests/integration/test_quickstart.py)
# uses it, the Molecule scenarios do not (each would run once more on it). ubuntu2604 (resolute, Ubuntu 26.04 LTS) is
# built by default (about 60 s) but is an opt-in platform of tests/scripts/molecule.sh: only the scenarios that name it
# in .config/molecule/scenarios.txt run on it (and the quickstart test); "all" and unlisted scenarios do not.
#
# Each image carries the label org.dlbox.recipe=<hash of its recipe>; an image whose label matches
# is reused, so a second run builds nothing. Ubuntu platforms are built only when Ubuntu's archive
# answers; otherwise they are skipped with one line. The list of images that exist afterwards is
# written to build/platforms (one distro a line), which `make test` reads; DLBOX_PLATFORMS_FILE names
# another file (the quickstart test's own build leaves the Molecule platforms alone).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/build"
mkdir -p "$out"
UBUNTU_MIRROR=${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}
EXTRA_CA_DIR=${EXTRA_CA_DIR:-/usr/local/share/ca-certificates}
BASE_RECIPE=1   # bump when the debootstrap step below changes
distros=("$@")
[ ${#distros[@]} -gt 0 ] || distros=(debian12 ubuntu2204 ubuntu2404 ubuntu2604)

log() { printf '[images] %s\n' "$*"; }

recipe() {  # distro -> "id codename mirror"
  case "$1" in
    debian12)   echo "debian bookworm -" ;;
    debian13)   echo "debian trixie -" ;;
    ubuntu2204) echo "ubuntu jammy $UBUNTU_MIRROR" ;;
    ubuntu2404) echo "ubuntu noble $UBUNTU_MIRROR" ;;
    ubuntu2604) echo "ubuntu resolute $UBUNTU_MIRROR" ;;
    *) echo "unknown test platform '$1' (known: debian12 debian13 ubuntu2204 ubuntu2404 ubuntu2604)" >&2; return 2 ;;
  esac
}

label_of() { docker image inspect --format '{{ index .Config.Labels "org.dlbox.recipe" }}' "$1" 2>/dev/null || true; }

ca_context() {  # copy the host's extra CA certificates into a build context
  mkdir -p "$1/ca"
  if [ -d "$EXTRA_CA_DIR" ]; then
    find "$EXTRA_CA_DIR" -maxdepth 1 -name '*.crt' -exec cp {} "$1/ca/" \;
  fi
}

build_one() {
  local distro=$1 id codename mirror
  read -r id codename mirror < <(recipe "$distro")
  [ "$mirror" = "-" ] && mirror=""

  if [ "$id" = ubuntu ] && ! curl -fsS --max-time 15 -o /dev/null "$UBUNTU_MIRROR/dists/$codename/Release"; then
    log "SKIP $distro: Ubuntu's archive ($UBUNTU_MIRROR) did not answer; its platforms are left out of this run."
    return 1
  fi

  local ctx; ctx=$(mktemp -d)
  cp "$here/Dockerfile" "$here/sources.sh" "$here/dlbox_zipimport_cache.py" "$here/dlbox_zipimport_cache.pth" \
     "$here/systemd-cgroup2.sh" "$ctx/"
  ca_context "$ctx"
  # The recipe: this script, the Dockerfile, the sources writer, the systemd shim, the distro line and the CAs.
  local base_hash full_hash
  base_hash=$(echo "base-recipe-$BASE_RECIPE $distro $id $codename $mirror" | sha256sum | cut -c1-16)
  full_hash=$( { echo "$base_hash"; cat "$0" "$here/Dockerfile" "$here/sources.sh" "$here"/dlbox_zipimport_cache.* "$here/systemd-cgroup2.sh"; cat "$ctx"/ca/*.crt 2>/dev/null; } | sha256sum | cut -c1-16)

  local image="dlbox-test:$distro" base="dlbox-base:$distro"
  if [ "$(label_of "$image")" = "$full_hash" ]; then
    log "reuse $image (recipe $full_hash)"
    rm -rf "$ctx"; return 0
  fi

  if [ "$(label_of "$base")" != "$base_hash" ]; then
    log "debootstrap $codename for $base"
    local rootfs; rootfs=$(mktemp -d)
    local args=(--variant=minbase --include=ca-certificates)
    if [ "$id" = ubuntu ]; then
      # Debian 12 has no Ubuntu keyring to check the Release with; inside the image apt then
      # verifies every later download with the ubuntu-keyring that debootstrap installed.
      args+=(--no-check-gpg --components=main)
      debootstrap "${args[@]}" "$codename" "$rootfs" "$mirror" /usr/share/debootstrap/scripts/gutsy >"$out/debootstrap-$distro.log" 2>&1 \
        || { log "debootstrap failed for $distro; see $out/debootstrap-$distro.log"; rm -rf "$rootfs" "$ctx"; return 2; }
    else
      debootstrap "${args[@]}" "$codename" "$rootfs" >"$out/debootstrap-$distro.log" 2>&1 \
        || { log "debootstrap failed for $distro; see $out/debootstrap-$distro.log"; rm -rf "$rootfs" "$ctx"; return 2; }
    fi
    tar -C "$rootfs" -c . | docker import --change "LABEL org.dlbox.recipe=$base_hash" - "$base" >/dev/null
    rm -rf "$rootfs"
  else
    log "reuse $base (recipe $base_hash)"
  fi

  log "build $image"
  docker build -q --label "org.dlbox.recipe=$full_hash" \
    --build-arg "BASE=$base" --build-arg "DISTRO_ID=$id" --build-arg "CODENAME=$codename" --build-arg "MIRROR=$mirror" \
    -t "$image" "$ctx" >"$out/docker-build-$distro.log" 2>&1 \
    || { log "docker build failed for $distro; see $out/docker-build-$distro.log"; tail -20 "$out/docker-build-$distro.log"; rm -rf "$ctx"; return 2; }
  rm -rf "$ctx"
}

command -v debootstrap >/dev/null || { echo "build.sh: debootstrap is missing (apt-get install debootstrap)" >&2; exit 2; }
docker info >/dev/null 2>&1 || { echo "build.sh: no Docker engine answers (make docker-engine starts one)" >&2; exit 2; }

platforms_file=${DLBOX_PLATFORMS_FILE:-$out/platforms}
: > "$platforms_file.new"
status=0
for d in "${distros[@]}"; do
  if build_one "$d"; then
    echo "$d" >> "$platforms_file.new"
  else
    rc=$?
    [ "$rc" -eq 1 ] || status=$rc   # 1 = skipped (archive unreachable), anything else is a failure
  fi
done
mv "$platforms_file.new" "$platforms_file"
log "platforms: $(tr '\n' ' ' < "$platforms_file")"
exit "$status"
