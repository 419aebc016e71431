# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE GPU host's kernel stubs (tests/fixtures/gpu_host/bin) run on themselves against a temporary model folder
(DLBOX_FIXTURE_GPU) and host root (DLBOX_FIXTURE_ROOT), with the model's uname and an empty dpkg database:

- a loaded module lays /sys/module/nvidia/version beside /proc/driver/nvidia/version under the gpu_facts root, and a boot
  without a module takes both (bin/fixture-load, bin/reboot);
- the role's own `dkms install` / `dkms autoinstall` fail as DKMS 3 does when the build fails (state/dkms-build-fails,
  the flag bin/sync-packages honours for a package's postinst): dell/dkms v3.0.11's lines and exit codes 10 / 11."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "tests" / "fixtures" / "gpu_host"
KERNEL = "6.8.0-31-generic"
VERSION = "580.95.05"


def model(tmp_path, kernels=(KERNEL,), running=KERNEL):
    """A model folder and host root: kernels installed with headers, `running` running, nouveau blacklisted (no
    nouveau_bound), Secure Boot off, no driver package (an empty dpkg database)."""
    fx = tmp_path / "fx"
    (fx / "state").mkdir(parents=True)
    (fx / "bin").symlink_to(GPU / "bin")
    (fx / "share").mkdir()
    shutil.copy(ROOT / "tests/fixtures/doctor/proc-driver-version-open-565.txt", fx / "share/proc-driver-nvidia-version.txt")
    (fx / "root/proc/driver/nvidia").mkdir(parents=True)
    (fx / "root/sys/module").mkdir(parents=True)
    (fx / "state/boot_id").write_text("fixture-boot-1\n")
    (fx / "state/running_kernel").write_text(running + "\n")
    host = tmp_path / "host"
    (host / "boot").mkdir(parents=True)
    (host / "etc/default").mkdir(parents=True)
    (host / "run").mkdir()
    for k in kernels:
        (host / "lib/modules" / k / "build").mkdir(parents=True)
        (host / "boot" / ("vmlinuz-" + k)).write_text("FIXTURE\n")
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "uname").write_text('#!/bin/sh\ncat "$DLBOX_FIXTURE_GPU/state/running_kernel"\n')
    (fake / "dpkg-query").write_text("#!/bin/sh\nexit 0\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    env = {"DLBOX_FIXTURE_GPU": str(fx), "DLBOX_FIXTURE_ROOT": str(host), "PATH": "%s:/usr/bin:/bin" % fake}
    return fx, host, env


def stub(env, name, *args):
    return subprocess.run(["sh", str(GPU / "bin" / name)] + list(args), env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def lay_module(host, kernel=KERNEL, version=VERSION):
    ko = host / "lib/modules" / kernel / "updates/dkms/nvidia.ko"
    ko.parent.mkdir(parents=True, exist_ok=True)
    ko.write_text("# FIXTURE\nversion=%s\nsigner=/var/lib/dkms/mok.pub\n" % version)


# ------------------------------------------------------------------------------------------------------------------
# 1. /sys/module/nvidia/version under the gpu_facts root
# ------------------------------------------------------------------------------------------------------------------

def test_a_loaded_module_lays_its_sys_module_version_beside_proc(tmp_path):
    fx, host, env = model(tmp_path)
    lay_module(host)
    loaded = stub(env, "fixture-load")
    assert loaded.returncode == 0, loaded.stderr
    assert (fx / "root/sys/module/nvidia/version").read_text() == VERSION + "\n"   # one line, MODULE_VERSION
    assert VERSION in (fx / "root/proc/driver/nvidia/version").read_text().splitlines()[0]
    assert (fx / "state/loaded_version").read_text().strip() == VERSION


def test_a_boot_without_a_module_takes_both_files(tmp_path):
    fx, host, env = model(tmp_path, kernels=(KERNEL, "6.8.0-40-generic"))
    lay_module(host)
    assert stub(env, "fixture-load").returncode == 0
    booted = stub(env, "reboot")   # GRUB's default: the newest kernel, which has no module
    assert booted.returncode == 0, booted.stderr
    assert (fx / "state/running_kernel").read_text().strip() == "6.8.0-40-generic"
    assert not (fx / "root/sys/module/nvidia").exists()
    assert not (fx / "root/proc/driver/nvidia/version").exists()


def test_a_root_whose_sys_is_the_real_one_is_never_written(tmp_path):
    fx, host, env = model(tmp_path)
    shutil.rmtree(fx / "root/sys")
    real = tmp_path / "real-sys"
    (real / "module").mkdir(parents=True)
    (fx / "root/sys").symlink_to(real)
    lay_module(host)
    assert stub(env, "fixture-load").returncode == 0
    assert not (real / "module/nvidia").exists()


# ------------------------------------------------------------------------------------------------------------------
# 2. the role's own dkms install / autoinstall under state/dkms-build-fails
# ------------------------------------------------------------------------------------------------------------------

def _source(host, version=VERSION):
    conf = host / "usr/src" / ("nvidia-" + version) / "dkms.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text('PACKAGE_NAME="nvidia"\nPACKAGE_VERSION="%s"\n' % version)


def test_dkms_install_fails_as_dkms_does_when_the_build_fails(tmp_path):
    fx, host, env = model(tmp_path)
    _source(host)
    (fx / "state/dkms-build-fails").write_text("")
    run = stub(env, "dkms", "install", "-m", "nvidia", "-v", VERSION, "-k", KERNEL)
    assert run.returncode == 10, run.stdout + run.stderr
    assert "(bad exit status: 2)" in run.stdout
    assert run.stderr.splitlines() == [
        "Error! Bad return status for module build on kernel: %s (x86_64)" % KERNEL,
        "Consult /var/lib/dkms/nvidia/%s/build/make.log for more information." % VERSION]
    assert not (host / "lib/modules" / KERNEL / "updates").exists()
    assert (host / "var/lib/dkms/nvidia" / VERSION / "build/make.log").exists()
    status = stub(env, "dkms", "status")
    assert status.stdout.splitlines() == ["nvidia/%s: added" % VERSION]
    assert "FAILED (state/dkms-build-fails)" in (fx / "state/dkms.log").read_text()


def test_dkms_autoinstall_fails_with_dkms_own_summary(tmp_path):
    fx, host, env = model(tmp_path)
    _source(host)
    (fx / "state/dkms-build-fails").write_text("")
    run = stub(env, "dkms", "autoinstall", "-k", KERNEL)
    assert run.returncode == 11, run.stdout + run.stderr
    assert "dkms autoinstall on %s/x86_64 failed for nvidia(10)" % KERNEL in run.stdout.splitlines()
    assert run.stderr.splitlines()[-2:] == ["Error! One or more modules failed to install during autoinstall.",
                                            "Refer to previous errors for more information."]
    assert not (host / "lib/modules" / KERNEL / "updates").exists()


def test_dkms_builds_without_the_flag(tmp_path):
    fx, host, env = model(tmp_path)
    _source(host)
    run = stub(env, "dkms", "install", "-m", "nvidia", "-v", VERSION, "-k", KERNEL)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "version=%s" % VERSION in (host / "lib/modules" / KERNEL / "updates/dkms/nvidia.ko").read_text()
    assert stub(env, "dkms", "status").stdout.splitlines() == ["nvidia/%s, %s, x86_64: installed" % (VERSION, KERNEL)]
    again = stub(env, "dkms", "autoinstall", "-k", KERNEL)   # built already: nothing to do, no failure
    assert again.returncode == 0 and again.stdout == "" and not (fx / "state/dkms-build-fails").exists()


# ------------------------------------------------------------------------------------------------------------------
# 1. the role reads the loaded module through the root gpu_facts read (one reader): run by Ansible
# ------------------------------------------------------------------------------------------------------------------

def _tasks(path, names):
    tasks = yaml.safe_load((ROOT / "roles/nvidia_driver/tasks" / path).read_text(encoding="utf-8"))
    found = [t for t in tasks if t["name"] in names]
    assert [t["name"] for t in found] == names, "renamed in %s?" % path
    return found


def test_the_role_reads_the_loaded_module_under_the_facts_root(tmp_path):
    """On the model, after an upgrade nvidia-smi fails with the NVML mismatch (its real lines, exit 18) and the role
    falls back to /proc/driver/nvidia/version: the model's, under gpu_facts' root, as is /sys/module/nvidia/version
    (persistence.yml). A host read with root / still reads /proc and /sys themselves."""
    fx, host, env = model(tmp_path)
    lay_module(host)
    assert stub(env, "fixture-load").returncode == 0   # the model's 580.95.05 is loaded; 580.105.08 is installed
    fake = tmp_path / "smibin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'Failed to initialize NVML: Driver/library version mismatch'\n"
                                     "echo 'NVML library version: 580.105'\nexit 18\n")
    (fake / "nvidia-smi").chmod(0o755)
    (tmp_path / "ansible_collections/dlbox").mkdir(parents=True)
    (tmp_path / "ansible_collections/dlbox/stack").symlink_to(ROOT)
    absent = str(tmp_path / "absent")
    probes = {"nvidia_smi_path": absent, "lspci_path": absent, "mokutil_path": absent, "timeout": 10}
    hostvars = {"model": {"__facts": dict(probes, root=str(fx / "root"))}, "host": {"__facts": probes}}
    for h in hostvars.values():
        h.update(ansible_connection="local", ansible_python_interpreter=sys.executable)
    reboot = _tasks("reboot.yml", ["Ask nvidia-smi which driver is loaded", "Read /proc/driver/nvidia/version (the loaded module's version)",
                                   "Record the driver state (and whether a reboot is needed) for the roles after this one"])
    persistence = _tasks("persistence.yml", ["Read the version of the loaded NVIDIA module (/sys/module/nvidia/version)"])
    play = {"hosts": "all", "gather_facts": False, "vars_files": [str(ROOT / "roles/nvidia_driver/vars/main.yml")],
            "tasks": [{"name": "facts", "dlbox.stack.gpu_facts": "{{ __facts }}"}] + reboot + persistence + [
                {"name": "report", "ansible.builtin.debug": {"msg": {
                    "loaded": "{{ nvidia_driver_loaded_version }}", "state": "{{ nvidia_driver_state.state }}",
                    "proc": "{{ __nvidia_driver_proc_now.source | default(__nvidia_driver_proc_now.msg) }}",
                    "sys": "{{ __nvidia_driver_sys_version.source | default(__nvidia_driver_sys_version.msg) }}",
                    "sys_text": "{{ __nvidia_driver_sys_version.content | default('') | b64decode }}"}}}]}
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play]), encoding="utf-8")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hostvars}}), encoding="utf-8")
    run_env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
                   ANSIBLE_COLLECTIONS_PATH=str(tmp_path), ANSIBLE_HOME=str(tmp_path / "ansible-home"),
                   ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), PATH="%s:%s" % (fake, os.environ["PATH"]))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "play.yml"), "-e",
                           json.dumps({"__nvidia_driver_version": "580.105.08", "__nvidia_driver_persistenced_manage": True})],
                          capture_output=True, text=True, env=run_env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = json.loads(proc.stdout[proc.stdout.index("{"):])
    report = [t for t in out["plays"][0]["tasks"] if t["task"]["name"] == "report"][0]["hosts"]
    assert report["model"]["msg"] == {
        "loaded": VERSION, "state": "pending_reboot", "proc": str(fx / "root/proc/driver/nvidia/version"),
        "sys": str(fx / "root/sys/module/nvidia/version"), "sys_text": VERSION + "\n"}
    # read, or "file not found: <path>" on a machine without the driver
    assert report["host"]["msg"]["proc"].split()[-1] == "/proc/driver/nvidia/version"
    assert report["host"]["msg"]["sys"].split()[-1] == "/sys/module/nvidia/version"


# ------------------------------------------------------------------------------------------------------------------
# 4. the kernel GRUB boots next (fixture-lib.sh boot_kernel), as grub-mkconfig's grub.cfg decides it
# ------------------------------------------------------------------------------------------------------------------

OLD, NEW = "6.8.0-31-generic", "6.8.0-40-generic"
UUID = "0f8c1b1e-4b5a-4f6e-9d7c-2a3b4c5d6e7f"


def _grub(host, default=None, env=None, dropin=None):
    if default is not None:
        (host / "etc/default/grub").write_text('GRUB_TIMEOUT=0\nGRUB_DEFAULT="%s"\nGRUB_CMDLINE_LINUX=""\n' % default)
    if dropin is not None:
        (host / "etc/default/grub.d").mkdir(parents=True, exist_ok=True)
        (host / "etc/default/grub.d/50-dlbox.cfg").write_text(dropin)
    if env is not None:   # grub-editenv's layout: header, name=value lines, '#' padding to 1024 bytes
        (host / "boot/grub").mkdir(parents=True, exist_ok=True)
        text = "# GRUB Environment Block\n" + "".join("%s=%s\n" % kv for kv in env.items())
        (host / "boot/grub/grubenv").write_text(text + "#" * (1024 - len(text)))


def _boot_kernel(env):
    return subprocess.run(["sh", "-c", '. "$DLBOX_FIXTURE_GPU/bin/fixture-lib.sh"; boot_kernel'], env=env,
                          capture_output=True, text=True, check=True).stdout.strip()


TITLE_OLD = "Advanced options for Ubuntu>Ubuntu, with Linux %s" % OLD
ID_OLD = "gnulinux-advanced-%s>gnulinux-%s-advanced-%s" % (UUID, OLD, UUID)
GRUB_CASES = [
    # (GRUB_DEFAULT, grubenv, grub.d drop-in, the kernel GRUB boots)
    (None, None, None, NEW),                                   # no /etc/default/grub: entry 0, the newest
    ("0", None, None, NEW),
    (TITLE_OLD, None, None, OLD),                              # a title (grub-set-default(8)'s example form)
    (ID_OLD, None, None, OLD),                                 # an id (what Ubuntu's grub-reboot users paste)
    ("Advanced options for Ubuntu>Ubuntu, with Linux 6.8.0-9-generic", None, None, NEW),   # a kernel that is gone
    ("Advanced options for Ubuntu>Ubuntu, with Linux %s-64k" % OLD, None, None, NEW),     # another flavour, gone
    ("saved", {"saved_entry": ID_OLD}, None, OLD),             # grub-set-default
    ("saved", {}, None, NEW),                                  # saved, nothing saved: entry 0
    ("0", {"next_entry": TITLE_OLD}, None, OLD),               # grub-reboot: next_entry wins over GRUB_DEFAULT
    ("saved", {"saved_entry": "0", "next_entry": ID_OLD}, None, OLD),
    ("0", None, 'GRUB_DEFAULT="%s"\n' % TITLE_OLD, OLD),      # /etc/default/grub.d/*.cfg is read last
]


@pytest.mark.parametrize("default, grubenv, dropin, expected", GRUB_CASES)
def test_the_model_boots_the_kernel_grub_boots(tmp_path, default, grubenv, dropin, expected):
    fx, host, env = model(tmp_path, kernels=(OLD, NEW), running=OLD)
    _grub(host, default, grubenv, dropin)
    assert _boot_kernel(env) == expected


@pytest.mark.parametrize("default, grubenv, dropin, expected", GRUB_CASES)
def test_the_model_and_the_role_s_facts_agree_on_the_next_kernel(tmp_path, default, grubenv, dropin, expected):
    """The role's reading (nvidia_driver_facts: module_utils/_nvidia_driver grub_next_boot) names the kernel the model
    then boots, for every case above."""
    from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
    fx, host, env = model(tmp_path, kernels=(OLD, NEW), running=OLD)
    _grub(host, default, grubenv, dropin)
    texts = [p.read_text() for p in [host / "etc/default/grub"] + sorted((host / "etc/default/grub.d").glob("*.cfg"))
             if p.is_file()]
    envtext = (host / "boot/grub/grubenv").read_text() if (host / "boot/grub/grubenv").is_file() else ""
    role = nd.grub_next_boot(nd.grub_default(texts), nd.parse_grubenv(envtext), [OLD, NEW], NEW)["release"]
    assert role == _boot_kernel(env) == expected


def test_a_grub_reboot_entry_boots_once(tmp_path):
    fx, host, env = model(tmp_path, kernels=(OLD, NEW), running=NEW)
    _grub(host, "0", {"saved_entry": "", "next_entry": TITLE_OLD})
    assert stub(env, "reboot").returncode == 0
    assert (fx / "state/running_kernel").read_text().strip() == OLD
    grubenv = (host / "boot/grub/grubenv").read_text()
    assert len(grubenv) == 1024 and "\nnext_entry=\n" in grubenv and "\nsaved_entry=\n" in grubenv
    assert stub(env, "reboot").returncode == 0
    assert (fx / "state/running_kernel").read_text().strip() == NEW


@pytest.mark.parametrize("recovery, entry", [("", "1>2"), ("", "1>3"), ("GRUB_DISABLE_RECOVERY=true\n", "1>1")])
def test_a_submenu_position_counts_the_recovery_entries(tmp_path, recovery, entry):
    """10_linux.in: under "Advanced options", each kernel newest first, then its recovery entry unless
    GRUB_DISABLE_RECOVERY=true: the second kernel is 1>2 (1>3 its recovery entry), or 1>1 without recovery entries."""
    fx, host, env = model(tmp_path, kernels=(OLD, NEW), running=NEW)
    _grub(host, entry, dropin=recovery or None)
    assert _boot_kernel(env) == OLD


# ------------------------------------------------------------------------------------------------------------------
# 3. mokutil's states (lcp/mokutil src/mokutil.c) and what a boot does with a queued key
# ------------------------------------------------------------------------------------------------------------------

CERT = "/var/lib/dkms/mok.pub"


def _mok_model(tmp_path, secure_boot=True):
    fx, host, env = model(tmp_path)
    (host / "var/lib/dkms").mkdir(parents=True)
    (host / CERT.lstrip("/")).write_bytes(b"\x30\x82FIXTURE-DER")
    if secure_boot:
        (fx / "state/secure_boot").write_text("")
    return fx, host, env


def _mokutil(env, *args, stdin=""):
    return subprocess.run(["sh", str(GPU / "bin/mokutil")] + list(args), env=env, input=stdin, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.parametrize("flags, stdout, stderr, rc", [
    (["secure_boot"], "SecureBoot enabled\n", "", 0),
    ([], "SecureBoot disabled\n", "", 0),
    (["secure_boot", "setup-mode"], "SecureBoot disabled\nPlatform is in Setup Mode\n", "", 0),
    (["secure_boot", "shim-validation-off"], "SecureBoot enabled\nSecureBoot validation is disabled in shim\n", "", 0),
    (["no-efi"], "", "EFI variables are not supported on this system\n", 1),
])
def test_sb_state_answers_as_mokutil_does(tmp_path, flags, stdout, stderr, rc):
    fx, host, env = _mok_model(tmp_path, secure_boot=False)
    for flag in flags:
        (fx / "state" / flag).write_text("")
    run = _mokutil(env, "--sb-state")
    assert (run.stdout, run.stderr, run.returncode) == (stdout, stderr, rc)


def test_a_key_imported_is_pending_listed_and_answered_as_such(tmp_path):
    from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
    fx, host, env = _mok_model(tmp_path)
    before = _mokutil(env, "--test-key", CERT)
    # mokutil 0.6.0-0.7.2's exit codes (src/mokutil.c test_key): 0 not enrolled, 1 enrolled or requested
    assert (before.stdout, before.returncode) == ("%s is not enrolled\n" % CERT, 0)
    assert nd.parse_mokutil_test_key(before.stdout) == "not-enrolled"
    assert _mokutil(env, "--list-new").stdout == ""
    imported = _mokutil(env, "--import", CERT, stdin="secret\nsecret\n")
    assert imported.returncode == 0 and imported.stdout == "input password: \ninput password again: \n", imported.stderr
    pending = _mokutil(env, "--test-key", CERT)
    assert (pending.stdout, pending.returncode) == ("%s is already in the enrollment request\n" % CERT, 1)
    assert nd.parse_mokutil_test_key(pending.stdout) == "pending"
    listed = _mokutil(env, "--list-new").stdout.splitlines()
    sha1 = hashlib.sha1((host / CERT.lstrip("/")).read_bytes()).hexdigest()
    assert listed[:2] == ["[key 1]", "SHA1 Fingerprint: " + ":".join(sha1[i:i + 2] for i in range(0, 40, 2))]
    again = _mokutil(env, "--import", CERT, "--root-pw")
    assert (again.stdout, again.returncode) == ("SKIP: %s is already in the enrollment request\n" % CERT, 0)
    assert (fx / "state/mok-pending").read_text() == CERT + "\n"


@pytest.mark.parametrize("stdin, message", [("", "password should be 1~256 characters"),
                                            ("one\ntwo\nthree\nfour\n", "password doesn't match")])
def test_an_import_without_a_password_aborts(tmp_path, stdin, message):
    fx, host, env = _mok_model(tmp_path)
    run = _mokutil(env, "--import", CERT, stdin=stdin)
    assert run.returncode == 255 and run.stderr.splitlines() == [message] * 3 + ["Abort"]
    assert not (fx / "state/mok-pending").exists()


def test_a_missing_certificate_is_not_answered(tmp_path):
    fx, host, env = _mok_model(tmp_path)
    run = _mokutil(env, "--test-key", "/root/none.der")
    assert (run.stderr, run.returncode) == ("Failed to open /root/none.der\n", 255)


def _signed_module(host, signer=CERT):
    ko = host / "lib/modules" / KERNEL / "updates/dkms/nvidia.ko"
    ko.parent.mkdir(parents=True, exist_ok=True)
    ko.write_text("version=%s\nsigner=%s\n" % (VERSION, signer))


@pytest.mark.parametrize("console, enrolled", [(False, False), (True, True)])
def test_a_boot_enrols_a_queued_key_only_at_the_console(tmp_path, console, enrolled):
    """MokManager enrols the key when a person confirms it; else its countdown continues the boot and the request
    is deleted: the module signed with that key is rejected, and the next boot asks nothing."""
    fx, host, env = _mok_model(tmp_path)
    _signed_module(host)
    (host / "etc/modprobe.d").mkdir(parents=True)
    (host / "etc/modprobe.d/blacklist-nouveau.conf").write_text("blacklist nouveau\n")
    os.utime(host / "etc/modprobe.d/blacklist-nouveau.conf", (1, 1))
    (fx / "state" / ("initramfs-" + KERNEL)).write_text("2\n")
    assert _mokutil(env, "--import", CERT, "--root-pw").returncode == 0
    if console:
        (fx / "state/mok-console-enrols").write_text("")
    assert stub(env, "reboot").returncode == 0
    assert not (fx / "state/mok-pending").exists()
    answer = _mokutil(env, "--test-key", CERT).stdout
    assert answer == ("%s is already enrolled\n" % CERT if enrolled else "%s is not enrolled\n" % CERT)
    loaded = (fx / "state/loaded_version").read_text().strip() if (fx / "state/loaded_version").exists() else ""
    assert loaded == (VERSION if enrolled else "")
    if not enrolled:
        # Secure Boot's lockdown, no module.sig_enforce: the lockdown's refusal (fixture-load: kernel/module/signing.c)
        assert "Lockdown: modprobe: unsigned module loading is restricted" in (fx / "state/dmesg").read_text()


def test_an_enrolled_key_the_kernel_does_not_trust_for_modules_is_rejected(tmp_path):
    fx, host, env = _mok_model(tmp_path)
    _signed_module(host)
    (fx / "state/mok-enrolled").write_text(CERT + "\n")
    (fx / "state/mok-untrusted").write_text("")
    run = stub(env, "fixture-load")
    assert run.returncode == 1 and "Operation not permitted" in run.stderr   # the lockdown's refusal (no sig_enforce)
    (fx / "state/sig-enforce").write_text("")
    run = stub(env, "fixture-load")
    assert run.returncode == 1 and "Key was rejected by service" in run.stderr   # module.sig_enforce=1
    assert "Loading of module with unavailable key is rejected" in (fx / "state/dmesg").read_text()
    (fx / "state/sig-enforce").unlink()
    assert _mokutil(env, "--test-key", CERT).stdout == "%s is already enrolled\n" % CERT   # enrolled all the same
    (fx / "state/mok-untrusted").unlink()
    assert stub(env, "fixture-load").returncode == 0


@pytest.mark.parametrize("flag, loads", [(None, False), ("shim-validation-off", True), ("setup-mode", True)])
def test_the_kernel_enforces_signatures_only_when_it_sees_secure_boot(tmp_path, flag, loads):
    """An unsigned module under Secure Boot: refused by the lockdown, unless shim's validation is off (MokSBStateRT)
    or the platform is in Setup Mode (Linux efi_get_secureboot), where it loads."""
    fx, host, env = _mok_model(tmp_path)
    _signed_module(host, signer="")
    if flag:
        (fx / "state" / flag).write_text("")
    run = stub(env, "fixture-load")
    assert (run.returncode == 0) == loads, run.stderr
    if not loads:
        assert "could not insert 'nvidia': Operation not permitted" in run.stderr


@pytest.mark.parametrize("secure_boot, enforce, signer, answer, dmesg", [
    # Secure Boot's lockdown alone: one refusal for both, the lockdown's (EPERM)
    (True, False, "", "Operation not permitted", "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7"),
    (True, False, CERT, "Operation not permitted", "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7"),
    # module.sig_enforce=1 (or CONFIG_MODULE_SIG_FORCE): "Loading of <reason> is rejected", EKEYREJECTED, both
    (True, True, "", "Key was rejected by service", "Loading of unsigned module is rejected"),
    (True, True, CERT, "Key was rejected by service", "Loading of module with unavailable key is rejected"),
    (False, True, "", "Key was rejected by service", "Loading of unsigned module is rejected"),
    # neither: the module loads (tainted)
    (False, False, "", None, None),
])
def test_lockdown_and_sig_enforce_refuse_with_their_own_words(tmp_path, secure_boot, enforce, signer, answer, dmesg):
    """kernel/module/signing.c module_sig_check (issue 44 red team LOW): an unsigned module or one of a key the kernel
    lacks is refused by is_module_sig_enforced() ("Loading of %s is rejected", -EKEYREJECTED) or else by the lockdown
    (security_locked_down(LOCKDOWN_MODULE_SIGNATURE), -EPERM), never with the other's words."""
    fx, host, env = _mok_model(tmp_path)
    _signed_module(host, signer=signer)
    if not secure_boot:
        (fx / "state/secure_boot").unlink()
    if enforce:
        (fx / "state/sig-enforce").write_text("")
    run = stub(env, "fixture-load")
    if answer is None:
        assert run.returncode == 0, run.stderr
        return
    assert run.returncode == 1 and run.stderr.strip() == "modprobe: ERROR: could not insert 'nvidia': %s" % answer
    logged = (fx / "state/dmesg").read_text().splitlines()[-1]
    assert logged.endswith("] " + dmesg), logged


# ------------------------------------------------------------------------------------------------------------------
# 6. the DKMS module name is the packaging's: Debian's own packages register nvidia-current[-open]
# ------------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("package, version, module, upstream", [
    ("nvidia-kernel-dkms", "525.147.05-4~deb12u1", "nvidia-current", "525.147.05"),     # Debian 12's own
    ("nvidia-open-kernel-dkms", "550.163.01-2", "nvidia-current-open", "550.163.01"),   # Debian's open modules
    ("nvidia-kernel-dkms", "580.95.05-1", "nvidia", "580.95.05"),                       # NVIDIA's Debian repository
    ("nvidia-kernel-open-dkms", "580.95.05-1", "nvidia", "580.95.05"),
    ("nvidia-dkms-580-open", "580.95.05-0ubuntu1", "nvidia", "580.95.05"),              # Ubuntu's
])
def test_dkms_registers_the_packaging_s_module_name(tmp_path, package, version, module, upstream):
    fx, host, env = model(tmp_path)
    (tmp_path / "fakebin/dpkg-query").write_text("#!/bin/sh\necho 'ii  %s %s'\n" % (package, version))
    assert stub(env, "dkms", "status").stdout == "%s/%s: added\n" % (module, upstream)
    built = stub(env, "dkms", "autoinstall", "-k", KERNEL)
    assert built.returncode == 0, built.stdout + built.stderr
    assert stub(env, "dkms", "status").stdout == "%s/%s, %s, x86_64: installed\n" % (module, upstream, KERNEL)
    assert (host / "lib/modules" / KERNEL / "updates/dkms" / (module + ".ko")).is_file()
    assert stub(env, "fixture-load").returncode == 0   # loaded as nvidia (Debian's modprobe.d alias)
    assert (fx / "state/loaded_version").read_text().strip() == upstream
