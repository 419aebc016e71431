#!/usr/bin/env bash
# Host commands the test suite needs: debootstrap (test images), dpkg-deb and gpg (fixture apt
# repositories), curl (is Ubuntu's archive answering?), chromium (the fitness report's HTML, rendered headless).
# Installed only when missing.
set -euo pipefail
need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v dpkg-deb >/dev/null 2>&1 || need+=(dpkg)
command -v gpg >/dev/null 2>&1 || need+=(gnupg)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
exec bash "$(dirname "$0")/../../tools/apt-install.sh" host-deps "${need[@]}"
