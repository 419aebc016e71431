#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Create VENV_DIR for dlbox.stack's controller tools (ansible-core 2.19 needs Python >= 3.11) and
# install the pinned requirements; print one line per package while it works. On a fresh Debian or
# Ubuntu, as root, it installs what is missing first, from apt lists refreshed by tools/apt-install.sh:
# python3 and python3-venv where the OS's python3 is new enough (Debian 12/13, Ubuntu 24.04/26.04), python3.11
# and python3.11-venv from universe on Ubuntu 22.04 (python3 is 3.10 there), ca-certificates.
#
#   tools/venv.sh VENV_DIR REQUIREMENTS_FILE       (PYTHON=/path/to/python3.x to choose the interpreter)
#
# TLS: every pip call verifies against the system trust store (/etc/ssl/certs, where
# update-ca-certificates puts a private CA): pip >= 24.2 does so itself (truststore), and the one call
# made with an older pip, its own upgrade, is given the system bundle with --cert. PIP_CERT or
# REQUESTS_CA_BUNDLE, when set, win. On failure the last line printed is pip's real cause.
#
# A requirements file may end with lines `#collection: PACKAGE==VERSION NAMESPACE.NAME`: that Ansible
# collection is unpacked from the pinned PyPI wheel into the venv's site-packages (where ansible-core
# finds it) unless the same version is already there: Galaxy is not reachable from every lab, and the
# whole `ansible` package (some 470 MB of collections) is not needed to run the playbooks.
set -euo pipefail
venv=${1:?usage: tools/venv.sh VENV_DIR REQUIREMENTS_FILE}
req=${2:?usage: tools/venv.sh VENV_DIR REQUIREMENTS_FILE}
here=$(cd "$(dirname "$0")" && pwd)
MIN_MINOR=11
PIP_TRUSTSTORE=24.2          # the first pip that uses the system trust store by itself
SYSTEM_BUNDLE=/etc/ssl/certs/ca-certificates.crt
start=$(date +%s)

say() { printf 'venv: %s\n' "$*"; }

mkdir -p "$venv"
venv_abs=$(cd "$venv" && pwd)
# Never an interpreter of the venv being (re)built: `make` puts its bin first on PATH, and a half-made
# venv's python vanishes when the venv is made again.
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "$venv_abs/bin" | paste -sd: -)
export PATH
unset VIRTUAL_ENV PYTHONHOME

inside_venv() { case "$(cd "$(dirname "$1")" 2>/dev/null && pwd)/" in "$venv_abs"/*) return 0 ;; esac; return 1; }

new_enough() {  # python >= 3.MIN_MINOR
  "$1" -c "import sys; sys.exit(0 if sys.version_info[:2] >= (3, $MIN_MINOR) else 1)" >/dev/null 2>&1
}

pick() {  # the first new enough interpreter outside the venv
  local c p
  for c in ${PYTHON:-} python3.14 python3.13 python3.12 python3.11 python3; do
    p=$(command -v "$c" 2>/dev/null) || continue
    if inside_venv "$p"; then say "not using $p: it is inside $venv, which is being made"; continue; fi
    new_enough "$p" && { printf '%s\n' "$p"; return 0; }
  done
  return 1
}

os_field() { (. /etc/os-release 2>/dev/null && eval "printf '%s' \"\${$1:-}\"") || true; }

# The interpreter packages that exist on this OS (empty: no supported Python there).
python_packages() {
  local id major
  id=$(os_field ID)
  major=$(os_field VERSION_ID)
  major=${major%%.*}
  case "$id:$major" in
    ubuntu:22) echo "python3.11 python3.11-venv" ;;      # python3 is 3.10; 3.11 is in universe
    ubuntu:1[0-9] | ubuntu:20 | debian:[0-9] | debian:1[01]) echo "" ;;
    *) echo "python3 python3-venv" ;;                      # Debian 12 (3.11), 13 (3.13), Ubuntu 24.04 (3.12)
  esac
}

need_help() {  # $1: the packages that would do on this OS
  if [ -n "${1:-}" ]; then
    echo "venv: dlbox.stack needs Python >= 3.$MIN_MINOR with its venv module for the controller tools" \
         "(ansible-core 2.19). As root: apt-get update && apt-get install -y $1; or set" \
         "PYTHON=/path/to/python3.x (outside $venv); then run make again." >&2
  else
    echo "venv: dlbox.stack needs Python >= 3.$MIN_MINOR, which $(os_field PRETTY_NAME) does not package;" \
         "supported: Debian 12/13, Ubuntu 22.04/24.04/26.04. Set PYTHON=/path/to/python3.x (>= 3.$MIN_MINOR, outside" \
         "$venv) and run make again." >&2
  fi
  exit 2
}

make_venv() {  # Debian's python has ensurepip only with pythonX.Y-venv: trying is the only sure test
  rm -rf "$venv"
  "$1" -m venv "$venv" >/dev/null 2>&1
}

venv_package() {  # python3-venv for the OS's own python3, pythonX.Y-venv for another one
  local ver sys
  ver=$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  sys=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
  if [ "$ver" = "$sys" ]; then echo python3-venv; else echo "python$ver-venv"; fi
}

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  [ -s "$SYSTEM_BUNDLE" ] || bash "$here/apt-install.sh" venv ca-certificates || true
  if ! py=$(pick); then
    pkgs=$(python_packages)
    [ -n "$pkgs" ] || need_help ""
    # shellcheck disable=SC2086
    bash "$here/apt-install.sh" venv $pkgs || need_help "$pkgs"
    py=$(pick) || need_help "$pkgs"
  fi
  if ! make_venv "$py"; then
    pkg=$(venv_package "$py")
    bash "$here/apt-install.sh" venv "$pkg" || need_help "$pkg"
    make_venv "$py" || need_help "$pkg"
  fi
  say "created $venv with $py"
fi

vpy=$venv/bin/python
log=$venv/pip.log
: >"$log"

# The most telling line of a failed pip run: a TLS, proxy or network cause before pip's own summary
# (`Could not find a version ... (from versions: none)` only says that nothing was reachable).
cause() {
  local line
  line=$(grep -E 'CERTIFICATE_VERIFY_FAILED|SSLError|SSL:|ProxyError|Tunnel connection failed|NewConnectionError|Name or service not known|Temporary failure in name resolution|Connection refused|Network is unreachable|timed out|HTTP error [0-9]+|[0-9]{3} Client Error' "$log" | tail -n 1 || true)
  [ -n "$line" ] || line=$(grep -E '^ERROR:' "$log" | tail -n 1 || true)
  [ -n "$line" ] || line=$(tail -n 1 "$log")
  printf '%s' "$line" | sed -e 's/^ *//' | cut -c1-600
}

fail_pip() {  # $1: what was being done
  grep -E '^ERROR:' "$log" | grep -v 'Could not find a version\|No matching distribution' | tail -n 3 >&2 || true
  echo "venv: $1 failed; pip's whole output: $log." >&2
  case "$(cause)" in
    *CERTIFICATE_VERIFY_FAILED* | *SSL*)
      echo "venv: behind a TLS-inspecting proxy or with a private package index, put its CA in the system" \
           "trust store first (README: Behind a proxy, or air-gapped)." >&2 ;;
  esac
  echo "venv: cause: $(cause)" >&2
  exit 1
}

pip_run() {  # pip_run WHAT COMMAND ARGS...: pip with one progress line per package on stdout, all of it in $log
  local what=$1 command=$2 st
  shift 2
  echo "+ pip $command $*" >>"$log"
  set +e
  "$vpy" -m pip "$command" --disable-pip-version-check --progress-bar off "$@" 2>&1 | tee -a "$log" \
    | sed -nu -e 's/^Collecting \([^ ]*\).*/venv:   collecting \1/p' \
              -e 's/^Installing collected packages: \(.*\)/venv:   installing \1/p'
  st=${PIPESTATUS[0]}
  set -e
  [ "$st" = 0 ] || fail_pip "$what"
}

pip_version() { "$vpy" -c 'import pip; print(pip.__version__)'; }
older() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ] && [ "$1" != "$2" ]; }

# pip itself first: >= 24.2, or fail (an unreachable index must not leave the venv on a pip that ignores
# the system trust store). The venv's own pip may be older: that one call gets the system bundle.
have=$(pip_version)
if older "$have" "$PIP_TRUSTSTORE"; then
  cert=()
  if [ -z "${PIP_CERT:-}${REQUESTS_CA_BUNDLE:-}" ] && [ -s "$SYSTEM_BUNDLE" ]; then cert=(--cert "$SYSTEM_BUNDLE"); fi
  say "upgrading pip $have (>= $PIP_TRUSTSTORE uses the system trust store)"
  pip_run "upgrading pip" install "${cert[@]}" "pip>=$PIP_TRUSTSTORE"
fi

say "installing $req"
pip_run "installing $req" install -r "$req"

# Collections unpacked from pinned wheels (see the header).
tmp=""
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT
while read -r spec coll; do
  [ -n "$coll" ] || continue
  ns=${coll%%.*}
  name=${coll#*.}
  if "$vpy" - "$coll" "$spec" <<'EOF'
import importlib.metadata, pathlib, sys, sysconfig
coll, spec = sys.argv[1:]
ns, name = coll.split(".", 1)
path = pathlib.Path(sysconfig.get_paths()["purelib"], "ansible_collections", ns, name)
stamp = path / ".dlbox-from"
if stamp.is_file() and stamp.read_text().strip() == spec:
    sys.exit(0)                                  # unpacked here before
package, version = spec.split("==")
try:                                             # the whole package, as requirements-dev.txt installs it
    whole = importlib.metadata.version(package) == version and (path / "MANIFEST.json").is_file()
except importlib.metadata.PackageNotFoundError:
    whole = False
sys.exit(0 if whole else 1)
EOF
  then continue; fi
  say "unpacking collection $coll from $spec"
  [ -n "$tmp" ] || tmp=$(mktemp -d)
  pip_run "downloading $spec" download --no-deps --only-binary :all: -d "$tmp" "$spec"
  "$vpy" - "$tmp" "$ns" "$name" "$spec" <<'EOF'
import pathlib, shutil, sys, sysconfig, zipfile
tmp, ns, name, spec = sys.argv[1:]
wheel = next(pathlib.Path(tmp).glob("*.whl"))
prefix = f"ansible_collections/{ns}/{name}/"
dest = pathlib.Path(sysconfig.get_paths()["purelib"])
shutil.rmtree(dest / prefix, ignore_errors=True)
with zipfile.ZipFile(wheel) as zf:
    members = [m for m in zf.namelist() if m.startswith(prefix)]
    if not members:
        sys.exit(f"venv: {wheel.name} has no {prefix}")
    zf.extractall(dest, members)
(dest / prefix / ".dlbox-from").write_text(spec + "\n")
EOF
done < <(sed -n 's/^#collection:[[:space:]]*//p' "$req")

say "ready in $(( $(date +%s) - start )) s: $("$vpy" -m pip list --format=freeze 2>/dev/null | wc -l) packages, $(du -sm "$venv" | cut -f1) MB in $venv"
