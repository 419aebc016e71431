#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# The test suite's package cache: one container, dlbox-test-cache, that every Molecule test container fetches
# its .debs and wheels through, so each is downloaded once per machine.
#
#   tests/scripts/test-cache.sh start [USER_PID]   start it (idempotent; safe when two molecule.sh start it at
#                                                  once); USER_PID: a process that uses it, stop leaves it up
#                                                  while any such process lives
#   tests/scripts/test-cache.sh stop [USER_PID]    forget USER_PID; stop the container when no user is left
#   tests/scripts/test-cache.sh stats              bytes fetched upstream vs served, from the caches' own logs
#
# The container is built from the local test image dlbox-test:debian12 (never pulled) plus
#   - Debian's apt-cacher-ng on port 3142 (apt's HTTP proxy; HTTPS repositories and 127.0.0.1/localhost fixture
#     repositories stay DIRECT, so the scenarios that test proxies and fixture repositories see what they did);
#   - proxpi (PyPI) on port 3141 as pip's index-url: a small caching index proxy made for CI, one process, no
#     database or upload side (devpi-server would need an init step, a server state and more dependencies for
#     features the tests do not use). Files are kept on disk and found again after a restart.
# Both listen on 127.0.0.1 (the controller: pip downloads in prepare.yml, test-wheelhouse.sh) and on the docker0
# bridge address (the test containers). Everything lives under build/test-cache (apt/, pip/, log/), which
# survives between runs; a clean clone starts empty. build/test-cache/client/ holds the two files that
# .config/molecule/config.yml bind-mounts into every test container (apt.conf, pip.conf); with the cache off the
# platforms mount .config/molecule/cache-off/ instead (comments only).
# Upstream: the host's own egress (no proxy here); the image trusts the host's extra CAs (tests/images/build.sh)
# and proxpi reads them through REQUESTS_CA_BUNDLE.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
dir=build/test-cache
name=dlbox-test-cache
image=dlbox-test-cache:debian12
apt_port=3142
pip_port=3141
# The container is one per machine (its name and ports), so its users are counted per machine too, not per checkout:
# a run from another checkout (a git-archive copy, a clean clone) stopping "its" cache cut a running test's
# downloads mid-run (2026-12-07: the SSH fleet test lost 172.17.0.1:3142 when a benchmark in a copy ended).
users=${DLBOX_TEST_CACHE_USERS:-/tmp/dlbox-test-cache-users}
mkdir -p "$dir/apt" "$dir/pip" "$dir/log/apt" "$dir/client" "$users"

log() { printf '[test-cache] %s\n' "$*" >&2; }

gateway() {  # the address test containers reach the host on (docker0), e.g. 172.17.0.1
  local gw
  gw=$(docker network inspect bridge -f '{{ range .IPAM.Config }}{{ .Gateway }}{{ end }}' 2>/dev/null || true)
  [ -n "$gw" ] || gw=$(ip -4 -o addr show docker0 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }')
  [ -n "$gw" ] || { log "no docker0 bridge address"; return 1; }
  echo "$gw"
}

dockerfile() {  # the mirrors are the test images' (tests/images/build.sh): apt-cacher-ng's own lists name
                # mirrors that this host may not reach, so its Debian and Ubuntu backends are set here
  cat <<EOF
FROM dlbox-test:debian12
ENV REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d \
 && apt-get update \
 && apt-get install -y --no-install-recommends apt-cacher-ng python3-venv curl \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/proxpi \
 && /opt/proxpi/bin/pip install --no-cache-dir proxpi==1.3.1 gunicorn==23.0.0 \\
 && echo http://deb.debian.org/debian/ > /etc/apt-cacher-ng/backends_debian \\
 && echo ${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}/ > /etc/apt-cacher-ng/backends_ubuntu
COPY entry.sh /usr/local/bin/dlbox-test-cache
CMD ["/bin/sh", "/usr/local/bin/dlbox-test-cache"]
EOF
}

entry() {
  cat <<'EOF'
#!/bin/sh
# dlbox-test-cache: apt-cacher-ng (3142) in the background, proxpi (3141) in the foreground.
set -eu
mkdir -p /cache/apt /cache/pip /cache/log/apt
# ResponseFreezeDetectTime: concurrent requests for one InRelease share one download instead of displacing each other
# (the package_cache role's setting: plugins/plugin_utils/package_cache_plan.py acng_conf says why)
apt-cacher-ng -c /etc/apt-cacher-ng ForeGround=0 CacheDir=/cache/apt LogDir=/cache/log/apt Port=3142 \
  BindAddress=0.0.0.0 VerboseLog=1 ResponseFreezeDetectTime=2147483647
export PROXPI_CACHE_DIR=/cache/pip PROXPI_CACHE_SIZE=42949672960 PROXPI_DOWNLOAD_TIMEOUT=1800 \
  PROXPI_INDEX_TTL=86400 PROXPI_LOGGING_LEVEL=DEBUG
exec /opt/proxpi/bin/gunicorn --workers 1 --threads 32 --timeout 1800 --bind 0.0.0.0:3141 \
  --access-logfile /cache/log/pip-access.log proxpi.server:app >>/cache/log/pip.log 2>&1
EOF
}

recipe() { { echo 1; dockerfile; entry; } | sha256sum | cut -c1-16; }

label() { docker inspect -f '{{ index .Config.Labels "org.dlbox.recipe" }}' "$1" 2>/dev/null || true; }

build_image() {
  local want=$1 ctx
  [ "$(label "$image")" = "$want" ] && return 0
  docker image inspect dlbox-test:debian12 >/dev/null 2>&1 \
    || { log "dlbox-test:debian12 is missing (run tests/images/build.sh debian12)"; return 1; }
  ctx=$(mktemp -d)
  dockerfile > "$ctx/Dockerfile"
  entry > "$ctx/entry.sh"
  log "build $image (recipe $want)"
  docker build -q --label "org.dlbox.recipe=$want" -t "$image" "$ctx" > "$dir/log/image-build.log" 2>&1 \
    || { tail -20 "$dir/log/image-build.log" >&2; rm -rf "$ctx"; return 1; }
  rm -rf "$ctx"
}

write_client() {  # the files every test container mounts: apt's proxy and pip's index
  local gw=$1 tmp
  tmp=$(mktemp "$dir/client/.apt.XXXXXX")
  cat > "$tmp" <<EOF
// dlbox test suite: apt fetches HTTP repositories through the suite's apt-cacher-ng (tests/scripts/test-cache.sh).
// HTTPS repositories and the fixture repositories on the container's loopback are fetched directly.
Acquire::http::Proxy "http://$gw:$apt_port";
Acquire::http::Proxy::127.0.0.1 "DIRECT";
Acquire::http::Proxy::localhost "DIRECT";
EOF
  chmod 0644 "$tmp" && mv -f "$tmp" "$dir/client/apt.conf"
  tmp=$(mktemp "$dir/client/.pip.XXXXXX")
  cat > "$tmp" <<EOF
# dlbox test suite: pip's index is the suite's PyPI cache, proxpi (tests/scripts/test-cache.sh).
# Lowest-priority pip configuration (/etc/xdg/pip): /etc/pip.conf, a venv's pip.conf and options win.
[global]
index-url = http://$gw:$pip_port/index/
trusted-host = $gw
timeout = 300
# No byte-compiling at install: a torch wheel is some 17 CPU-s less (2026-12-04); Python compiles what is imported.
# "compile = false", not "no-compile = true": pip reads the latter as compile = true.
[install]
compile = false
EOF
  chmod 0644 "$tmp" && mv -f "$tmp" "$dir/client/pip.conf"
}

healthy() {
  curl -fs --max-time 5 -o /dev/null "http://127.0.0.1:$pip_port/health" \
    && curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$apt_port/acng-report.html"
}

live_users() {  # users registered other than $1 whose process lives
  local f n=0
  for f in "$users"/*; do
    [ -e "$f" ] || continue
    [ "$(basename "$f")" = "${1:-}" ] && continue
    kill -0 "$(basename "$f")" 2>/dev/null && n=$((n + 1))
  done
  echo "$n"
}

start() {
  local user=${1:-} want gw i
  exec 9>"$users/.lock"
  flock 9
  [ -n "$user" ] && : > "$users/$user"
  want=$(recipe)
  gw=$(gateway)
  build_image "$want"
  # a running cache of an older recipe stays while another test run uses it (replacing it would cut their downloads)
  if [ "$(docker inspect -f '{{ .State.Running }}' "$name" 2>/dev/null)" = true ] && [ "$(label "$name")" != "$want" ] \
     && [ "$(live_users "$user")" -gt 0 ] && docker port "$name" | grep -q "$gw:$apt_port" && healthy; then
    write_client "$gw"
    log "reuse $name of an older recipe: $(live_users "$user") other user(s); the new one starts when none is left"
    return 0
  fi
  if [ "$(docker inspect -f '{{ .State.Running }}' "$name" 2>/dev/null)" = true ] && [ "$(label "$name")" = "$want" ] \
     && docker port "$name" | grep -q "$gw:$apt_port"; then
    write_client "$gw"
    healthy || sleep 2
    healthy && { log "reuse $name"; return 0; }
  fi
  docker rm -f "$name" >/dev/null 2>&1 || true
  docker run -d --name "$name" --label "org.dlbox.recipe=$want" --restart no \
    -p "127.0.0.1:$apt_port:3142" -p "127.0.0.1:$pip_port:3141" -p "$gw:$apt_port:3142" -p "$gw:$pip_port:3141" \
    -v "$root/$dir:/cache" "$image" >/dev/null
  for i in $(seq 1 60); do
    healthy && break
    [ "$i" -lt 60 ] || { docker logs "$name" 2>&1 | tail -20 >&2; log "$name did not answer"; return 1; }
    sleep 1
  done
  write_client "$gw"
  log "started $name: apt http://$gw:$apt_port, pip http://$gw:$pip_port/index/ (cache in $dir)"
}

stop() {
  local user=${1:-} f others=0
  exec 9>"$users/.lock"
  flock 9
  [ -n "$user" ] && rm -f "$users/$user"
  for f in "$users"/*; do
    [ -e "$f" ] || continue
    if kill -0 "$(basename "$f")" 2>/dev/null; then others=$((others + 1)); else rm -f "$f"; fi
  done
  if [ "$others" -gt 0 ]; then
    log "leave $name up: $others other user(s)"
    return 0
  fi
  if docker rm -f "$name" >/dev/null 2>&1; then log "stopped $name"; fi
}

stats() {  # apt-cacher-ng: I = bytes fetched upstream, O = bytes served; proxpi: file downloads vs file requests
  awk -F'|' '$2 == "I" { i += $3; ni++ } $2 == "O" { o += $3; no++ }
    END { printf "apt-cacher-ng: %d files / %.1f MB fetched upstream, %d files / %.1f MB served to test containers\n",
          ni, i / 1e6, no, o / 1e6 }' "$dir"/log/apt/apt-cacher.log 2>/dev/null || true
  local req down
  req=$(grep -cE '"GET /index/[^/ ]+/[^/ ]+ HTTP' "$dir/log/pip-access.log" 2>/dev/null || true)
  down=$(grep -c "Finished downloading" "$dir/log/pip.log" 2>/dev/null || true)
  printf 'proxpi: %s file requests, %s files fetched upstream (%s in cache: %s)\n' "${req:-0}" "${down:-0}" \
    "$dir/pip" "$(du -sh "$dir/pip" 2>/dev/null | cut -f1)"
}

case "${1:-}" in
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  stats) stats ;;
  *) echo "usage: $0 start|stop [USER_PID] | stats" >&2; exit 2 ;;
esac
