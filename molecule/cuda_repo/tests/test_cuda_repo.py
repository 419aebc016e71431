"""dlbox.stack.cuda_repo against the FIXTURE CUDA repository (tests/aptrepo cuda-debian12 on 127.0.0.1:8089).

nvidia-smi and libnvidia-ml1 535.x are Debian 12's REAL packages; the repository's 580.95.05-1 ones under the same
names are fixtures, as are cuda-keyring, the CUDA toolkits and NCCL.
"""

import base64
import json
import re

import pytest

REPO = "http://127.0.0.1:8089/cuda-debian12/"
KEYRING = "/etc/apt/keyrings/dlbox-cuda-archive-keyring.gpg"
KEYRING_LIST = "/etc/apt/sources.list.d/cuda-debian12-x86_64.list"
DIVERTED = "/var/lib/dlbox/cuda-repo/diverted/cuda-debian12-x86_64.list"
BASE_PREF = "/etc/apt/preferences.d/00-dlbox-cuda-repo.pref"


def record(host, name):
    return json.loads(host.file(f"/root/dlbox-{name}.json").content_string)


def policy(host, package, *options):
    """{'installed': ..., 'candidate': ..., 'versions': {version: priority}} from apt-cache policy."""
    out = host.check_output(" ".join(["apt-cache", *options, "policy", package]))
    versions = {m.group(1): int(m.group(2)) for m in re.finditer(r"^ (?:\*\*\*| {3}) (\S+) (-?\d+)$", out, re.M)}
    return {"installed": re.search(r"Installed: (\S+)", out).group(1),
            "candidate": re.search(r"Candidate: (\S+)", out).group(1), "versions": versions}


def debian_version(host, package):
    """The newest version of PACKAGE that Debian's own archive offers (the sources other than the fixture)."""
    out = host.check_output(f"apt-cache madison {package}")
    return [line.split("|")[1].strip() for line in out.splitlines() if "deb.debian.org" in line][0]


# --- key, source, cuda-keyring ----------------------------------------------------------------------
def test_keyring_holds_exactly_the_fixture_key(host):
    keyring = host.file(KEYRING)
    assert keyring.mode == 0o644 and keyring.user == "root"
    fprs = host.check_output(f"gpg --show-keys --with-colons {KEYRING} | awk -F: '/^pub:/{{getline; print $10}}'").split()
    assert fprs == [host.file("/srv/fixture-repos/cuda-debian12/cuda-archive-keyring.fingerprint").content_string.strip()]


def test_deb822_source(host):
    text = host.file("/etc/apt/sources.list.d/dlbox-cuda.sources").content_string
    assert f"URIs: {REPO}\n" in text and "Suites: /\n" in text and f"Signed-By: {KEYRING}\n" in text
    assert "Components" not in text


def test_cuda_keyring_list_diverted_and_kept(host):
    assert host.package("cuda-keyring").is_installed
    assert not host.file(KEYRING_LIST).exists
    assert f"diversion of {KEYRING_LIST} to {DIVERTED} by dlbox-cuda-repo" in host.check_output("dpkg-divert --list")
    # its content (here as the package wrote it) is kept
    assert host.file(DIVERTED).content_string == (
        f"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] {REPO} /\n")


def test_reinstalled_cuda_keyring_brings_no_clash_back_and_apt_update_works(host):
    # side_effect.yml: dpkg -i cuda-keyring again, then apt-get update with Debian's sources and the repository
    after = record(host, "after")
    assert after["reinstall_rc"] == 0, after["reinstall_out"]
    assert not host.file(KEYRING_LIST).exists
    assert any(REPO.rstrip("/") in line and "InRelease" in line for line in after["reinstall_out"]), after["reinstall_out"]
    for line in after["reinstall_out"]:
        assert not line.startswith(("E:", "W:", "Err:")) and "Conflicting" not in line, after["reinstall_out"]


# --- apt preferences ------------------------------------------------------------------------------
def test_general_entry_puts_the_whole_repository_at_minus_one(host):
    text = host.file(BASE_PREF).content_string
    assert "Package: *\nPin: release o=NVIDIA\nPin-Priority: -1\n" in text


@pytest.mark.parametrize(("consumer", "packages"), [
    ("cuda", "cuda-toolkit-12-4 cuda-*-12-4 cuda-toolkit-12-4-config-common"),
    ("nccl", "libnccl2 libnccl-dev"),
])
def test_one_preferences_file_per_consumer(host, consumer, packages):
    text = host.file(f"/etc/apt/preferences.d/zz-dlbox-cuda-repo-{consumer}.pref").content_string
    assert f"Package: {packages}\nPin: release o=NVIDIA\nPin-Priority: 500\n" in text


@pytest.mark.parametrize(("package", "candidate", "priority"), [
    ("cuda-toolkit-12-4", "12.4.1-1", 500),           # listed by name
    ("cuda-nvcc-12-4", "12.4.131-1", 500),            # listed by a glob
    ("cuda-toolkit-12-6", "(none)", -1),              # not listed: no candidate at all
    ("cuda-nvcc-12-6", "(none)", -1),
])
def test_candidates_from_nvidias_repository(host, package, candidate, priority):
    pol = policy(host, package)
    assert pol["candidate"] == candidate, pol
    version = candidate if candidate != "(none)" else next(iter(pol["versions"]))
    assert pol["versions"][version] == priority, pol


def test_another_consumers_package_is_a_candidate(host):
    # the nccl consumer's libnccl2: every version the repository has is at 500, the newest is the candidate
    pol = policy(host, "libnccl2")
    assert pol["versions"] and set(pol["versions"].values()) == {500}, pol
    assert pol["candidate"] in pol["versions"], pol


@pytest.mark.parametrize("package", ["nvidia-smi", "libnvidia-ml1"])
def test_debian_named_package_stays_debians(host, package):
    pol = policy(host, package)
    debian = debian_version(host, package)
    assert debian.startswith("535.")
    assert pol["versions"]["580.95.05-1"] == -1, pol
    assert pol["candidate"] == debian and pol["installed"] == debian, pol


def test_without_the_preferences_nvidias_version_would_win(host):
    # the same host with apt's preferences.d ignored: the fixture's 580 is the candidate (what prepare saw)
    pol = policy(host, "nvidia-smi", "-o", "Dir::Etc::PreferencesParts=/nonexistent")
    assert pol["candidate"] == "580.95.05-1", pol
    before = record(host, "before")
    assert before["candidate"] == "580.95.05-1" and before["upgrade_replaces"] is True


def test_apt_get_upgrade_kept_debians_driver_packages(host):
    after = record(host, "after")
    assert after["upgrade_rc"] == 0, after["upgrade_out"]
    for package in ("nvidia-smi", "libnvidia-ml1"):
        assert host.package(package).version == debian_version(host, package)
    assert "580.95.05" not in host.check_output("dpkg-query -W nvidia-smi libnvidia-ml1")
    assert host.check_output("apt-get -s upgrade | grep -c '^Inst ' || true") == "0"


def test_a_listed_package_installs_from_the_repository(host):
    assert host.package("cuda-toolkit-12-4").version == "12.4.1-1"
    assert "release 12.4" in host.check_output("/usr/local/cuda-12.4/bin/nvcc --version")


# --- refusals (side_effect.yml) ----------------------------------------------------------------------
@pytest.mark.parametrize("case", ["bad_url", "short_fingerprint", "bad_consumer", "empty_packages", "catch_all_packages",
                                  "key_src_not_armored", "wrong_key", "other_source_for_the_url"])
def test_refused_naming_the_variable_and_nothing_changed(host, case):
    result = {r["name"]: r for r in record(host, "refusals")}[case]
    assert result["msg"] != "NOT REFUSED"
    assert result["expect"] in result["msg"], result["msg"]
    assert result["unchanged"] is True


# --- check mode (prepare.yml: fresh host with cuda-keyring; side_effect.yml: converged, changed request) ------
@pytest.mark.parametrize("name", ["fresh", "changed_request"])
def test_check_mode_run_succeeds_and_changes_nothing(host, name):
    run = record(host, f"check-{name}")
    assert run["rc"] == 0, "\n".join(run["tail"])
    assert run["unchanged"] is True  # apt's configuration, keyrings, diversions, packages


def test_check_mode_on_the_fresh_host_reports_the_setup(host):
    changed = record(host, "check-fresh")["changed"]
    for task in ("Write NVIDIA's key to the keyring when its fingerprint is the pinned one",
                 "Divert cuda-keyring's sources list out of apt's way",
                 "Keep every package of NVIDIA's repository out of apt's reach by default"):
        assert task in changed, changed


def test_check_mode_reports_only_the_consumer_file(host):
    changed = set(record(host, "check-changed_request")["changed"])
    assert changed == {"Allow the consumer's packages from NVIDIA's repository (cuda)"}, changed


# --- the apt_preferences rule the file names rely on (README.md, "Apt preferences") ------------------------
# Read-only: apt-cache with Dir::Etc::PreferencesParts pointed at a scratch folder holding the role's files, NVIDIA's
# nvidia-driver-pinning-<branch> from the fixture repository, and NVIDIA's cuda-repository-pin-600, in two orders.
PIN_600 = "Package: *\nPin: release l=dlbox fixture\nPin-Priority: 600\n"
DRIVER_PREF = ("Package: nvidia-open nvidia-driver nvidia-driver-cuda nvidia-kernel-open-dkms\n"
               "Pin: release o=NVIDIA\nPin-Priority: 500\n")


def scratch_policy(host, files, package):
    """apt-cache policy PACKAGE with only FILES ({name: content}) as preferences."""
    folder = host.check_output("mktemp -d /tmp/dlbox-prefs.XXXXXX")
    try:
        for name, content in files.items():
            encoded = base64.b64encode(content.encode()).decode()
            host.run_expect([0], f"echo {encoded} | base64 -d > {folder}/{name}")
        return policy(host, package, "-o", "Dir::Etc::Preferences=/nonexistent", "-o", f"Dir::Etc::PreferencesParts={folder}")
    finally:
        host.run(f"rm -rf {folder}")


@pytest.fixture(name="pinning")
def fixture_pinning(host):
    """(branch, content) of the newest-but-one nvidia-driver-pinning-<branch> the fixture repository has."""
    debs = sorted(host.check_output("ls /srv/fixture-repos/cuda-debian12/ | grep '^nvidia-driver-pinning-'").split())
    deb = debs[-2] if len(debs) > 1 else debs[-1]
    branch = deb.split("_")[0].rsplit("-", 1)[1]
    content = host.check_output(
        f"dpkg-deb --fsys-tarfile /srv/fixture-repos/cuda-debian12/{deb} | tar -xO ./etc/apt/preferences.d/nvidia-driver-pinning-{branch}")
    return branch, content + "\n"


def test_consumer_file_sorted_after_nvidias_branch_lock_keeps_the_lock(host, pinning):
    branch, content = pinning
    base = host.file(BASE_PREF).content_string
    kept = scratch_policy(host, {"00-dlbox-cuda-repo.pref": base, f"nvidia-driver-pinning-{branch}": content,
                                 "zz-dlbox-cuda-repo-nvidia_driver.pref": DRIVER_PREF}, "nvidia-open")
    assert kept["candidate"].startswith(branch + "."), kept
    assert kept["versions"][kept["candidate"]] == 1000 and max(kept["versions"].values()) == 1000, kept
    # the same files with the consumer's sorted first: its 500 wins over NVIDIA's 1000 and the newest branch comes in
    lost = scratch_policy(host, {"00-dlbox-cuda-repo.pref": base, f"nvidia-driver-pinning-{branch}": content,
                                 "a-dlbox-cuda-repo-nvidia_driver.pref": DRIVER_PREF}, "nvidia-open")
    assert not lost["candidate"].startswith(branch + ".") and set(lost["versions"].values()) == {500}, lost


def test_general_minus_one_sorted_first_beats_cuda_repository_pin_600(host):
    base = host.file(BASE_PREF).content_string
    first = scratch_policy(host, {"00-dlbox-cuda-repo.pref": base, "cuda-repository-pin-600": PIN_600}, "nvidia-smi")
    assert first["versions"]["580.95.05-1"] == -1 and first["candidate"].startswith("535."), first
    last = scratch_policy(host, {"zz-dlbox-cuda-repo.pref": base, "cuda-repository-pin-600": PIN_600}, "nvidia-smi")
    assert last["versions"]["580.95.05-1"] == 600 and last["candidate"] == "580.95.05-1", last


def test_a_glob_is_a_specific_entry_and_beats_an_earlier_general_one(host):
    base = host.file(BASE_PREF).content_string
    pol = scratch_policy(host, {"00-dlbox-cuda-repo.pref": base,
                                "zz-glob.pref": "Package: cuda-nvcc-*\nPin: release o=NVIDIA\nPin-Priority: 500\n"},
                         "cuda-nvcc-12-6")
    assert pol["candidate"] != "(none)" and pol["versions"][pol["candidate"]] == 500, pol
