# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What playbooks/workstation.yml's end-of-run summary (dlbox_summary_output's JSON) must say on a CPU-only host.

One set of checks for the two tests that run the playbook on the CPU-only test images: the README quickstart test
(tests/integration/test_quickstart.py, `make test`, every OS the README names) and the Molecule scenario workstation
(molecule/workstation/tests, `make test-heavy`).
"""

# the roles workstation.yml skips on a host without an NVIDIA GPU, in its order
SKIPPED = ["nvidia_driver", "cuda", "cudnn", "nccl", "docker", "nvidia_container_toolkit", "python_env"]
NOT_INSTALLED = ("driver", "cuda", "cudnn", "nccl", "docker", "container_toolkit", "environments", "kernel_headers")


def check_first_run(summary, build_essential_version):
    """The first run on a CPU-only host: common alone, build-essential installed, nothing pending (JSON and text)."""
    assert summary is not None, "no summary JSON"
    assert summary["ran"] == ["common"]
    assert [s["role"] for s in summary["skipped"]] == SKIPPED
    assert all(s["why"].startswith("no NVIDIA GPU on this host") for s in summary["skipped"])
    installed = summary["installed"]
    assert build_essential_version and installed["build_tools"] == "build-essential %s" % build_essential_version
    for part in NOT_INSTALLED:
        assert installed[part] is None, part
    changed = {c["component"]: c for c in summary["changed"]}
    assert changed["build_tools"]["before"] is None and changed["build_tools"]["after"] == installed["build_tools"]
    assert summary["pending"] == []
    text = summary["text"]
    assert text[0].startswith("Summary for ")
    assert "Installed now:" in text
    assert any(line.startswith("  build tools:") and "-> build-essential" in line for line in text)
    assert "Roles run: common" in text
    assert any(line.startswith("  python_env: no NVIDIA GPU on this host: PyTorch ") and "planned but not installed" in line
               for line in text)
    assert text[-1] == "Pending: nothing"


def check_second_run(first, again):
    """The same playbook again: nothing changed, the same things installed."""
    assert again is not None, "no summary JSON for the second run"
    assert again["changed"] == []
    assert "Changed in this run: nothing" in again["text"]
    assert again["installed"] == first["installed"]
