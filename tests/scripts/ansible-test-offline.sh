#!/usr/bin/env bash
# ansible-test bootstraps pip in each sanity venv with get-pip.py from a host that many labs (and
# these test machines) cannot reach (ansible/ansible#77304). Put a stand-in where ansible-test
# looks for its cached copy: it does what get-pip.py does, running `pip install` from a pip wheel
# on sys.path, with that wheel taken from PyPI, which is reachable.
set -euo pipefail
py=${1:?usage: ansible-test-offline.sh PYTHON}
ver=$("$py" - <<'PY'
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._internal.host_configs import NativePythonConfig
import sys
config = NativePythonConfig()
config.version = "%d.%d" % sys.version_info[:2]
print(get_venv_packages(config)["pip"])
PY
)
[ -n "$ver" ] || { echo "ansible-test-offline: cannot tell which pip ansible-test wants" >&2; exit 2; }
cache=~/.ansible/test/cache
script="$cache/get_pip_${ver//./_}.py"
wheel_dir="$cache/pip-wheel-$ver"
[ -f "$script" ] && grep -q 'dlbox.stack stand-in' "$script" && exit 0
[ -f "$script" ] && exit 0   # a real get-pip.py is already cached
mkdir -p "$wheel_dir"
"$py" -m pip download -q --no-deps --only-binary=:all: -d "$wheel_dir" "pip==$ver"
wheel=$(ls "$wheel_dir"/pip-"$ver"-*.whl)
cat > "$script" <<PY
# dlbox.stack stand-in for get-pip.py $ver (see tests/scripts/ansible-test-offline.sh).
import sys
sys.path.insert(0, "$wheel")
from pip._internal.cli.main import main
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--upgrade", "--force-reinstall"] + args))
PY
echo "ansible-test-offline: pip $ver bootstrap stand-in at $script"
