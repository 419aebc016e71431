# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real tensorflow-cpu from PyPI in a python_env environment (make test-heavy)."""

import json

ENV = "/opt/dlbox/envs/tf"


def test_tensorflow_cpu_imports_and_multiplies(host):
    result = host.run(ENV + "/bin/dlbox-check --json")
    assert result.rc == 0, result.stdout + result.stderr
    tf = json.loads(result.stdout)["frameworks"][0]
    assert tf["framework"] == "TensorFlow" and tf["gpu_visible"] is False
    assert tf["matmul"]["device"] == "cpu" and tf["matmul"]["tflops"] > 0
    print("TensorFlow %s CPU matmul: %s TFLOP/s" % (tf["version"], tf["matmul"]["tflops"]))
    (xla,) = tf["steps"]  # a tf.function compiled with XLA, on the CPU
    assert (xla["name"], xla["device"], xla["ok"]) == ("xla", "cpu", True), xla
    print("TensorFlow XLA step: %.2f s" % xla["seconds"])


def test_the_plans_tensorflow_cpu_was_installed(host):
    manifest = json.loads(host.file(ENV + "/dlbox/manifest.json").content_string)
    version = manifest["stack"]["tensorflow"]["version"]
    assert manifest["requirements"] == ["tensorflow-cpu==%s" % version]
    assert manifest["frameworks"] == {"TensorFlow": version}
    assert manifest["wheels"]["majors"] == []  # the CPU build carries no nvidia-* wheels


def test_lock_has_a_hash_for_every_package(host):
    lock = host.file(ENV + "/dlbox/requirements.lock").content_string
    pins = [line for line in lock.splitlines() if "==" in line and not line.startswith("#")]
    assert any(p.startswith("tensorflow-cpu==") for p in pins)
    assert len([line for line in lock.splitlines() if "--hash=sha256:" in line]) >= len(pins) > 10
