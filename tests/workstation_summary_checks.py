# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What playbooks/workstation.yml's end-of-run summary (dlbox_summary_output's JSON) must say on a CPU-only host.

One set of checks for the two tests that run the playbook on the CPU-only test images: the README quickstart test
(tests/integration/test_quickstart.py, `make test`, every OS the README names) and the Molecule scenario workstation
(molecule/workstation/tests, `make test-heavy`).

On a host without a GPU the plan's framework environment is its CPU build, and workstation.yml builds it by default
(issue 45: "the CPU default a newcomer meets"): common and python_env run, the GPU roles are skipped.
"""

# the roles workstation.yml skips on a host without an NVIDIA GPU, in its order
SKIPPED = ["nvidia_driver", "cuda", "cudnn", "nccl", "docker", "nvidia_container_toolkit"]
NOT_INSTALLED = ("driver", "cuda", "cudnn", "nccl", "docker", "container_toolkit", "kernel_headers")


def check_first_run(summary, build_essential_version, torch_version):
    """The first run on a CPU-only host: common and the CPU PyTorch environment 'torch' (its dlbox-check passed on
    the CPU: torch_version, no GPU visible, a CPU matmul), build-essential installed, nothing pending (JSON and text)."""
    assert summary is not None, "no summary JSON"
    assert summary["ran"] == ["common", "python_env"]
    assert [s["role"] for s in summary["skipped"]] == SKIPPED
    assert all(s["why"].startswith("no NVIDIA GPU on this host") for s in summary["skipped"])
    installed = summary["installed"]
    assert build_essential_version and installed["build_tools"] == "build-essential %s" % build_essential_version
    for part in NOT_INSTALLED:
        assert installed[part] is None, part
    assert installed["environments"] == "torch"
    changed = {c["component"]: c for c in summary["changed"]}
    assert changed["build_tools"]["before"] is None and changed["build_tools"]["after"] == installed["build_tools"]
    assert changed["environments"]["before"] is None and changed["environments"]["after"] == "torch"
    assert summary["pending"] == []
    check = summary["python_env_checks"]["torch"]          # the environment's dlbox-check --json, as the role ran it
    assert check["status"] == 0, check
    framework = check["frameworks"][0]
    assert framework["framework"] == "PyTorch" and framework["version"] == torch_version, framework
    assert not framework["gpu_visible"] and not framework.get("cuda")
    assert framework["matmul"]["device"] == "cpu" and float(framework["matmul"]["tflops"]) > 0
    text = summary["text"]
    assert text[0].startswith("Summary for ")
    assert "Installed now:" in text
    assert any(line.startswith("  build tools:") and "-> build-essential" in line for line in text)
    assert "Roles run: common, python_env" in text
    assert text[-1] == "Pending: nothing"


def check_second_run(first, again):
    """The same playbook again: nothing changed, the same things installed."""
    assert again is not None, "no summary JSON for the second run"
    assert again["changed"] == []
    assert "Changed in this run: nothing" in again["text"]
    assert again["installed"] == first["installed"]
