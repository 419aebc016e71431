# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ubuntu 26.04 LTS (issue 53): an environment on the OS's Python 3.14; TensorFlow refused by the plan."""

import json

ENV = "/opt/dlbox/envs/tools"


def test_os_is_ubuntu_2604_with_python_314(host):
    assert host.system_info.distribution == "ubuntu" and host.system_info.release == "26.04"
    assert host.check_output("python3 -c 'import sys; print(sys.version_info[:2])'") == "(3, 14)"


def test_environment_runs_the_distributions_python_314(host):
    out = host.check_output(ENV + "/bin/python -c 'import sys, six; print(sys.version_info[:2], six.__version__)'")
    assert out == "(3, 14) 1.17.0"
    assert host.package("python3.14-venv").is_installed
    base = host.check_output(ENV + "/bin/python -c 'import sys; print(sys.base_prefix)'")
    assert base == "/usr"                                   # the archive's Python, not a build in /usr/local
    manifest = json.loads(host.file(ENV + "/dlbox/manifest.json").content_string)
    assert manifest["python"].startswith("3.14.")


def test_the_systems_python_stays_externally_managed(host):
    """PEP 668: Ubuntu 26.04's python3 refuses pip installs; the role never installs into it."""
    assert host.file("/usr/lib/python3.14/EXTERNALLY-MANAGED").exists
    assert host.run("python3 -c 'import six'").rc != 0


def test_tensorflow_was_refused_by_the_plan_naming_the_python_that_would_do(host):
    text = host.file("/root/tf-refusal.txt").content_string
    assert "No TensorFlow release in data/compat.yml has wheels for Python 3.14" in text, text
    assert "Python 3.14 is ubuntu-26.04's python3" in text and "python_env_interpreters" in text, text
    assert not host.file("/opt/dlbox/envs/tf").exists       # nothing was built for it
