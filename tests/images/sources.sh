#!/bin/sh
# Write full apt sources for a debootstrapped Debian or Ubuntu release (deb822 format).
# $1 distro id (debian|ubuntu)  $2 codename  $3 mirror ("" = keep the one debootstrap used)
set -eu
id=$1 codename=$2 mirror=${3:-}
if [ -z "$mirror" ]; then
  mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list)
fi
mkdir -p /etc/apt/sources.list.d
case "$id" in
  debian)
    cat > /etc/apt/sources.list.d/debian.sources <<SRC
Types: deb
URIs: ${mirror}
Suites: ${codename} ${codename}-updates ${codename}-backports
Components: main contrib non-free non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: ${codename}-security
Components: main contrib non-free non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    ;;
  ubuntu)
    cat > /etc/apt/sources.list.d/ubuntu.sources <<SRC
Types: deb
URIs: ${mirror}
Suites: ${codename} ${codename}-updates ${codename}-security
Components: main restricted universe multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg
SRC
    ;;
  *) echo "sources.sh: unknown distro id '$id'" >&2; exit 2 ;;
esac
rm -f /etc/apt/sources.list
