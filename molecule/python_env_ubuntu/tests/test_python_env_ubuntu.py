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
    result = host.run(ENV + "/bin/dlbox-check --no-matmul --no-steps")
    assert result.rc == 0 and "PyTorch 2.13.0+cpu" in result.stdout and "no GPU visible" in result.stdout


def test_headers_and_compiler_were_installed_for_torch_compile(host):
    assert host.package("python3.11-dev").is_installed and host.package("g++").is_installed


def test_compile_on_the_pre_release_python_311_fails_naming_it(host):
    """Ubuntu 22.04's python3.11 is 3.11.0rc1: torch.compile (Dynamo) needs 3.11.0's sys.get_int_max_str_digits."""
    result = host.run(ENV + "/bin/dlbox-check --json --no-matmul --skip autocast --skip conv --skip dataloader --skip checkpoint")
    report = json.loads(result.stdout)
    (step,) = report["frameworks"][0]["steps"]
    assert report["python"] == "3.11.0" and result.rc == 4, result.stdout
    assert step["name"] == "compile" and step["ok"] is False
    assert "this Python is a pre-release, 3.11.0rc1" in step["cause"] and "released Python" in step["fix"]
    print("compile on Ubuntu 22.04's python3.11: %s" % step["cause"])
