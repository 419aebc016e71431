"""dlbox.stack.cuda_repo against the FIXTURE CUDA repository (tests/aptrepo cuda-debian12 on 127.0.0.1:8089).

nvidia-smi and libnvidia-ml1 535.x are Debian 12's REAL packages; the repository's 580.95.05-1 ones under the same
names are fixtures, as are cuda-keyring, the CUDA toolkits and NCCL.
"""

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
    assert f"URIs: {REPO}" in text and "Suites: /" in text and f"Signed-By: {KEYRING}" in text
    assert "Components" not in text


def test_cuda_keyring_list_diverted_and_kept(host):
    assert host.package("cuda-keyring").is_installed
    assert not host.file(KEYRING_LIST).exists
    assert f"diversion of {KEYRING_LIST} to {DIVERTED} by dlbox-cuda-repo" in host.check_output("dpkg-divert --list")
    # its content (here as the package wrote it) is kept
    assert host.file(DIVERTED).content_string == (
        f"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] {REPO} /\n")


def test_apt_update_works_with_no_signed_by_clash(host):
    cmd = host.run("apt-get -q update 2>&1")
    assert cmd.rc == 0, cmd.stdout
    assert "Conflicting values" not in cmd.stdout and "E:" not in cmd.stdout and "W:" not in cmd.stdout, cmd.stdout


def test_reinstalled_cuda_keyring_brings_no_clash_back(host):
    after = record(host, "after")
    assert after["reinstall_rc"] == 0, after["reinstall_out"]
    assert not host.file(KEYRING_LIST).exists
    assert not any("Conflicting" in line for line in after["reinstall_out"]), after["reinstall_out"]


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
