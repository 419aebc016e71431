#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Build the python_env scenario's wheelhouse once, with the collection's own builder
# (playbooks/wheelhouse.yml), into build/wheelhouse/python_env. Keyed by the request and this script:
# a second run downloads nothing and does not even start Ansible.
#
#   tests/scripts/test-wheelhouse.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
vars=molecule/python_env/vars/wheelhouse.yml
dir=build/wheelhouse/python_env
key=$(cat "$0" "$vars" | sha256sum | cut -c1-12)
# Several scenarios (python_env, python_env_ubuntu, fitness, doctor) call this at once in make test: one builds,
# the others wait for it and then reuse.
mkdir -p build/wheelhouse
exec 9>build/wheelhouse/python_env.build-lock
flock 9
if [ -f "$dir/.complete-$key" ]; then
  echo "test-wheelhouse: reuse $dir ($key)"
  exit 0
fi
mkdir -p "$dir"
export PATH="$root/.venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH=${ANSIBLE_COLLECTIONS_PATH:-$root/build/collections}
start=$(date +%s)
ansible-playbook playbooks/wheelhouse.yml -e "@$vars" -e "python_env_wheelhouse_dir=$root/$dir" >"$dir/build.log" 2>&1 \
  || { tail -30 "$dir/build.log" >&2; exit 1; }
ls "$dir"/*.whl >/dev/null
rm -f "$dir"/.complete-*
touch "$dir/.complete-$key"
echo "test-wheelhouse: built $dir ($key) in $(( $(date +%s) - start )) s: $(find "$dir" -maxdepth 1 -name '*.whl' | wc -l) wheels"
