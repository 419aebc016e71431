# shellcheck shell=bash
# What a run could change: packages, apt's files, the units' files and links, the persistence daemon, the model's state.
set -o pipefail
dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n'
find /etc/apt /etc/systemd/system /etc/modprobe.d -xdev -type f -exec sha256sum {} + 2>/dev/null | sort
find /etc/systemd/system -xdev -type l -printf '%p -> %l\n' | sort
systemctl is-enabled nvidia-persistenced.service 2>&1 || true
systemctl is-active nvidia-persistenced.service 2>&1 || true
cat /opt/dlbox-fixture-gpu/state/loaded_version /opt/dlbox-fixture-gpu/state/persistence_mode 2>/dev/null || true
