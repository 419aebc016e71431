"""The end-of-run summary (plugins/plugin_utils/workstation_summary.py) from the summary role's probe."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import workstation_summary as ws
from ansible_collections.dlbox.stack.plugins.plugin_utils.workstation_plan import workstation_roles


def probe(packages=(), cuda=(), envs=(), loaded="", reboot=()):
    lines = ["## packages"] + ["ii \t%s\t%s" % p for p in packages]
    lines += ["rc \tnvidia-driver-535\t535.1-1"]                       # removed, config left: not installed
    lines += ["## cuda"] + ["/usr/local/cuda-%s" % c for c in cuda]
    lines += ["## envs"] + ["%s\t%s" % e for e in envs]
    lines += ["## driver_loaded"] + ([loaded] if loaded else [])
    lines += ["## reboot_required"] + list(reboot)
    return "\n".join(lines) + "\n"


CPU_PLAN = {"ok": True, "host": {"gpu_count": 0, "gpus": []},
            "stack": {"driver": None, "cuda": None, "cudnn": None, "nccl": None, "container_toolkit": None,
                      "pytorch": {"version": "2.15.0", "variant": "cpu"}, "tensorflow": None}}


def test_cpu_only_first_run():
    """A CPU-only host: common and the plan's CPU framework environment (issue 45), the GPU roles skipped."""
    before = probe([("ca-certificates", "20230311")])
    after = probe([("ca-certificates", "20230311"), ("build-essential", "12.9")],
                  envs=[("torch", "/opt/dlbox/envs/torch/dlbox/manifest.json")])
    summary = ws.summarize(before, after, workstation_roles(CPU_PLAN))
    assert summary["installed"]["build_tools"] == "build-essential 12.9"
    assert summary["installed"]["driver"] is None and summary["installed"]["environments"] == "torch"
    assert {"component": "build_tools", "before": None, "after": "build-essential 12.9"} in summary["changed"]
    assert summary["ran"] == ["common", "python_env"]
    assert [s["role"] for s in summary["skipped"]] == ["nvidia_driver", "cuda", "cudnn", "nccl", "docker",
                                                       "nvidia_container_toolkit"]
    assert summary["pending"] == []
    text = ws.summary_text(summary, "box")
    assert text[0] == "Summary for box:"
    assert "  build tools:       - -> build-essential 12.9" in text
    assert "Roles run: common, python_env" in text
    assert text[-1] == "Pending: nothing"


def test_second_run_changes_nothing():
    same = probe([("build-essential", "12.9")])
    summary = ws.summarize(same, same)
    assert summary["changed"] == [] and summary["skipped"] == [] and summary["ran"] == []
    assert "Changed in this run: nothing" in ws.summary_text(summary)


def test_gpu_host_components_and_pending_reboot():
    after = probe([("nvidia-driver-580-open", "580.95.05-0ubuntu1"), ("cuda-toolkit-13-0", "13.0.2-1"),
                   ("libcudnn9-cuda-13", "9.26.0.51-1"), ("libnccl2", "2.28.9-1+cuda13.0"), ("docker-ce", "5:29.1.0-1"),
                   ("nvidia-container-toolkit", "1.18.2-1"), ("linux-headers-6.8.0-90-generic", "6.8.0-90.91"),
                   ("linux-headers-generic", "6.8.0-90.91"), ("linux-headers-common", "x")],
                  cuda=["13.0"], envs=[("torch", "/opt/dlbox/envs/torch/dlbox/manifest.json"), ("broken", "")],
                  reboot=["linux-image-6.8.0-90-generic"])
    now = ws.summarize(probe(), after)
    got = now["installed"]
    assert got["driver"] == "nvidia-driver-580-open 580.95.05-0ubuntu1"
    assert got["cuda"] == "cuda-toolkit-13-0 13.0.2-1 (/usr/local/cuda-13.0)"
    assert got["cudnn"].startswith("libcudnn9-cuda-13 ") and got["nccl"].startswith("libnccl2 ")
    assert got["docker"] == "docker-ce 5:29.1.0-1" and got["container_toolkit"] == "nvidia-container-toolkit 1.18.2-1"
    assert got["environments"] == "torch"                    # an environment without its manifest is not complete
    assert "linux-headers-common" not in got["kernel_headers"]
    assert now["pending"] == ["pending reboot: the NVIDIA driver is installed but its kernel module is not loaded",
                              "reboot: the system asks for one (/var/run/reboot-required: linux-image-6.8.0-90-generic)"]
    loaded = ws.summarize(after, probe(after and [("nvidia-driver-580-open", "580.95.05-0ubuntu1")],
                                       loaded="NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05"))
    assert loaded["pending"] == [] and loaded["next"] == []
    assert now["next"] == ["reboot, then run the same command again (e.g. make workstation): that run runs every GPU check"]
    assert "Next:" in ws.summary_text(now) and "Next:" not in ws.summary_text(loaded)


def test_driver_state_of_the_driver_role_wins_over_the_proc_probe():
    """nvidia_driver's nvidia_driver_state says pending reboot / loaded (nvidia-smi answers), whatever /proc shows."""
    from ansible_collections.dlbox.stack.plugins.plugin_utils import driver_state as ds
    after = probe([("nvidia-open", "580.95.05-1")])
    pending = ws.summarize(probe(), after, driver_state=ds.from_probes("580.95.05", {"rc": 9, "stdout": ""}, ""))
    assert pending["driver_state"] == "pending_reboot"
    assert pending["pending"] == ["pending reboot: NVIDIA driver 580.95.05 is installed, its kernel module is not loaded "
                                  "yet; the GPU checks wait for it"]
    text = "\n".join(ws.summary_text(pending, "gpu1"))
    assert "pending reboot" in text and "reboot, then run the same command again" in text
    older = ws.summarize(after, after, driver_state=ds.from_probes("580.95.05", {"rc": 0, "stdout": "570.86.15"}, ""))
    assert older["pending"][0].endswith("module 570.86.15 is still loaded")
    loaded = ws.summarize(after, after, driver_state=ds.from_probes("580.95.05", {"rc": 0, "stdout": "580.95.05"}, ""))
    assert loaded["pending"] == [] and loaded["next"] == [] and loaded["driver_state"] == "loaded"
    assert "Pending: nothing" in ws.summary_text(loaded)


def test_held_packages_are_installed():
    """The driver role holds its packages (dpkg status "hi"): they are installed all the same; "rc" is not."""
    text = "## packages\nhi \tnvidia-open-580\t580.95.05-1ubuntu1\nrc \tnvidia-driver-535\t535.1-1\n## cuda\n"
    assert ws.installed(ws.parse_probe(text))["driver"] == "nvidia-open-580 580.95.05-1ubuntu1"


def test_not_a_probe_is_an_error():
    with pytest.raises(ws.SummaryError, match="expected the summary role's probe output"):
        ws.parse_probe("hello")
    with pytest.raises(ws.SummaryError, match="unknown probe section 'disks'"):
        ws.parse_probe("## packages\n## disks\n")
