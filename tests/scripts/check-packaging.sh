#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# The collection as Galaxy would receive it, judged by Galaxy's own importer and by antsibull-docs.
#   tests/scripts/check-packaging.sh [COLLECTION_DIR]        (default: this repository)
# 1. tests/scripts/check_collection_meta.py: one licence, real metadata, a README for every role, a docs
#    sidecar for every filter (every problem at once, each naming its file);
# 2. ansible-galaxy collection build, into a temporary folder;
# 3. galaxy-importer on the tarball (RUN_ANSIBLE_TEST = False; it runs ansible-doc on every plugin and
#    ansible-lint on the roles): any WARNING or ERROR line fails;
# 4. antsibull-docs lint-collection-docs --plugin-docs on the tarball installed: any message fails.
# The collections galaxy.yml declares as dependencies are taken from .venv (requirements-dev.txt's
# `ansible` package) and put on the judges' Python path, so the importer's ansible-lint resolves their
# modules; a collection used but not declared stays unresolved, and that fails too.
# Exits 1 when anything failed. Runs in the packaging venv (tests/scripts/packaging-venv.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$(cd "${1:-$root}" && pwd)
venv=${DLBOX_PACKAGING_VENV:-$root/build/packaging-venv}
deps_python=${DLBOX_DEPS_PYTHON:-$root/.venv/bin/python}
start=$(date +%s)
say() { printf 'packaging: %s\n' "$*"; }

bash "$root/tests/scripts/packaging-venv.sh" "$venv" "$root/tests/scripts/packaging-requirements.txt"
work=$(mktemp -d "${TMPDIR:-/tmp}/dlbox-packaging.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The judges see only what they are given: no ansible.cfg of the tree, no collections path of make's,
# no copy of the collection that something installed in ~/.ansible/collections.
cd "$work"
unset ANSIBLE_COLLECTIONS_PATHS ANSIBLE_CONFIG
export ANSIBLE_COLLECTIONS_PATH="$work/installed"
export PATH="$venv/bin:$PATH" ANSIBLE_LOCAL_TEMP="$work/ansible-tmp" ANSIBLE_NOCOLOR=1
failed=()

# 1. What the judges do not check, or stop at the first of.
if ! "$venv/bin/python" "$root/tests/scripts/check_collection_meta.py" "$src"; then
  failed+=("collection meta")
fi

# 2. The tarball, exactly as `make build` makes it.
if ! ansible-galaxy collection build --output-path "$work" "$src" >"$work/build.log" 2>&1; then
  cat "$work/build.log"
  say "FAILED: ansible-galaxy collection build"
  exit 1
fi
tarball=$(ls "$work"/*-*-*.tar.gz)
read -r namespace name < <(basename "$tarball" | sed -E 's/^([a-z0-9_]+)-([a-z0-9_]+)-.*/\1 \2/')
# Caches of the tools that run in the tree (ansible-lint's .ansible/, pytest's, Python's) stay out.
swept=$(tar -tzf "$tarball" | grep -E '(^|/)(\.ansible|\.pytest_cache|__pycache__)(/|$)|^(\.venv|build)(/|$)' || true)
if [ -n "$swept" ]; then
  printf '%s\n' "$swept" | head -20
  say "the tarball carries caches or build output (above); list them in galaxy.yml's build_ignore"
  failed+=("tarball contents")
fi

# The declared dependencies, from .venv, on the judges' Python path (ansible-core finds collections
# under every sys.path entry's ansible_collections/).
"$venv/bin/python" - "$src/galaxy.yml" "$deps_python" "$work/deps" <<'PY'
import subprocess, sys
from pathlib import Path
import yaml
galaxy, python, dest = sys.argv[1], sys.argv[2], Path(sys.argv[3])
deps = (yaml.safe_load(open(galaxy, encoding="utf-8")) or {}).get("dependencies") or {}
paths = subprocess.run([python, "-c", "import sys; print('\\n'.join(sys.path))"],
                       capture_output=True, text=True, check=True).stdout.splitlines()
missing = []
for dep in sorted(deps):
    ns, name = dep.split(".", 1)
    found = [Path(p) / "ansible_collections" / ns / name for p in paths
             if (Path(p) / "ansible_collections" / ns / name / "MANIFEST.json").is_file()]
    if not found:
        missing.append(dep)
        continue
    link = dest / "ansible_collections" / ns / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(found[0], target_is_directory=True)
if missing:
    sys.exit("packaging: dependencies %s (galaxy.yml) are not installed for %s; `make venv` installs the "
             "`ansible` package that brings them" % (", ".join(missing), python))
PY
mkdir -p "$work/deps"
export PYTHONPATH="$work/deps"

# 3. Galaxy's importer.
cat >"$work/galaxy-importer.cfg" <<EOF
[galaxy-importer]
RUN_ANSIBLE_TEST = False
RUN_ANSIBLE_DOC = True
RUN_ANSIBLE_LINT = True
OFFLINE_ANSIBLE_LINT = True
ANSIBLE_LOCAL_TMP = $work/ansible-tmp
EOF
rc=0
GALAXY_IMPORTER_CONFIG="$work/galaxy-importer.cfg" "$venv/bin/python" -m galaxy_importer.main "$tarball" \
  >"$work/importer.log" 2>&1 || rc=$?
findings=$(grep -cE '^(WARNING|ERROR)' "$work/importer.log" || true)
version=$(sed -n 's/^Importing with galaxy-importer //p' "$work/importer.log")
if [ "$rc" != 0 ] || [ "$findings" != 0 ] || ! grep -q '^Importer processing completed successfully' "$work/importer.log"; then
  cat "$work/importer.log"
  say "galaxy-importer ${version:-?}: exit $rc, $findings WARNING/ERROR line(s)"
  failed+=("galaxy-importer")
else
  say "galaxy-importer $version: accepted, 0 warnings, 0 errors"
fi

# 4. antsibull-docs, on the collection as installed from the tarball.
ansible-galaxy collection install --force --no-deps -p "$work/installed" "$tarball" >"$work/install.log" 2>&1 \
  || { cat "$work/install.log"; say "FAILED: installing the tarball"; exit 1; }
rc=0
antsibull-docs lint-collection-docs --plugin-docs "$work/installed/ansible_collections/$namespace/$name" \
  >"$work/docs-lint.log" 2>&1 || rc=$?
lines=$(grep -c . "$work/docs-lint.log" || true)
if [ "$rc" != 0 ] || [ "$lines" != 0 ]; then
  sed "s|$work/installed/ansible_collections/$namespace/$name/||" "$work/docs-lint.log"
  say "antsibull-docs lint-collection-docs --plugin-docs: exit $rc, $lines message line(s)"
  failed+=("antsibull-docs lint")
else
  say "antsibull-docs lint-collection-docs --plugin-docs: clean"
fi

if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED ($(IFS=,; echo "${failed[*]}")) for $src in $(( $(date +%s) - start )) s"
  exit 1
fi
say "$namespace.$name passes Galaxy's importer and antsibull-docs in $(( $(date +%s) - start )) s"
