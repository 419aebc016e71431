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
# As on Galaxy, no collection but this one is on the judges' path: galaxy.yml's dependencies are not
# installed there (see below), so the roles use ansible-core's modules and this collection's only.
# Exits 1 when anything failed. Runs in the packaging venv (tests/scripts/packaging-venv.sh).
# DLBOX_PACKAGING_QUICK=1 (tests/integration/test_packaging_check.py, which breaks a copy of the tree on purpose): the
# importer without its ansible-lint pass, and no execution-environment step; the checks that find a missing README or
# missing docs all run. make lint always runs everything.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$(cd "${1:-$root}" && pwd)
venv=${DLBOX_PACKAGING_VENV:-$root/build/packaging-venv}
quick=${DLBOX_PACKAGING_QUICK:-0}
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

# Galaxy installs none of galaxy.yml's dependencies before judging: galaxy-importer 0.4.44 only checks
# their format (schema.py, CollectionInfo._check_dependencies_format) and runs ansible-lint with
# ANSIBLE_COLLECTIONS_PATH set to the unpacked collection alone and --offline (loaders/collection.py,
# CollectionLoader._lint_collection), in a Python that holds ansible-core and no other collection. So
# here: nothing on the judges' path but the tarball; a module from another collection is unresolved
# (syntax-check[unknown-module]) and fails, as it warns on Galaxy.
unset PYTHONPATH

# 3. Galaxy's importer.
cat >"$work/galaxy-importer.cfg" <<EOF
[galaxy-importer]
RUN_ANSIBLE_TEST = False
RUN_ANSIBLE_DOC = True
RUN_ANSIBLE_LINT = $([ "$quick" = 1 ] && echo False || echo True)
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

# 5. The execution environment (execution-environment.yml, ansible-builder v3; issue 29): `ansible-builder create`
#    accepts it with the tarball just built, the context it generates installs this collection and names its Python
#    and system needs, and ansible-builder's own introspection (the script it puts into the context and runs at
#    build time) finds the collection's meta/execution-environment.yml in the installed tarball. No image is built:
#    no registry is reachable here, and ansible-builder's base images are RPM-based.
ee_problems=()
if [ "$quick" != 1 ]; then
  mkdir -p "$work/ee/meta"
  cp "$src/execution-environment.yml" "$work/ee/"
  cp "$src"/meta/ee-* "$work/ee/meta/"
  cp "$tarball" "$work/ee/"
  grep -q "name: collections/$(basename "$tarball")\$" "$work/ee/execution-environment.yml" ||
    ee_problems+=("execution-environment.yml does not install $(basename "$tarball") (galaxy.yml's version)")
  if ! (cd "$work/ee" && ansible-builder create -f execution-environment.yml --context "$work/ee/context") \
      >"$work/ee.log" 2>&1; then
    cat "$work/ee.log"
    ee_problems+=("ansible-builder create failed")
  else
    built=$work/ee/context/_build
    [ -f "$built/collections/$(basename "$tarball")" ] || ee_problems+=("the context lacks the collection tarball")
    grep -q "collections/$(basename "$tarball")" "$built/requirements.yml" || ee_problems+=("requirements.yml lacks the collection")
    grep -q '^PyYAML' "$built/requirements.txt" || ee_problems+=("requirements.txt lacks the Python needs")
    grep -q '^openssh-clients \[platform:rpm\]' "$built/bindep.txt" || ee_problems+=("bindep.txt lacks the system needs")
    grep -q 'ansible-core==' "$work/ee/context/"*file || ee_problems+=("the Containerfile pins no ansible-core")
    if (cd "$built" && ANSIBLE_GALAXY_DISABLE_GPG_VERIFY=1 ansible-galaxy collection install --force -r requirements.yml \
          -p "$work/ee/collections") >>"$work/ee.log" 2>&1; then
      "$venv/bin/python" "$built/scripts/introspect.py" introspect "$work/ee/collections" >"$work/ee-introspect.log" 2>&1 ||
        ee_problems+=("introspection failed: $(tail -1 "$work/ee-introspect.log")")
      grep -q "openssh-clients \[platform:rpm\]  # from collection $namespace.$name" "$work/ee-introspect.log" ||
        ee_problems+=("introspection does not find the collection's meta/execution-environment.yml")
    else
      cat "$work/ee.log"
      ee_problems+=("the context's requirements.yml does not install")
    fi
  fi
fi
if [ ${#ee_problems[@]} -gt 0 ]; then
  say "execution environment: $(IFS=';'; echo "${ee_problems[*]}")"
  failed+=("execution environment")
elif [ "$quick" != 1 ]; then
  say "execution environment: ansible-builder $(ansible-builder --version) create accepts it; the context installs $namespace.$name and names its Python and system needs; introspection reads its meta/execution-environment.yml"
fi

if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED ($(IFS=,; echo "${failed[*]}")) for $src in $(( $(date +%s) - start )) s"
  exit 1
fi
say "$namespace.$name passes Galaxy's importer and antsibull-docs in $(( $(date +%s) - start )) s"
