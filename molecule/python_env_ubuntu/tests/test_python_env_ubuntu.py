# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ubuntu 22.04: the environment's Python 3.11 came from the distribution (universe), not from a build."""

import json

ENV = "/opt/dlbox/envs/torch"


def test_environment_runs_python_311_with_torch(host):
    out = host.check_output(ENV + "/bin/python -c 'import sys, torch; print(sys.version_info[:2], torch.__version__)'")
    assert out == "(3, 11) 2.13.0+cpu"


def test_python_311_is_the_distributions_and_python3_is_still_310(host):
    assert host.package("python3.11-venv").is_installed
    assert host.run("dpkg -S /usr/bin/python3.11").rc == 0  # packaged, not built into /usr/local
    assert host.check_output("python3 -c 'import sys; print(sys.version_info[:2])'") == "(3, 10)"
    assert host.run("python3 -c 'import torch'").rc != 0 and host.run("python3.11 -c 'import torch'").rc != 0


def test_manifest_and_check(host):
    manifest = json.loads(host.file(ENV + "/dlbox/manifest.json").content_string)
    assert manifest["python"].startswith("3.11.") and manifest["stack"]["python"] == {"version": "3.11"}
    result = host.run(ENV + "/bin/dlbox-check --no-matmul")
    assert result.rc == 0 and "PyTorch 2.13.0+cpu" in result.stdout and "no GPU visible" in result.stdout
