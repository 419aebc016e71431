#!/usr/bin/env bash
# Host commands the test suite needs: debootstrap (test images), dpkg-deb and gpg (fixture apt
# repositories), curl (is Ubuntu's archive answering?), chromium (the fitness report's HTML, rendered headless),
# ssh and ssh-keygen (Molecule and the fleet test reach their containers over SSH).
# Installed only when missing.
set -euo pipefail
need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v dpkg-deb >/dev/null 2>&1 || need+=(dpkg)
command -v gpg >/dev/null 2>&1 || need+=(gnupg)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
{ command -v ssh && command -v ssh-keygen; } >/dev/null 2>&1 || need+=(openssh-client)
# The REAL unattended-upgrade program (its --dry-run on a local archive: test_nvidia_driver_holds_unattended_rule.py), run
# with /usr/bin/python3's python3-apt (a dependency) and python3-distro-info; its timer never runs here (no systemd).
command -v unattended-upgrade >/dev/null 2>&1 || need+=(unattended-upgrades python3-distro-info)
exec bash "$(dirname "$0")/../../tools/apt-install.sh" host-deps "${need[@]}"
