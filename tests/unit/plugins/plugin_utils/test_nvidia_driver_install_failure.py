"""A DKMS build that fails in a package's post-installation script (issue 44 red team H2), on recorded real outputs
(tests/fixtures/gpu_host/recorded/, README there: NVIDIA/nvidia-container-toolkit#361, pop-os/pop#3811):

- the rescue's words keep DKMS's "Consult /var/lib/dkms/<m>/<v>/build/make.log ..." line, the end of that log when it
  could be read, and `dpkg --configure -a` for the packages dpkg left unconfigured (the rescue used to keep apt's E: and
  dpkg: lines of stderr only, and the make.log path never reached the user);
- dpkg's half-configured (iF) and unpacked (iU) driver packages are not installed: the plan lists them (the role runs
  `dpkg --configure -a` first) and the check after the install refuses them, naming the make.log and dpkg --configure -a.
"""

from __future__ import annotations

from pathlib import Path

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.module_utils import kernel as ku
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

ROOT = Path(__file__).resolve().parents[4]
RECORDED = ROOT / "tests" / "fixtures" / "gpu_host" / "recorded"
DEBIAN = (RECORDED / "debian12-nvidia-kernel-dkms-build-failed.txt").read_text(encoding="utf-8")
POP = (RECORDED / "pop-nvidia-dkms-580-open-build-failed.txt").read_text(encoding="utf-8")
DATA = load_compat(str(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml"))
FAMILY = DATA["driver_package_names"]["family"]
E_DPKG = "E: Sub-process /usr/bin/dpkg returned an error code (1)"   # apt's words (BUILT, see the README)
LOG_DEBIAN = "/var/lib/dkms/nvidia-current/535.161.08/build/make.log"


def apt_failure(paste):
    """ansible.builtin.apt's failed result (its fail_json: msg "'<cmd>' failed: <stderr>", stdout, stderr, rc)."""
    stderr = paste + E_DPKG + "\n"
    return {"failed": True, "rc": 100, "msg": "'/usr/bin/apt-get -y install nvidia-driver' failed: %s" % stderr,
            "stdout": "", "stderr": stderr, "stdout_lines": [], "stderr_lines": stderr.splitlines()}


def test_the_make_log_path_is_found_in_the_recorded_failures():
    assert nk.failure_logs(apt_failure(DEBIAN)) == [LOG_DEBIAN]
    assert nk.failure_logs({"stdout": POP}) == ["/var/lib/dkms/nvidia/580.119.02/build/make.log"]
    assert nk.failure_logs({"msg": "No package matching 'nvidia-driver' is available"}) == []


def test_the_rescue_words_name_the_make_log_its_end_and_dpkg_configure():
    tails = [{"item": LOG_DEBIAN, "rc": 0, "stdout_lines": ["DKMS make.log for nvidia-current-535.161.08 for kernel 6.1.0-21-amd64 (x86_64)",
                                                            "nvidia/nv.c:42:10: fatal error: some-header.h: No such file or directory",
                                                            "make: *** [Makefile:82: modules] Error 2"]}]
    text = nk.install_failure(apt_failure(DEBIAN), tails)
    assert "Consult %s for more information." % LOG_DEBIAN in text
    assert "Error! Bad return status for module build on kernel: 6.1.0-21-amd64 (x86_64)" in text
    assert "The end of %s: DKMS make.log for" % LOG_DEBIAN in text and "| make: *** [Makefile:82: modules] Error 2" in text
    assert "dpkg left nvidia-kernel-dkms, nvidia-driver not configured" in text and "dpkg --configure -a" in text
    assert E_DPKG in text


def test_an_unreadable_make_log_is_said_and_output_on_stdout_counts_too():
    text = nk.install_failure({"msg": "non-zero return code", "stdout": POP, "rc": 100},
                              [{"item": "/var/lib/dkms/nvidia/580.119.02/build/make.log", "rc": 1,
                                "stderr": "tail: cannot open '/var/lib/dkms/nvidia/580.119.02/build/make.log' for reading: "
                                          "No such file or directory", "stdout_lines": []}])
    assert text.startswith("non-zero return code ")
    assert "Consult /var/lib/dkms/nvidia/580.119.02/build/make.log for more information." in text
    assert "/var/lib/dkms/nvidia/580.119.02/build/make.log could not be read (tail: cannot open" in text
    assert "dpkg left nvidia-dkms-580-open not configured" in text


# dpkg-query -W -f '${Package}\t${Version}\t${Architecture}\t${db:Status-Abbrev}\n' after #361's failure (BUILT from the
# recorded lines and dpkg's states: the DKMS package half-configured, the driver meta unpacked)
STATUS = ("nvidia-kernel-dkms\t535.161.08-2~deb12u1\tamd64\tiF \n"
          "nvidia-driver\t535.161.08-2~deb12u1\tamd64\tiU \n"
          "nvidia-smi\t535.161.08-2~deb12u1\tamd64\tii \n"
          "libcuda1\t535.161.08-2~deb12u1\tamd64\tii \n"
          "old-driver-thing\t1.0\tamd64\trc \n")


def test_dpkg_states_half_configured_unpacked_and_reinst_required_are_not_configured():
    assert [ku.dpkg_unconfigured(s) for s in ("ii", "hi", "iF", "iU", "iH", "iHR", "rc", "un", "iW", "it")] == \
        [False, False, True, True, True, True, False, False, False, False]
    got = nd.unconfigured_packages(STATUS, FAMILY)
    assert [(x["name"], x["status"]) for x in got] == [("nvidia-kernel-dkms", "iF"), ("nvidia-driver", "iU")]
    # still present (a branch change removes them, keep/rollback sees them), with their status
    assert {x["name"] for x in nd.parse_dpkg_query(STATUS)} == {"nvidia-kernel-dkms", "nvidia-driver", "nvidia-smi", "libcuda1"}


def _options(**over):
    base = dict(method="distro", branch="", kernel_modules="", profile="server", other_branch="refuse", change_branch=False,
                keep_dir="/var/backups/dlbox-nvidia-driver", in_container="skip", build_kernels=[], kernel_flavour="",
                secure_boot="auto", secure_boot_signing="auto", mok_key="", mok_certificate="",
                shim_mok_dir="/var/lib/shim-signed/mok", pin_name="dlbox-00-nvidia-driver-branch.pref", hostname="gpu1",
                distribution="Debian", distribution_version="12", kernel="6.1.0-21-amd64", check_mode=False, request_text="{}")
    base.update(over)
    return base


def _plan():
    return {"ok": True, "errors": [], "host": {"nvswitch": False},
            "stack": {"driver": {"branch": 535, "kernel_modules": "proprietary", "method": "distro", "packages": ["nvidia-driver"],
                                 "repo": None, "family": FAMILY, "min_version": "535.0", "version_available": None},
                      "fabric_manager": None}}


def test_the_next_run_lists_them_and_the_check_after_the_install_refuses_them():
    nxt = p.decide(DATA, _options(), _plan(), facts={"installed": STATUS})
    assert [x["name"] for x in nxt["installed"]["unconfigured"]] == ["nvidia-kernel-dkms", "nvidia-driver"]
    after = p.decide(DATA, _options(), _plan(), facts={"installed": STATUS, "after": STATUS})["after"]
    problem = [x for x in after["problems"] if x.startswith("dpkg has not configured")]
    assert len(problem) == 1
    assert "nvidia-kernel-dkms 535.161.08-2~deb12u1 (dpkg iF: half-configured: its post-installation script failed)" in problem[0]
    assert "nvidia-driver 535.161.08-2~deb12u1 (dpkg iU: unpacked, not configured)" in problem[0]
    assert "they are not installed" in problem[0] and "dpkg --configure -a" in problem[0]
    assert "/var/lib/dkms/nvidia-current/535.161.08/build/make.log" in problem[0]
    configured = STATUS.replace("iF ", "ii ").replace("iU ", "ii ")
    after = p.decide(DATA, _options(), _plan(), facts={"installed": configured, "after": configured})["after"]
    assert not [x for x in after["problems"] if x.startswith("dpkg has not configured")]
